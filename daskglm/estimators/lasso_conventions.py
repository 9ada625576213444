"""scikit-learn's conventions of Lasso and ElasticNet that daskglm's share:
``fit(..., check_input=True)`` and ``dual_gap_``."""

from __future__ import annotations

from ..solvers.solution_gap import gap_at_solution


class CheckInputMixin:
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


class DualGapMixin:
    """``dual_gap_`` of scikit-learn's Lasso / ElasticNet: the duality gap (scikit-learn's
    normalisation) at the solution, from solvers that stop on it (``"proximal"``), else
    from one gradient round at the solution (:mod:`~daskglm.solvers.solution_gap`).
    ``tol`` bounds it as in scikit-learn: proximal gradient has converged when ``dual_gap_
    <= tol * mean_W (y - ybar)^2`` (``mean_W y^2`` without an intercept)."""

    def _record_fit(self, problem, result):
        super()._record_fit(problem, result)
        self.__dict__.pop("dual_gap_", None)
        if getattr(result, "dual_gap", None) is not None:
            self.dual_gap_ = float(result.dual_gap)

    def _fit_statistics(self, engine, problem, params, *args, **kwargs):
        super()._fit_statistics(engine, problem, params, *args, **kwargs)
        if not hasattr(self, "dual_gap_"):
            gap = gap_at_solution(problem, engine, params)
            if gap is not None:
                self.dual_gap_ = gap


def check_selection(estimator):
    """ValueError for a ``selection`` that scikit-learn's coordinate descent does not take.

    Parameters
    ----------
    estimator : estimator
        Its ``selection`` (``"cyclic"`` when it has none) must be ``"cyclic"`` or
        ``"random"``.

    Raises
    ------
    ValueError
    """
    selection = getattr(estimator, "selection", "cyclic")  # not among the CV classes' params
    if selection not in ("cyclic", "random"):
        raise ValueError(f"selection must be 'cyclic' or 'random'; got {selection!r}.")


#: The docstring of the parameters of scikit-learn's signature that change how it computes,
#: not what.
SKLEARN_ONLY_DOC = """    copy_X, precompute, random_state, selection : optional
        Accepted for scikit-learn's signature; they do not change the fit: daskglm never
        modifies ``X``, computes the Gram matrix when its solver uses one, and draws no
        random numbers (``selection`` is ``"cyclic"`` or ``"random"``: the order of
        scikit-learn's coordinate descent).
"""
