"""Hypothesis tests after a fit with ``inference=True``, as statsmodels' ``GLMResults``
computes them: Wald tests of linear hypotheses (:meth:`HypothesisMixin.wald_test`), one
joint Wald test per term (:meth:`HypothesisMixin.wald_test_terms`), likelihood-ratio
tests of nested models (:func:`lr_test`, :meth:`HypothesisMixin.compare_lr_test`) and
R's analysis-of-deviance table (:func:`anova`).

Everything here is arithmetic on the fitted statistics (``params_``, :meth:`cov_params`,
``llf_``, ``deviance_``): no pass over the data.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import stats

from .formulas import INTERCEPT

__all__ = ["WaldTestResult", "LRTestResult", "lr_test", "anova", "HypothesisMixin"]


@dataclass(frozen=True)
class WaldTestResult:
    """A Wald test of ``R params = q``.

    Attributes
    ----------
    statistic : float
        ``(R p - q)^T (R Sigma R^T)^+ (R p - q)``, divided by ``df`` for the F form.
    pvalue : float
    df : int
        The number of constraints (the rank of ``R Sigma R^T`` when that is less).
    df_denom : float or None
        ``df_resid_`` for the F form; None for the chi-squared form.
    distribution : {"chi2", "F"}
    """

    statistic: float
    pvalue: float
    df: int
    df_denom: float | None
    distribution: str


class LRTestResult(NamedTuple):
    """A likelihood-ratio test (statsmodels' ``CompareLRTestResult``)."""

    statistic: float
    pvalue: float
    df_diff: float


class HypothesisMixin:
    """Wald and likelihood-ratio tests for estimators fitted with ``inference=True``."""

    def wald_test(self, constraints, kind="model", use_f=False):
        """Wald test of the linear hypothesis ``R params = q`` (statsmodels'
        ``results.wald_test(constraints, scalar=True)``).

        Parameters
        ----------
        constraints : str, list of str, array-like or tuple (R, q)
            A string of constraints on the names of ``param_names_``, separated by
            commas (``"x1 = x2"``, ``"x1 + 2*x2 = 3, x3 = 0"``; statsmodels' syntax,
            parsed by patsy, or formulaic where patsy is not installed); a matrix ``R``
            of shape (n_constraints, n_params) with ``q = 0``; or a pair ``(R, q)``.
            Columns of ``R`` follow ``params_``: the intercept first.
        kind : str, default="model"
            The covariance of the parameters (any kind of :meth:`cov_params`).
        use_f : bool, default=False
            The F form (the statistic divided by the number of constraints, on
            ``df_resid_`` denominator degrees of freedom) instead of the chi-squared one
            (statsmodels' default for a GLM).

        Returns
        -------
        WaldTestResult

        Raises
        ------
        ValueError
            For a model fitted without ``inference=True``, an unknown ``kind``, or
            constraints that do not parse or do not have one column per parameter.
        """
        self._check_statistics()
        cov = self.cov_params(kind)
        _check_use_f(use_f)
        R, q = _linear_constraints(constraints, self.param_names_)
        return _wald(self.params_, cov, R, q, use_f, self.df_resid_)

    def wald_test_terms(self, kind="model", use_f=False, skip_single=False):
        """One joint Wald test per term that all its coefficients are zero
        (statsmodels' ``wald_test_terms(skip_single, scalar=True)``, glum's per-term
        ``wald_test``).

        The terms of a formula fit are the formula's (every level of ``C(region)``,
        every column of a spline basis, an interaction's columns), the intercept one of
        them; a table with categorical columns has one term per column (its levels
        together); otherwise each parameter is a term of its own.

        Parameters
        ----------
        kind : str, default="model"
            The covariance of the parameters (any kind of :meth:`cov_params`).
        use_f : bool, default=False
            F tests on ``df_resid_`` denominator degrees of freedom instead of
            chi-squared ones.
        skip_single : bool, default=False
            Leave out the terms of one column.

        Returns
        -------
        pandas.DataFrame
            Indexed by term, with columns ``statistic``, ``pvalue``, ``df_constraint``
            (and ``df_denom`` for F tests), statsmodels' names.
        """
        import pandas as pd

        self._check_statistics()
        cov = self.cov_params(kind)
        _check_use_f(use_f)
        identity = np.eye(len(self.params_))
        rows, names = [], []
        for name, columns in _terms(self).items():
            if skip_single and len(columns) == 1:
                continue
            result = _wald(self.params_, cov, identity[columns], np.zeros(len(columns)),
                           use_f, self.df_resid_)
            row = [result.statistic, result.pvalue, result.df]
            rows.append(row + [result.df_denom] if use_f else row)
            names.append(name)
        columns = ["statistic", "pvalue", "df_constraint"] + (["df_denom"] if use_f else [])
        return pd.DataFrame(rows, index=pd.Index(names, name="term"), columns=columns)

    def compare_lr_test(self, restricted):
        """Likelihood-ratio test of ``restricted``, a model nested in this one
        (:func:`lr_test`).

        Parameters
        ----------
        restricted : estimator
            Fitted with ``inference=True`` to the same rows and family, with fewer
            parameters.

        Returns
        -------
        LRTestResult
        """
        return lr_test(restricted, self)


def lr_test(restricted, full):
    """Likelihood-ratio test of a model nested in another, as statsmodels'
    ``compare_lr_test``: ``-2 (llf_r - llf_f)`` on ``df_resid_r - df_resid_f`` degrees of
    freedom, chi-squared.

    Each ``llf_`` is the model's own (statsmodels' ``llf``): for a family with a
    dispersion that is estimated, at that model's dispersion (the Gaussian with the
    identity link: the maximum-likelihood ``deviance / nobs``, so the statistic is
    ``nobs log(deviance_r / deviance_f)``, that of statsmodels' ``OLS``; Gamma and
    inverse Gaussian: Pearson's estimate of each).  For those families R's F test of
    the deviance difference is :func:`anova` with ``test="F"``.  Whether the models
    are nested is not checked: the restricted model's columns must span a subspace of
    the full model's.

    Parameters
    ----------
    restricted, full : estimators fitted with ``inference=True``
        Of the same family and link, on the same rows (the same ``nobs_``), ``full``
        with more parameters.

    Returns
    -------
    LRTestResult
        ``statistic``, ``pvalue``, ``df_diff``.

    Raises
    ------
    ValueError
        For models fitted without inference, of different families or ``nobs_``, a
        ``full`` model without more parameters, or a family without a log-likelihood
        (Tweedie powers other than 0, 2 and 3).
    """
    _check_comparable([restricted, full])
    df_diff = restricted.df_resid_ - full.df_resid_
    if not df_diff > 0:
        raise ValueError(f"The full model must have more parameters than the restricted "
                         f"one; they have {len(full.params_)} and "
                         f"{len(restricted.params_)}.")
    if np.isnan(restricted.llf_) or np.isnan(full.llf_):
        raise ValueError(f"The family {full._family()!r} has no log-likelihood in closed "
                         "form; compare the models' deviances with anova().")
    statistic = -2.0 * (restricted.llf_ - full.llf_)
    return LRTestResult(float(statistic), float(stats.chi2.sf(statistic, df_diff)),
                        float(df_diff))


def anova(*models, test="Chisq"):
    """Analysis of deviance of nested models, as R's ``anova(m1, m2, ...)`` of GLMs.

    Parameters
    ----------
    *models : estimators fitted with ``inference=True``
        Two or more, each nested in the next, of one family on the same rows.
    test : {"Chisq", "F"} or None, default="Chisq"
        ``"Chisq"``: each deviance difference over the dispersion of the largest model
        (``dispersion_``: 1 for the binomial and Poisson, Pearson's estimate otherwise),
        chi-squared on the difference in parameters; ``"F"``: that difference per
        parameter over the dispersion, F on the largest model's ``df_resid_`` (for a
        family with an estimated dispersion; for the Gaussian the statistics of
        statsmodels' ``anova_lm`` of OLS fits, whose p-values take each row's own
        ``df_resid`` instead, the same on the last row); None: no test.

    Returns
    -------
    pandas.DataFrame
        One row per model: ``df_resid``, ``deviance``, ``df_diff`` and ``deviance_diff``
        (from the previous model; NaN on the first row), and ``statistic`` and
        ``pvalue`` with a test.

    Raises
    ------
    ValueError
        For fewer than two models, models that are not comparable (as :func:`lr_test`),
        or an unknown ``test``.
    """
    import pandas as pd

    if len(models) < 2:
        raise ValueError(f"anova compares two models or more; got {len(models)}.")
    if test not in ("Chisq", "F", None):
        raise ValueError(f"test must be 'Chisq', 'F' or None; got {test!r}.")
    _check_comparable(models)
    largest = min(models, key=lambda m: m.df_resid_)
    df_resid = np.array([m.df_resid_ for m in models], dtype=float)
    deviance = np.array([m.deviance_ for m in models], dtype=float)
    df_diff = np.r_[np.nan, -np.diff(df_resid)]
    deviance_diff = np.r_[np.nan, -np.diff(deviance)]
    table = pd.DataFrame({"df_resid": df_resid, "deviance": deviance, "df_diff": df_diff,
                          "deviance_diff": deviance_diff})
    with np.errstate(invalid="ignore", divide="ignore"):
        if test == "Chisq":
            statistic = deviance_diff / largest.dispersion_
            pvalue = stats.chi2.sf(statistic, df_diff)
        elif test == "F":
            statistic = deviance_diff / df_diff / largest.dispersion_
            pvalue = stats.f.sf(statistic, df_diff, largest.df_resid_)
    if test is not None:
        table = table.assign(statistic=statistic, pvalue=pvalue)
    return table


def _check_comparable(models):
    """ValueError unless every model was fitted with inference, of one family (and
    link), on the same total sample weight."""
    for model in models:
        check = getattr(model, "_check_statistics", None)
        if check is None:
            raise TypeError(f"Models to compare are daskglm estimators; got "
                            f"{type(model).__name__}.")
        check()
    first = models[0]
    for model in models[1:]:
        if model._family() != first._family():
            raise ValueError(f"The models are of different families: "
                             f"{first._family()!r} and {model._family()!r}.")
        if not np.isclose(model.nobs_, first.nobs_, rtol=1e-12, atol=0):
            raise ValueError(f"The models were fitted to different rows: nobs_ "
                             f"{first.nobs_:g} and {model.nobs_:g}.")


def _check_use_f(use_f):
    if not isinstance(use_f, (bool, np.bool_)):
        raise ValueError(f"use_f must be True or False; got {use_f!r}.")


def _wald(params, cov, R, q, use_f, df_resid):
    """statsmodels' ``wald_test``: the pseudo-inverse of ``R Sigma R^T``, whose rank is
    the number of constraints when it is less than their count (with a warning)."""
    difference = R @ params - q
    cov_constraints = R @ cov @ R.T
    if np.isnan(cov_constraints).any():
        raise ValueError("The covariance of the constraints holds NaN.")
    n_constraints = R.shape[0]
    rank = int(np.linalg.matrix_rank(cov_constraints))
    if rank < n_constraints:
        warnings.warn(f"The covariance of the constraints does not have full rank: "
                      f"{n_constraints} constraints, rank {rank}.", stacklevel=3)
        n_constraints = rank
    statistic = float(difference @ np.linalg.pinv(cov_constraints) @ difference)
    if use_f:
        statistic /= n_constraints
        pvalue = stats.f.sf(statistic, n_constraints, df_resid)
        return WaldTestResult(statistic, float(pvalue), n_constraints, float(df_resid), "F")
    pvalue = stats.chi2.sf(statistic, n_constraints)
    return WaldTestResult(statistic, float(pvalue), n_constraints, None, "chi2")


def _linear_constraints(constraints, names):
    """``(R, q)`` of ``constraints`` on the parameters ``names``, checked."""
    k = len(names)
    if isinstance(constraints, str) or (isinstance(constraints, (list, tuple))
                                        and constraints
                                        and all(isinstance(c, str) for c in constraints)):
        text = constraints if isinstance(constraints, str) else ", ".join(constraints)
        R, q = _parsed(text, list(names))
    elif isinstance(constraints, tuple) and len(constraints) == 2:
        R = _float_array(constraints[0], "R")
        R = R[None, :] if R.ndim == 1 else R
        q = np.ravel(_float_array(constraints[1], "q"))
        if q.size == 1:
            q = np.full(R.shape[0], q[0])
    else:
        R = _float_array(constraints, "constraints")
        R = R[None, :] if R.ndim == 1 else R
        q = np.zeros(R.shape[0])
    if R.ndim != 2 or R.shape[1] != k or R.shape[0] == 0:
        raise ValueError(f"The constraint matrix must have shape (n_constraints, {k}) "
                         f"(one column per parameter: {list(names)}); got {R.shape}.")
    if q.shape != (R.shape[0],):
        raise ValueError(f"q must hold one value per constraint ({R.shape[0]}); got "
                         f"{q.shape[0]}.")
    if not (np.isfinite(R).all() and np.isfinite(q).all()):
        raise ValueError("The constraints contain NaN or infinity.")
    return R, q


def _float_array(values, name):
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numbers; got {values!r}.") from exc


def _parsed(text, names):
    """``(R, q)`` of a constraint string: patsy's parser (statsmodels' default),
    else formulaic's."""
    try:
        from patsy import DesignInfo, PatsyError
    except ImportError:
        return _parsed_by_formulaic(text, names)
    try:
        constraint = DesignInfo(names).linear_constraint(text)
    except PatsyError as exc:
        raise ValueError(f"Cannot read the constraints {text!r} on the parameters "
                         f"{names}: {exc}") from None
    return np.asarray(constraint.coefs, dtype=float), \
        np.ravel(np.asarray(constraint.constants, dtype=float))


def _parsed_by_formulaic(text, names):
    try:
        from formulaic.utils.constraints import LinearConstraints
    except ImportError:
        raise ImportError("Constraints given as text need patsy or formulaic "
                          "(pip install 'daskglm[formula]'); or pass the matrix R, or "
                          "(R, q).") from None
    try:
        constraint = LinearConstraints.from_spec(text, variable_names=names)
    except Exception as exc:  # formulaic's parser raises several types
        raise ValueError(f"Cannot read the constraints {text!r} on the parameters "
                         f"{names}: {exc}") from None
    return np.asarray(constraint.constraint_matrix, dtype=float), \
        np.ravel(np.asarray(constraint.constraint_values, dtype=float))


def _terms(estimator):
    """``{term: indices into params_}``: a formula's terms, a table's columns (a
    categorical column's levels together), or each parameter on its own."""
    names = list(estimator.param_names_)
    start = 1 if bool(getattr(estimator, "fit_intercept", False)) else 0
    built = getattr(estimator, "formula_design_", None)
    if built is not None:
        position = {str(n): start + i for i, n in enumerate(built.names)}
        if start:
            position[INTERCEPT] = 0
        terms = {}
        for term, indices in built.spec.term_indices.items():
            name = names[0] if str(term) == "1" else str(term)  # the intercept's own name
            terms[name] = [position[str(built.columns[i])] for i in indices]
        return terms
    encoding = getattr(estimator, "table_encoding_", None)
    if encoding is not None and encoding.levels:
        terms = {"intercept": [0]} if start else {}
        offset = start
        for column in encoding.numeric:
            terms[str(column)] = [offset]
            offset += 1
        for column in encoding.levels:
            count = len(encoding.kept_levels(column))
            if count:
                terms[str(column)] = list(range(offset, offset + count))
            offset += count
        return terms
    return {name: [i] for i, name in enumerate(names)}
