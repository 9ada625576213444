"""The regressors' shared base :class:`_RegressorGLM`: ``predict``, ``score`` (R^2 for the
Gaussian family, the fraction of deviance explained D^2 otherwise) and ``get_deviance``."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.exceptions import UndefinedMetricWarning

from ..engine import is_dask
from .base import _GLMBase
from .linear_predictors import apply_rowwise, to_float, weighted_mean
from .offsets import check_offset
from .validation import check_score_input


class _RegressorGLM(RegressorMixin, _GLMBase):
    def predict(self, X, offset=None, exposure=None):
        """Predicted mean ``inverse_link(X @ coef_ + intercept_ + offset)``.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame
        offset : array-like or Dask array of shape (n_samples,), optional
            Added to the linear predictor, as in ``fit``.
        exposure : array-like or Dask array of shape (n_samples,), optional
            For a log link: ``offset = log(exposure)``.

        Returns
        -------
        ndarray or dask.array.Array
            A lazy Dask array chunked like ``X``'s rows for Dask input, numpy otherwise.
        """
        family = self._family()
        eta = self._linear_predictor(X)
        offset = check_offset(self, offset, exposure, eta[:, None], family)
        if offset is not None:
            if is_dask(eta) and not is_dask(offset):
                import dask.array as da

                offset = da.from_array(offset, chunks=eta.chunks)
            eta = eta + offset
        return apply_rowwise(family.mean, eta)

    def score(self, X, y, sample_weight=None, offset=None, exposure=None):
        """Coefficient of determination R^2 (Gaussian) or fraction of deviance explained D^2.

        Parameters
        ----------
        X : array-like or Dask array of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        sample_weight : array-like or Dask array, optional
        offset, exposure : array-like or Dask array of shape (n_samples,), optional
            As in :meth:`predict`; the baseline is the weighted mean of ``y`` either way.

        Returns
        -------
        float
        """
        X, y, sample_weight = check_score_input(X, y, sample_weight)
        if not is_dask(y) and y.shape[0] < 2:
            warnings.warn("R^2 score is not well-defined with less than two samples.",
                          UndefinedMetricWarning, stacklevel=2)
            return float("nan")
        family = self._family()
        mu = self.predict(X, offset, exposure)
        y_mean = to_float(weighted_mean(y, sample_weight))
        if family.distribution.squared_error:
            residual = to_float(weighted_mean((y - mu) ** 2, sample_weight))
            total = to_float(weighted_mean((y - y_mean) ** 2, sample_weight))
        else:
            residual = to_float(_deviance_mean(family, y, mu, sample_weight))
            total = to_float(_deviance_mean(family, y, y_mean, sample_weight))
        if total == 0:
            return 1.0 if residual == 0 else 0.0
        return 1.0 - residual / total

    def get_deviance(self, X, y, sample_weight=None, offset=None, exposure=None):
        """Total deviance of the fitted model on ``(X, y)``: the (weighted) sum of the
        family's unit deviances, as dask-glm's and dask-ml's ``get_deviance``.

        Parameters
        ----------
        X : array-like or Dask array of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        sample_weight : array-like or Dask array, optional
        offset, exposure : array-like or Dask array of shape (n_samples,), optional
            As in :meth:`predict`.

        Returns
        -------
        float
        """
        X, y, sample_weight = check_score_input(X, y, sample_weight)
        mu = self.predict(X, offset, exposure)
        mean = to_float(_deviance_mean(self._family(), y, mu, sample_weight))
        total = y.shape[0] if sample_weight is None else to_float(sample_weight.sum())
        return mean * float(total)


def _deviance_mean(family, y, mu, weight):
    """The weighted mean deviance; targets outside the family's support are an error (in
    the pass that reads them, for Dask ``y``)."""
    if is_dask(y):
        import dask.array as da

        if not is_dask(mu):  # the null model's mean, or predictions of in-memory X
            mu = (da.full_like(y, mu, dtype=float) if np.ndim(mu) == 0
                  else da.from_array(np.asarray(mu), chunks=y.chunks))
        parts = [y, mu] + ([weight] if weight is not None else [])
        sums = da.map_blocks(_block_deviance, family, *parts, chunks=(1,), dtype=float).sum()
        total = y.shape[0] if weight is None else weight.sum()
        return sums / total
    family.distribution.check_target(y)
    total = y.shape[0] if weight is None else weight.sum()
    return family.deviance(y, np.broadcast_to(mu, y.shape), weight) / total


def _block_deviance(family, y, mu, weight=None):
    family.distribution.check_target(y)
    return np.array([family.deviance(y, mu, weight)])
