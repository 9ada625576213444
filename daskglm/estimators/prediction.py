"""Prediction intervals after a fit with ``inference=True``: statsmodels' GLM
``get_prediction`` (:meth:`_PredictionMixin.get_prediction`, :class:`PredictionResults`).

For each row ``x_i`` the linear predictor ``eta_i = z_i^T params`` has the variance
``z_i^T Sigma z_i`` (``z_i = (1, x_i)`` with an intercept; ``Sigma`` any of
:meth:`cov_params`' kinds), computed block by block where the rows live
(:func:`daskglm.compute.prediction.linear_prediction_block`).  On the response scale the
mean is ``mu_i = g^-1(eta_i)``, its standard error ``|dmu/deta| se(eta_i)`` (the delta
method) and its confidence interval the link-scale interval mapped by ``g^-1`` (so it
stays in the mean's range: probabilities in ``(0, 1)``), as statsmodels computes them.
Dask rows give lazy Dask results; nothing is computed until asked for.
"""

from __future__ import annotations

import numpy as np

from ..compute.prediction import linear_prediction_block
from ..engine import is_dask
from .offsets import check_offset

__all__ = ["PredictionResults"]

#: The columns of :meth:`PredictionResults.summary_frame`, by scale (statsmodels' names:
#: those of ``get_prediction()`` for the mean, of ``get_prediction(which="linear")`` for
#: the linear predictor).
_COLUMNS = {"mean": ["mean", "mean_se", "mean_ci_lower", "mean_ci_upper"],
            "linear": ["predicted", "se", "ci_lower", "ci_upper"]}


class PredictionResults:
    """Predictions with standard errors and confidence intervals, on the response
    (``which="mean"``) or link (``which="linear"``) scale.

    Made by :meth:`get_prediction`.  Arrays are numpy for in-memory rows, lazy Dask
    arrays for Dask rows (chunked like them).

    Attributes
    ----------
    predicted_linear, se_linear : ndarray or dask.array.Array of shape (n_rows,)
        The linear predictor (offset included) and its standard error.
    predicted_mean, se_mean : ndarray or dask.array.Array of shape (n_rows,)
        The mean ``g^-1(eta)`` and its standard error (delta method).
    link : daskglm.Link
    distribution : scipy.stats distribution
        The normal, or Student's t on ``df_resid_`` degrees of freedom (``use_t=True``).
    row_labels : pandas.Index, Dask index or None
        The rows' index, for pandas and Dask DataFrames.
    """

    def __init__(self, predicted_linear, se_linear, link, distribution, row_labels=None):
        self.predicted_linear, self.se_linear = predicted_linear, se_linear
        self.link, self.distribution, self.row_labels = link, distribution, row_labels

    @property
    def predicted_mean(self):
        return _elementwise(self.link.inverse, self.predicted_linear)

    @property
    def se_mean(self):
        return _elementwise(_mean_se, self.predicted_linear, self.se_linear, self.link)

    def conf_int(self, alpha=0.05, which="mean"):
        """Two-sided ``1 - alpha`` confidence intervals of the predictions.

        Parameters
        ----------
        alpha : float, default=0.05
        which : {"mean", "linear"}, default="mean"
            On the response scale: the link-scale interval mapped by the inverse link,
            its ends in increasing order (statsmodels leaves them reversed for a
            decreasing link, such as the inverse); on the link scale: ``eta -/+ q se``.

        Returns
        -------
        ndarray or dask.array.Array of shape (n_rows, 2)
        """
        return self._table(alpha, which)[:, 2:]

    def summary_frame(self, alpha=0.05, which="mean"):
        """The predictions, their standard errors and ``1 - alpha`` confidence intervals.

        Parameters
        ----------
        alpha : float, default=0.05
        which : {"mean", "linear"}, default="mean"
            ``"mean"``: columns ``mean, mean_se, mean_ci_lower, mean_ci_upper`` on the
            response scale (statsmodels' ``get_prediction().summary_frame()``);
            ``"linear"``: columns ``predicted, se, ci_lower, ci_upper`` of the linear
            predictor (statsmodels' ``get_prediction(which="linear")``).

        Returns
        -------
        pandas.DataFrame or dask.dataframe.DataFrame
            Indexed as the rows were (pandas and Dask DataFrames); a lazy Dask DataFrame
            for Dask rows.
        """
        table = self._table(alpha, which)
        columns = _COLUMNS[which]
        if is_dask(table):
            import dask.dataframe as dd

            index = self.row_labels
            if index is not None and index.npartitions != table.numblocks[0]:
                index = None
            return dd.from_dask_array(table, columns=columns, index=index)
        import pandas as pd

        return pd.DataFrame(table, columns=columns, index=self.row_labels)

    def _table(self, alpha, which):
        if which not in _COLUMNS:
            raise ValueError(f"which must be 'mean' or 'linear'; got {which!r}.")
        if not (isinstance(alpha, (float, int, np.floating)) and 0 < alpha < 1):
            raise ValueError(f"alpha must be in (0, 1); got {alpha!r}.")
        quantile = float(self.distribution.isf(alpha / 2.0))
        eta, se = self.predicted_linear, self.se_linear
        if is_dask(eta):
            return eta.map_blocks(_table_block, se, self.link, quantile, which, new_axis=1,
                                  chunks=(eta.chunks[0], (4,)), dtype=np.float64,
                                  meta=np.empty((0, 0)))
        return _table_block(eta, se, self.link, quantile, which)


class _PredictionMixin:
    """:meth:`get_prediction`, for estimators fitted with ``inference=True``."""

    def get_prediction(self, X, offset=None, exposure=None, kind="model", use_t=False):
        """Predictions with standard errors and confidence intervals, as statsmodels'
        ``GLMResults.get_prediction``.

        Parameters
        ----------
        X : array-like, sparse matrix, pandas DataFrame, Dask array or Dask DataFrame
            Rows as :meth:`predict` takes them (a table like the one fitted for a table
            or formula fit).
        offset, exposure : array-like or Dask array of shape (n_rows,), optional
            Added to the linear predictor, as in :meth:`predict`.
        kind : str, default="model"
            The covariance of the parameters (any kind of :meth:`cov_params`).
        use_t : bool, default=False
            Student's t quantiles on ``df_resid_`` degrees of freedom instead of normal
            ones.

        Returns
        -------
        PredictionResults
            ``summary_frame(alpha)`` gives statsmodels' table; numpy and pandas rows give
            numpy results (pandas keep their index), Dask rows lazy Dask results, whose
            rows are computed where they live.

        Raises
        ------
        ValueError
            Before any work, for a model fitted without ``inference=True``, an unknown
            ``kind``, or an offset that does not fit ``X``.
        """
        self._check_statistics()
        cov = self.cov_params(kind)
        if not isinstance(use_t, (bool, np.bool_)):
            raise ValueError(f"use_t must be True or False; got {use_t!r}.")
        family = self._family()
        row_labels = _row_labels(X)
        features = self._prediction_input(X)
        fit_intercept = bool(getattr(self, "fit_intercept", False))
        if is_dask(features):
            stacked = features.map_blocks(linear_prediction_block, self.params_, cov,
                                          fit_intercept, chunks=(features.chunks[0], (2,)),
                                          dtype=np.float64, meta=np.empty((0, 0)))
        else:
            stacked = linear_prediction_block(features, self.params_, cov, fit_intercept)
        eta, variance = stacked[:, 0], stacked[:, 1]
        offset = check_offset(self, offset, exposure, stacked, family)
        if offset is not None:
            if is_dask(eta) and not is_dask(offset):
                import dask.array as da

                offset = da.from_array(offset, chunks=eta.chunks)
            elif is_dask(eta) and not np.isnan(offset.shape[0]):
                offset = offset.rechunk(eta.chunks)  # keeps the rows' blocks
            eta = eta + offset
        se = _elementwise(np.sqrt, variance)
        return PredictionResults(eta, se, family.link, self._reference_distribution(use_t),
                                 row_labels)


def _row_labels(X):
    """The index of a pandas or Dask DataFrame; None for arrays."""
    return X.index if hasattr(X, "columns") and hasattr(X, "index") else None


def _elementwise(function, values, *args):
    if is_dask(values):
        return values.map_blocks(function, *args, dtype=np.float64, meta=np.empty((0,)))
    return function(values, *args)


def _mean_se(eta, se, link):
    return np.abs(np.asarray(link.inverse_derivative(eta), dtype=np.float64)) * se


def _table_block(eta, se, link, quantile, which):
    """``(prediction, se, lower, upper)`` of one block of rows, as columns."""
    lower, upper = eta - quantile * se, eta + quantile * se
    if which == "linear":
        return np.column_stack([eta, se, lower, upper])
    mean = np.asarray(link.inverse(eta), dtype=np.float64)
    ends = np.asarray(link.inverse(lower), dtype=np.float64), \
        np.asarray(link.inverse(upper), dtype=np.float64)
    return np.column_stack([mean, _mean_se(eta, se, link), np.minimum(*ends),
                            np.maximum(*ends)])
