"""``from_formula``: an estimator fitted to a table as a formula describes it, through
formulaic (:mod:`.formulas`)."""

from __future__ import annotations

from ..engine.driver_passes import add_to, collecting, compute_pass


class FormulaMixin:
    """The estimators' ``from_formula``."""

    @classmethod
    def from_formula(cls, formula, data, *, sample_weight=None, offset=None, exposure=None,
                     groups=None, weights_kind=None, **params):
        """Fit ``cls(**params)`` to the table ``data`` as ``formula`` describes it
        (``"claims ~ C(region) + age + np.log(density)"``, through formulaic; see
        :mod:`daskglm.estimators.formulas`).

        The formula's intercept is ``fit_intercept``; its right-hand side is evaluated per
        partition, with every categorical variable's levels found first, into CSR
        features named in ``feature_names_out_``.  ``predict`` and ``score`` then take
        tables with the formula's columns.  With ``missing="mean"`` among ``params``, the
        variables' missing values are filled before the formula is evaluated (numeric
        ones with their means, categorical ones with a level of their own).

        Parameters
        ----------
        formula : str
        data : pandas.DataFrame or dask.dataframe.DataFrame
        sample_weight, offset, exposure, groups : str, array-like or None
            As ``fit`` takes them; a string names a column of ``data`` (a list of two
            strings, two columns of ``groups``).
        weights_kind : {"frequency", "analytic", "trials"}, optional
            As ``fit`` takes it.
        **params
            The estimator's parameters (``family=``, ``alpha=``, ...); not
            ``fit_intercept``, which the formula sets.

        Returns
        -------
        estimator
            Fitted; ``formula_`` holds the formula.
        """
        from .formulas import design, name_features

        if "fit_intercept" in params:
            raise ValueError("The formula sets the intercept ('- 1' drops it); do not pass "
                             "fit_intercept.")
        estimator = cls(**params)
        missing = getattr(estimator, "missing", "error")
        with collecting() as passes:
            built = design(formula, data, full_rank=not estimator._penalised(),
                           compute=compute_pass, missing=missing)
            X = built.features(data, compute=compute_pass)
            y = data[built.target]
        estimator.set_params(fit_intercept=built.intercept)
        extra = {name: data[value] if _names_columns(value) else value
                 for name, value in (("sample_weight", sample_weight), ("offset", offset),
                                     ("exposure", exposure), ("groups", groups))
                 if value is not None}
        if weights_kind is not None:
            extra["weights_kind"] = weights_kind
        if missing == "mean":  # the design filled the variables: the features have no gaps
            estimator.set_params(missing="error")
        try:
            estimator.fit(X, y, **extra)
        finally:
            if missing == "mean":
                estimator.set_params(missing=missing)
        add_to(estimator.comm_, passes)
        estimator.formula_ = formula
        estimator.formula_design_ = built
        name_features(estimator, built)
        return estimator


def _names_columns(value):
    """Whether ``value`` names a column of a table, or a list of them."""
    return isinstance(value, str) or (isinstance(value, list) and bool(value)
                                      and all(isinstance(v, str) for v in value))
