"""Statistical inference after a fit, as statsmodels' ``GLMResults``, and the offset.

With ``inference=True`` an unpenalised fit runs ONE more round at the fitted parameters
(:func:`daskglm.fitting.inference.inference_statistics`, ``Kind.INFERENCE``): the
information matrices, the meat of the sandwich, the deviances, Pearson's chi-squared and
the sums of the log-likelihood, all from one read of ``X``.  :class:`InferenceMixin`
turns them into ``bse_``, ``pvalues_``, :meth:`~InferenceMixin.cov_params` (model-based,
HC0, HC1; HC2, HC3 and cluster-robust from one more round, :mod:`.robust`),
``deviance_``, ``null_deviance_`` (with an offset, from the null model's rounds,
:func:`daskglm.fitting.inference.null_model_with_offset`), ``aic_``, ``bic_``,
``dispersion_`` and :meth:`~InferenceMixin.summary`.  The parameters are ordered as
statsmodels orders them after ``add_constant``: the intercept first, then the
coefficients.

The mean target that starts a fit and defines the null model is
:func:`~.start_point.mean_target_and_offset`; the checks of ``offset`` and ``exposure``
are :mod:`.offsets`.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from sklearn.utils.validation import check_is_fitted

from ..fitting.inference import inference_statistics, null_model_with_offset
from ..fitting.robust import robust_statistics
from ..model.weight_kinds import log_likelihood_of_kind
from .hypothesis import HypothesisMixin
from .prediction import PredictionMixin
from .robust import (
    ROBUST_DOC,
    check_cov_options,
    covariance_kind,
    robust_covariances,
)
from .weight_kinds import observation_count

#: The ``inference`` parameter (and the robust covariances' ``cov_type`` and ``cov_kwds``,
#: :data:`~.robust.ROBUST_DOC`) of the estimators that compute statsmodels' statistics.
INFERENCE_DOC = """    inference : bool, default=False
        After an unpenalised fit, run one more round for the statistics of
        :meth:`summary`: ``bse_``, ``pvalues_``, :meth:`cov_params`, ``deviance_``,
        ``null_deviance_``, ``aic_``, ``bic_``, ``dispersion_`` (a ValueError before any
        work for a penalised fit).
""" + ROBUST_DOC

#: The fitted attributes of ``inference=True``, for the ``Attributes`` section.
INFERENCE_FITTED_DOC = """    params_, bse_, zvalues_, pvalues_ : ndarray of shape (n_params,)
        With ``inference=True``: the parameters (intercept first, then ``coef_``, as
        statsmodels orders them after ``add_constant``), their standard errors
        (of the covariance ``cov_type`` names; ``"nonrobust"``: ``dispersion_`` times the
        inverse expected information), z statistics and two-sided p-values.
    param_names_ : list of str
    deviance_, null_deviance_, pearson_chi2_, llf_, aic_, bic_ : float
        Deviance, deviance of the intercept-only model (the weighted mean target; with an
        offset, the intercept-only fit with that offset, by a few ``null_model`` rounds of
        scalar Newton steps, NaN if they do not converge), Pearson's chi-squared,
        log-likelihood (NaN where the family has none in closed form: Tweedie powers other
        than 0, 2, 3), ``-2 llf + 2 k`` and ``-2 llf + k log(nobs)``.
    dispersion_ : float
        1 for the binomial, Poisson and negative binomial; Pearson's chi-squared over
        ``df_resid_`` otherwise.
    nobs_, df_resid_ : float
        The number of observations, and it less the number of parameters: the total
        sample weight for frequency weights, the rows of positive weight for analytic
        weights and binomial trials (see ``weights_kind_``).
    weights_kind_ : {"frequency", "analytic", "trials"}
        What the statistics took the weights for (``fit(..., weights_kind=...)``).
"""


class InferenceMixin(HypothesisMixin, PredictionMixin):
    """``inference=True``: one more round after the fit, statsmodels' statistics, tests
    (:mod:`.hypothesis`) and prediction intervals (:mod:`.prediction`)."""

    def _check_inference(self, penalty):
        """ValueError (before any work) for inference on a penalised fit."""
        penalised = float(penalty.value(np.ones(2))) != 0
        if getattr(self, "inference", False) and penalised:
            raise ValueError(
                f"inference=True needs an unpenalised fit (standard errors of a penalised "
                f"fit are not those of the model); {type(self).__name__} has penalty "
                f"{penalty!r}."
            )
        if not isinstance(getattr(self, "inference", False), (bool, np.bool_)):
            raise ValueError(f"inference must be True or False; got {self.inference!r}.")
        check_cov_options(self)

    def _fit_statistics(self, engine, problem, params, means, has_offset, groups=None,
                        weights_kind="frequency"):
        """Run the inference round at ``params`` (in the engine's column scale), the
        weights taken as ``weights_kind``, and the robust round when ``cov_type`` or the
        cluster codes ``groups`` ask for it (:mod:`.robust`), and set the fitted
        statistics."""
        for name in list(vars(self)):
            if name in _STATISTICS:
                delattr(self, name)
        if not getattr(self, "inference", False):
            return
        null_mean = means[0]
        sums = inference_statistics(engine, problem, params, null_mean, weights_kind)
        scale = np.ones(problem.n_params)
        if engine.column_scale is not None:
            scale[: problem.n_features] = engine.column_scale
        order = _statsmodels_order(problem)
        robust = robust_statistics(engine, problem, params, self._cov_type(), groups,
                                   _scaled_inverse(sums.expected), weights_kind)
        self._statistics_from(sums, problem, order, scale[order], robust, weights_kind)
        if has_offset:
            self.null_deviance_ = null_model_with_offset(engine, problem.family, means)[1]

    def _statistics_from(self, sums, problem, order, scale, robust=None,
                         weights_kind="frequency"):
        """The statistics from the round's sums; matrices are inverted in the engine's
        column scale (``X * scale``, where information of columns of extreme magnitude
        stays finite) and covariances mapped back by ``scale``."""
        distribution = problem.family.distribution
        k = problem.n_params
        expected = _reorder(sums.expected, order)
        observed = _reorder(sums.observed, order)
        meat = _reorder(sums.meat, order)
        nobs = observation_count(sums, weights_kind)
        df_resid = nobs - k
        if distribution.has_unit_dispersion:
            dispersion = 1.0
        else:
            dispersion = sums.pearson / df_resid if df_resid > 0 else np.nan
        inverse = _scaled_inverse(expected)
        observed_inverse = _scaled_inverse(observed)
        covariances = {
            "model": dispersion * inverse,
            "HC0": observed_inverse @ meat @ observed_inverse,
        }
        covariances["HC1"] = covariances["HC0"] * sums.rows / max(sums.rows - k, 1)
        extra, self._inference_dfs = robust_covariances(robust, order, observed_inverse,
                                                        sums.rows, check_cov_options(self))
        covariances.update(extra)
        self._cov_kind = covariance_kind(self._cov_type())
        self._standard_errors = {kind: scale * np.sqrt(np.diag(cov))
                                 for kind, cov in covariances.items()}
        with np.errstate(under="ignore"):
            self._covariances = {kind: cov * np.outer(scale, scale)
                                 for kind, cov in covariances.items()}
        coef, intercept = self.coef_, self.intercept_
        params = np.append(np.ravel(intercept)[:1], np.ravel(coef)) if problem.fit_intercept \
            else np.ravel(coef).copy()
        self.params_ = params.astype(np.float64)
        self.param_names_ = _param_names(self, problem)
        self.bse_ = self._standard_errors[self._cov_kind]
        self.zvalues_ = self.params_ / self.bse_
        self.pvalues_ = 2.0 * stats.norm.sf(np.abs(self.zvalues_))
        self.deviance_ = sums.deviance
        self.null_deviance_ = sums.null_deviance
        self.pearson_chi2_ = sums.pearson
        self.dispersion_ = dispersion
        self.nobs_ = nobs
        self.df_resid_ = df_resid
        self.weights_kind_ = weights_kind
        self.llf_ = _log_likelihood(problem.family, sums, dispersion, nobs, weights_kind)
        self.aic_ = -2.0 * self.llf_ + 2.0 * k
        self.bic_ = -2.0 * self.llf_ + k * np.log(nobs)

    def _cov_type(self):
        return getattr(self, "cov_type", "nonrobust")

    def _check_statistics(self):
        check_is_fitted(self)
        if not hasattr(self, "bse_"):
            raise ValueError(
                f"This {type(self).__name__} was fitted without inference; fit it with "
                "inference=True (one more round after the fit) for standard errors."
            )

    def cov_params(self, kind=None):
        """Covariance matrix of ``params_`` (intercept first).

        Parameters
        ----------
        kind : {"model", "HC0", "HC1", "HC2", "HC3", "cluster"}, optional
            Default: the estimator's ``cov_type``.
            ``"model"`` (or ``"nonrobust"``): ``dispersion_`` times the inverse expected
            information;
            ``"HC0"``: the sandwich ``H^-1 M H^-1`` with ``H`` the observed information and
            ``M = sum_i w_i score_i^2 x_i x_i^T``; ``"HC1"``: HC0 times ``n / (n - k)``
            (rows ``n``, parameters ``k``).  ``"model"`` and ``"HC0"`` are statsmodels'
            ``GLM(...).fit(cov_type=...)``; statsmodels' GLM applies no ``n / (n - k)`` to
            its ``"HC1"``.  For columns of extreme magnitude, which the fit rescaled,
            entries may underflow to 0; ``bse_`` is computed in the rescaled coordinates.
            ``"HC2"`` and ``"HC3"`` (fitted with that ``cov_type``): the meat's rows
            divided by ``1 - h_i`` or its square, ``h_i`` the leverage (the hat matrix of
            the design weighted by the Fisher weights), as statsmodels' ``OLS`` and R's
            ``sandwich::vcovHC`` (statsmodels' ``GLM`` returns HC0 for them).
            ``"cluster"`` (fitted with ``groups``): the meat of the clusters' score sums,
            two-way as first + second - intersection, each times ``G / (G - 1) (n - 1)
            / (n - k)`` unless ``cov_kwds={"use_correction": False}``: statsmodels'
            ``cov_type="cluster"``.

        Returns
        -------
        ndarray of shape (n_params, n_params)
        """
        return self._covariances[self._checked_kind(kind)].copy()

    def _checked_kind(self, kind):
        self._check_statistics()
        kind = self._cov_kind if kind is None else covariance_kind(kind)
        if kind in ("HC2", "HC3", "cluster") and kind not in self._covariances:
            how = "groups=..." if kind == "cluster" else f"cov_type={kind!r}"
            raise ValueError(f"kind={kind!r} needs one more round after the fit, which "
                             f"this fit did not run: fit with {how}.")
        if kind not in self._covariances:
            raise ValueError(f"kind must be one of {sorted(self._covariances)}; got {kind!r}.")
        return kind

    def _bse(self, kind):
        kind = self._checked_kind(kind)  # checks first
        return self._standard_errors[kind]

    def _reference_distribution(self, use_t, kind=None):
        """The normal, or Student's t on ``df_resid_`` degrees of freedom (the clusters
        less one for a cluster-robust ``kind``, statsmodels' ``df_correction``)."""
        if not use_t:
            return stats.norm()
        return stats.t(self._inference_dfs.get(self._checked_kind(kind), self.df_resid_))

    def conf_int(self, alpha=0.05, kind=None, use_t=False):
        """Two-sided ``1 - alpha`` confidence intervals of ``params_``.

        Parameters
        ----------
        alpha : float, default=0.05
        kind : {"model", "HC0", "HC1", "HC2", "HC3", "cluster"}, optional
            The covariance of the standard errors (see :meth:`cov_params`).
        use_t : bool, default=False
            Student's t quantiles on ``df_resid_`` degrees of freedom instead of normal ones
            (statsmodels' ``fit(use_t=True)``; for a dispersion that was estimated).

        Returns
        -------
        ndarray of shape (n_params, 2)
        """
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1); got {alpha!r}.")
        bse = self._bse(kind)
        half = self._reference_distribution(use_t, kind).isf(alpha / 2.0) * bse
        return np.column_stack([self.params_ - half, self.params_ + half])

    @property
    def coef_table_(self):
        """The fitted coefficients by name, as a pandas DataFrame (glum's ``coef_table``,
        H2O's coefficients table).

        Its index is the intercept (``"intercept"``, when fitted; ``"Intercept"`` from a
        formula) then each feature, named
        as ``feature_names_out_`` names a table's levels (``"region[south]"``), else
        ``feature_names_in_``, else ``x1, x2, ...``.  One column ``coef``; with
        ``inference=True`` also ``std_err``, ``z``, ``p_value``, ``ci_lower`` and
        ``ci_upper`` (the model's covariance, 95%: :meth:`summary`'s defaults).  A model
        of two classes has one ``coef`` column (its one vector, of the second class); a
        model of three or more classes has one column of coefficients per class instead.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before a fit.
        """
        import pandas as pd
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "coef_")
        coef = np.asarray(self.coef_)
        intercept = np.ravel(np.asarray(self.intercept_, dtype=float))
        if coef.ndim == 2 and coef.shape[0] == 1:  # two classes: one vector, as 1-D
            coef = coef[0]
        fit_intercept = bool(getattr(self, "fit_intercept", False))
        names = _feature_names(self, coef.shape[-1])
        if fit_intercept:
            names = [_intercept_name(self)] + names
        if coef.ndim == 2:
            intercept = np.broadcast_to(intercept, (coef.shape[0],))
            values = np.column_stack([intercept, coef]) if fit_intercept else coef
            classes = getattr(self, "classes_", range(coef.shape[0]))
            return pd.DataFrame(values.T, index=names, columns=[str(c) for c in classes])
        values = np.concatenate([intercept[:1], coef]) if fit_intercept else coef
        table = pd.DataFrame({"coef": values}, index=names)
        if getattr(self, "bse_", None) is not None:
            ci = self.conf_int()
            table = table.assign(std_err=self.bse_, z=self.zvalues_, p_value=self.pvalues_,
                                 ci_lower=ci[:, 0], ci_upper=ci[:, 1])
        return table

    def summary(self, alpha=0.05, kind=None, use_t=False):
        """A table of the fit, as statsmodels' ``GLMResults.summary()``.

        Parameters
        ----------
        alpha : float, default=0.05
            Confidence intervals of level ``1 - alpha``.
        kind : {"model", "HC0", "HC1", "HC2", "HC3", "cluster"}, optional
            The covariance of the standard errors (see :meth:`cov_params`).
        use_t : bool, default=False
            t statistics and p-values on ``df_resid_`` degrees of freedom instead of z
            (statsmodels' default for GLMs is z, also when the dispersion is estimated).

        Returns
        -------
        str
        """
        bse = self._bse(kind)
        statistic = self.params_ / bse
        kind = self._checked_kind(kind)
        p = 2.0 * self._reference_distribution(use_t, kind).sf(np.abs(statistic))
        ci = self.conf_int(alpha, kind, use_t)
        family = self._family()
        width = max([len(n) for n in self.param_names_] + [9])
        lo, hi = f"[{alpha / 2:.3f}", f"{1 - alpha / 2:.3f}]"
        letter = "t" if use_t else "z"
        head = [
            f"{type(self).__name__} results",
            f"Family: {family.distribution!r}   Link: {family.link!r}   Covariance: {kind}",
            f"No. observations: {self.nobs_:g}   Df residuals: {self.df_resid_:g}   "
            f"Dispersion: {self.dispersion_:.6g}",
            f"Deviance: {self.deviance_:.6g}   Null deviance: {self.null_deviance_:.6g}   "
            f"Pearson chi2: {self.pearson_chi2_:.6g}",
            f"Log-likelihood: {self.llf_:.6g}   AIC: {self.aic_:.6g}   BIC: {self.bic_:.6g}",
        ]
        columns = (f"{'':<{width}} {'coef':>10} {'std err':>10} {letter:>8} "
                   f"{f'P>|{letter}|':>8} {lo:>10} {hi:>10}")
        rule = "=" * len(columns)
        rows = [f"{name:<{width}} {c:>10.4g} {s:>10.4g} {t:>8.3f} {q:>8.3f} {a:>10.4g} {b:>10.4g}"
                for name, c, s, t, q, (a, b)
                in zip(self.param_names_, self.params_, bse, statistic, p, ci)]
        return "\n".join([rule, *head, rule, columns, "-" * len(columns), *rows, rule])


#: The fitted attributes of inference, removed before a new fit.
_STATISTICS = ("params_", "param_names_", "bse_", "zvalues_", "pvalues_", "deviance_",
               "null_deviance_", "pearson_chi2_", "dispersion_", "nobs_", "df_resid_", "llf_",
               "aic_", "bic_", "_covariances", "_standard_errors", "_inference_dfs",
               "_cov_kind", "weights_kind_")


def _statsmodels_order(problem):
    """Indices that put the intercept (last in the solvers' vector) first."""
    k = problem.n_params
    if not problem.fit_intercept:
        return np.arange(k)
    return np.r_[k - 1, np.arange(k - 1)]


def _reorder(matrix, order):
    """A matrix of the solvers' parameters in the order of ``params_``."""
    return matrix[np.ix_(order, order)]


def _scaled_inverse(matrix):
    """The (pseudo-)inverse of a symmetric matrix, computed on its Jacobi scaling
    ``D^-1/2 matrix D^-1/2``: columns of very different magnitudes (incomes next to
    proportions) would otherwise cost the small eigenvalues their accuracy."""
    diag = np.abs(np.diag(matrix)).copy()
    diag[~(diag > 0)] = 1.0
    scale = 1.0 / np.sqrt(diag)
    scaled = matrix * np.outer(scale, scale)
    return np.linalg.pinv(scaled, hermitian=True) * np.outer(scale, scale)


def _param_names(estimator, problem):
    names = _feature_names(estimator, problem.n_features)
    return (["intercept"] + names) if problem.fit_intercept else names


def _intercept_name(estimator):
    """``"Intercept"`` for a model fitted from a formula (formulaic's and statsmodels'
    name), ``"intercept"`` otherwise."""
    return "Intercept" if getattr(estimator, "formula_design_", None) is not None \
        else "intercept"


def _feature_names(estimator, n_features):
    """The names of the model's ``n_features`` features: a table's categories expanded
    (``feature_names_out_``), else the columns (``feature_names_in_``), else ``x1, ...``."""
    names = getattr(estimator, "feature_names_out_", None)
    if names is None:
        names = getattr(estimator, "feature_names_in_", None)
    if names is None or len(names) != n_features:
        return [f"x{i + 1}" for i in range(n_features)]
    return [str(n) for n in names]


def _log_likelihood(family, sums, dispersion, nobs, weights_kind="frequency"):
    """The log-likelihood as statsmodels reports it for ``weights_kind``: at the
    maximum-likelihood dispersion ``deviance / nobs`` for the Gaussian with the identity
    link, at ``dispersion`` otherwise."""
    if np.isnan(sums.loglik).all():
        return np.nan
    slots = len(family.distribution.log_likelihood_sums(np.ones(1), np.ones(1)))
    scale = dispersion
    if family.quadratic:
        scale = sums.deviance / nobs
    return log_likelihood_of_kind(family.distribution, sums.loglik[:slots], sums.kind_sums,
                                  scale, weights_kind)
