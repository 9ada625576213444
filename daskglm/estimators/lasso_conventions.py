"""scikit-learn's conventions of Lasso and ElasticNet that daskglm's share:
``fit(..., check_input=True)`` and ``dual_gap_``."""

from __future__ import annotations


class _CheckInputMixin:
    """``fit(..., check_input=True)``, the keyword of scikit-learn's Lasso and ElasticNet.

    daskglm always checks its input (the checks need no pass over the data, and NaN or
    infinity is found in the validation round), so ``check_input=False`` changes nothing.
    """

    def fit(self, X, y, sample_weight=None, offset=None, exposure=None, *, check_input=True):
        """Fit the model, to one target or to several.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Non-negative row weights.
        offset, exposure : array-like or Dask array of shape (n_samples,), optional
            As in :meth:`daskglm.GLM.fit`; one target only.
        check_input : bool, default=True
            Accepted for scikit-learn's signature; the input is checked either way.

        Returns
        -------
        self
        """
        return super().fit(X, y, sample_weight, offset=offset, exposure=exposure)


class _DualGapMixin:
    """``dual_gap_`` of scikit-learn's Lasso / ElasticNet: the duality gap (scikit-learn's
    normalisation) at the solution, from solvers that stop on it (``"proximal"``); fits by
    other solvers have none.  ``tol`` bounds it as in scikit-learn: the fit has converged
    when ``dual_gap_ <= tol * mean_W (y - ybar)^2`` (``mean_W y^2`` without an intercept)."""

    def _record_fit(self, problem, result):
        super()._record_fit(problem, result)
        self.__dict__.pop("dual_gap_", None)
        if getattr(result, "dual_gap", None) is not None:
            self.dual_gap_ = float(result.dual_gap)
