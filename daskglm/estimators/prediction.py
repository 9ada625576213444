"""Prediction intervals after a fit with ``inference=True``: statsmodels' GLM
``get_prediction`` (:meth:`PredictionMixin.get_prediction`, :class:`PredictionResults`).

For each row ``x_i`` the linear predictor ``eta_i = z_i^T params`` has the variance
``z_i^T Sigma z_i`` (``z_i = (1, x_i)`` with an intercept; ``Sigma`` any of
:meth:`cov_params`' kinds), computed block by block where the rows live
(:func:`daskglm.compute.prediction.linear_prediction_block`).  On the response scale the
mean is ``mu_i = g^-1(eta_i)``, its standard error ``|dmu/deta| se(eta_i)`` (the delta
method) and its confidence interval the link-scale interval mapped by ``g^-1`` (so it
stays in the mean's range: probabilities in ``(0, 1)``), as statsmodels computes them.
Dask rows give lazy Dask results; nothing is computed until asked for, not even the rows
of a Dask DataFrame's partitions: each partition is checked and encoded where it lives, as
a pandas frame of its rows would be in memory (:func:`_frame_predictions`), and an offset
is cut as the rows are once they are computed (:func:`_offset_like`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..compute.prediction import linear_prediction_block
from ..engine import is_dask
from .offsets import check_offset
from .validation import check_feature_names_match

__all__ = ["PredictionResults", "PredictionMixin"]

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


class PredictionMixin:
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
        fit_intercept = bool(getattr(self, "fit_intercept", False))
        if is_dask(X) and hasattr(X, "columns"):
            stacked, row_labels = _frame_predictions(self, X, cov, fit_intercept)
        else:
            features = self._prediction_input(X)
            if is_dask(features):
                stacked = features.map_blocks(linear_prediction_block, self.params_, cov,
                                              fit_intercept,
                                              chunks=(features.chunks[0], (2,)),
                                              dtype=np.float64, meta=np.empty((0, 0)))
            else:
                stacked = linear_prediction_block(features, self.params_, cov, fit_intercept)
        eta, variance = stacked[:, 0], stacked[:, 1]
        offset = _checked_offset(self, offset, exposure, stacked, family)
        if offset is not None:
            if is_dask(eta):
                offset = _offset_like(offset, eta)
            eta = eta + offset
        se = _elementwise(np.sqrt, variance)
        return PredictionResults(eta, se, family.link, self._reference_distribution(use_t),
                                 row_labels)


def _frame_predictions(estimator, frame, cov, fit_intercept):
    """``(stacked, index)`` of a Dask DataFrame's rows: their linear predictors and
    variances as a lazy Dask array of shape (rows, 2), one chunk of unknown size per
    partition (no row is counted), and the rows' index.

    The columns are checked before any work, as a pandas frame's would be (names, count,
    types; the columns a formula reads); each partition is then made into features where
    it lives, as in memory (:meth:`_prediction_input`)."""
    import dask
    import pandas as pd

    built = getattr(estimator, "formula_design_", None)
    if built is not None:
        missing = [name for name in built.variables if name not in frame.columns]
        if missing:
            raise ValueError(f"X lacks the columns {missing} of the formula fitted.")
    elif getattr(estimator, "table_encoding_", None) is not None:
        check_feature_names_match(estimator, np.asarray([str(c) for c in frame.columns],
                                                         dtype=object))
    else:
        estimator._prediction_input(frame._meta_nonempty)
    meta = pd.DataFrame({"eta": np.empty(0), "variance": np.empty(0)},
                        index=frame._meta.index[:0])
    predictions = frame.map_partitions(
        _partition_predictions, dask.delayed(estimator, pure=False), cov, fit_intercept,
        meta=meta)
    return predictions.to_dask_array(), predictions.index


def _partition_predictions(part, estimator, cov, fit_intercept):
    """The linear predictors and variances of one pandas partition, indexed as it is."""
    import pandas as pd

    if len(part) == 0:
        stacked = np.empty((0, 2))
    else:
        with warnings.catch_warnings():  # checked on the whole frame's columns already
            warnings.filterwarnings("ignore", message=".*feature names", category=UserWarning)
            features = estimator._prediction_input(part)
        stacked = linear_prediction_block(features, estimator.params_, cov, fit_intercept)
    return pd.DataFrame(stacked, columns=["eta", "variance"], index=part.index)


def _checked_offset(estimator, offset, exposure, stacked, family):
    """:func:`~.offsets.check_offset` of the predictions' rows ``stacked``, nothing
    computed: a Dask Series or DataFrame taken as a Dask array of its partitions; where the
    rows are not counted (a Dask DataFrame's), an in-memory offset's length is checked
    when they are (:func:`_offset_like`)."""
    if is_dask(offset) and hasattr(offset, "to_dask_array"):
        offset = offset.to_dask_array()
    if is_dask(exposure) and hasattr(exposure, "to_dask_array"):
        exposure = exposure.to_dask_array()
    given = offset if exposure is None else exposure
    rows_of = stacked
    if given is not None and not is_dask(given) and math.isnan(stacked.shape[0]):
        rows_of = np.empty((np.shape(given)[0], 0))
    return check_offset(estimator, offset, exposure, rows_of, family)


def _offset_like(offset, eta):
    """``offset`` (numpy or Dask, one value per row) as a Dask array chunked as the
    linear predictors ``eta``, lazily: rechunked when both chunk sizes are known, taken
    block by block when the blocks match, else cut by the rows of ``eta``'s blocks as
    they are computed; a ValueError then when the numbers of rows differ."""
    import dask
    import dask.array as da

    known = not any(math.isnan(size) for size in eta.chunks[0])
    if is_dask(offset):
        if known and not math.isnan(offset.shape[0]):
            return offset.rechunk(eta.chunks)  # keeps the rows' blocks
        if offset.numblocks[0] == eta.numblocks[0]:
            return offset.map_blocks(_same_rows, eta, dtype=np.float64)
        offset = dask.delayed(np.concatenate)(list(offset.to_delayed().ravel()))
    elif known:
        return da.from_array(offset, chunks=eta.chunks)
    else:
        offset = dask.delayed(offset)
    blocks = list(eta.to_delayed().ravel())
    start, pieces = 0, []
    for i, block in enumerate(blocks):
        piece = dask.delayed(_rows_from)(offset, start, block, i == len(blocks) - 1)
        pieces.append(da.from_delayed(piece, shape=(np.nan,), dtype=np.float64))
        start = dask.delayed(_after)(start, block)
    return da.concatenate(pieces)


def _same_rows(offset, eta):
    if offset.shape[0] != eta.shape[0]:
        raise ValueError(f"A block of the offset has {offset.shape[0]} rows; its rows of X "
                         f"{eta.shape[0]}.")
    return offset


def _rows_from(offset, start, block, last):
    """The offset of the rows of ``block``, the rows from ``start`` on."""
    stop = start + block.shape[0]
    if stop > offset.shape[0] or (last and stop != offset.shape[0]):
        raise ValueError(f"The offset has {offset.shape[0]} rows; X has "
                         f"{stop if last else 'more'}.")
    return np.asarray(offset[start:stop], dtype=np.float64)


def _after(start, block):
    return start + block.shape[0]


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
