"""Prediction's side of :class:`~.base._GLMBase`: the new rows checked against the fit
and their linear predictors (block by block for Dask input, NaN and infinity found from
the predictors themselves), and the helpers of ``predict`` and ``score``."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted, validate_data

from ..backend import array_module, from_host, is_device, namespace
from ..compute.kernels import as_csr_or_dense, linear_predictor
from ..compute.summaries import all_finite
from ..engine import is_dask
from .categorical import encoded_array, is_table
from .mean_filling import filled_with_means
from .validation import (
    check_dask_matrix,
    check_feature_names_match,
    check_has_rows,
    dask_frame_to_array,
    reject_datetimes,
)


class LinearPredictorMixin:
    """The fitted model's linear predictors of new rows."""

    def _coef_vector(self):
        coef = np.ravel(dense_coef(self.coef_))
        return coef, coef.dtype.type(np.ravel(self.intercept_)[0])

    def _prediction_input(self, X):
        """``X`` checked against the fit: a Dask array in one column chunk, or in memory."""
        check_is_fitted(self)
        encoding = getattr(self, "table_encoding_", None)
        if encoding is not None:
            return self._encoded_table(X, encoding)
        built = getattr(self, "formula_design_", None)
        if built is not None:
            if not is_table(X):
                raise ValueError(f"{type(self).__name__} was fitted from a formula; predict "
                                 f"takes a table with its columns {list(built.variables)} "
                                 f"(got {type(X).__name__}).")
            return built.features(X, dtype=self._fit_dtype)
        means = getattr(self, "column_means_", None)
        if means is not None:
            X = filled_with_means(X, means)[0]
        if is_dask(X):
            X, names = dask_frame_to_array(X)
            check_feature_names_match(self, names)
            check_dask_matrix(X)
            check_has_rows(X)
            if X.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                    f"{self.n_features_in_} features as input."
                )
            return X.rechunk({1: -1}) if X.numblocks[1] != 1 else X
        reject_datetimes(X)
        return validate_data(self, X, reset=False, accept_sparse=["csr", "csc", "coo"],
                             dtype=[np.float64, np.float32])

    def _encoded_table(self, X, encoding):
        """A table like the one fitted, encoded as at fit (:mod:`.categorical`)."""
        if not (hasattr(X, "columns") and hasattr(X, "dtypes")):
            raise ValueError(f"{type(self).__name__} was fitted on a table with categorical "
                             f"columns; predict takes such a table (got {type(X).__name__}).")
        check_feature_names_match(self, np.asarray([str(c) for c in X.columns], dtype=object))
        return encoded_array(X, encoding, dtype=self._fit_dtype)

    def _linear_predictor(self, X, then=None, columns=None):
        """``X @ coef + intercept``, or ``then`` of it (``columns`` columns when ``then``
        makes a 2-D array of each block's predictor).

        For Dask input each row block is one task that computes its predictor and
        ``then`` of it where the block lives.  A 1-D result is made by ``blockwise`` with
        the blocks handed over as they are: ``map_blocks(drop_axis=1)`` would pass each
        block through a concatenation first, which copies it (twice, a sparse one).
        """
        X = self._prediction_input(X)
        coef, intercept = self._coef_vector()
        if is_dask(X):
            if X.numblocks[1] != 1:
                X = X.rechunk({1: -1})
            if columns is None:
                import dask.array as da

                return da.blockwise(_row_predictor, "i", X, "ij", coef, None, intercept, None,
                                    then, None, concatenate=False, dtype=coef.dtype,
                                    meta=_dense_meta(X, 1, coef.dtype))
            return X.map_blocks(_block_predictor, coef, intercept, then,
                                chunks=(X.chunks[0], (columns,)), dtype=coef.dtype,
                                meta=_dense_meta(X, 2, coef.dtype))
        eta = np.asarray(X @ coef).ravel() + intercept
        return eta if then is None else then(eta)

    def _linear_predictors(self, X):
        """``X @ coef_.T + intercept_``, one column per row of a 2-D ``coef_``."""
        X = self._prediction_input(X)
        coef = dense_coef(self.coef_)
        intercept = np.asarray(self.intercept_, dtype=coef.dtype)
        if is_dask(X):
            return X.map_blocks(_block_predictors, coef, intercept,
                                chunks=(X.chunks[0], (coef.shape[0],)), dtype=coef.dtype,
                                meta=_dense_meta(X, 2, coef.dtype))
        return np.asarray(X @ coef.T) + intercept


def dense_coef(coef):
    """``coef`` as an ndarray, also after ``sparsify()`` made it a sparse matrix."""
    return coef.toarray() if sp.issparse(coef) else np.asarray(coef)


def _dense_meta(X, ndim, dtype):
    """An empty dense array of the library of ``X``'s blocks (CuPy for CuPy or cupyx
    blocks, numpy otherwise): the type of the predictions of those blocks."""
    return array_module(X._meta).empty((0,) * ndim, dtype=dtype)


def apply_rowwise(fn, values):
    """``fn(values)`` in ``values``' dtype (float32 stays float32, as in scikit-learn),
    lazily block by block for a Dask array.

    Parameters
    ----------
    fn : callable
        Elementwise: ``fn(block)`` has the block's shape.
    values : ndarray or Dask array
        Predictions (linear predictors, means); a Dask array's blocks keep their own
        type (CuPy's too).

    Returns
    -------
    ndarray or Dask array
    """
    if is_dask(values):  # the blocks' own type (CuPy's too), not one inferred from fn
        return values.map_blocks(_in_dtype_of_input, fn, dtype=values.dtype,
                                 meta=values._meta)
    return _in_dtype_of_input(values, fn)


def _in_dtype_of_input(values, fn):
    result = fn(values)
    return result if result.dtype == values.dtype else result.astype(values.dtype)


def two_class_probabilities(mean, eta):
    """``[1 - p, p]`` per row, ``p = mean(eta)`` in ``eta``'s dtype: the probabilities of a
    binary classifier, as scikit-learn's ``predict_proba``."""
    p = _in_dtype_of_input(eta, mean)
    return namespace(p).stack([1.0 - p, p], axis=1)


def _product_operand(X_block):
    """``X_block`` as ``X_block @ coef`` takes it: a float CSR block as it is (a product
    needs neither sorted column indices nor summed duplicates, so its layout is not
    checked), anything else as :func:`~daskglm.compute.kernels.as_csr_or_dense` makes it."""
    if sp.issparse(X_block) and X_block.format == "csr" and X_block.dtype in _FLOATS:
        return X_block
    return as_csr_or_dense(X_block)


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _block_predictor(X_block, coef, intercept, then=None):
    """The linear predictor of one row block, or ``then`` of it; NaN or infinity in the
    block is an error, found from the predictor itself (no pass over ``X`` of its own)."""
    X_block = _product_operand(X_block)
    eta = linear_predictor(X_block, coef, False)  # a new array: the intercept goes in place
    eta += from_host(np.asarray(intercept), X_block)
    eta = eta.astype(coef.dtype, copy=False)
    if not np.isfinite(eta).all() and not all_finite(X_block):
        raise ValueError("Input X contains NaN or infinity.")
    return eta if then is None else then(eta)


def _row_predictor(X_blocks, coef, intercept, then=None):
    """:func:`_block_predictor` of a row of blocks handed over as a list, of one block
    (the columns are in one chunk)."""
    (X_block,) = X_blocks
    return _block_predictor(X_block, coef, intercept, then)


def _block_predictors(X_block, coef, intercept):
    """The linear predictors ``X_block @ coef.T + intercept`` of one row block, with the
    NaN/infinity check of :func:`_block_predictor`."""
    X_block = as_csr_or_dense(X_block)
    product = X_block @ from_host(coef.T, X_block)
    if not is_device(product):
        product = np.asarray(product)
    eta = (product + from_host(intercept, X_block)).astype(coef.dtype)
    if not np.isfinite(eta).all() and not all_finite(X_block):
        raise ValueError("Input X contains NaN or infinity.")
    return eta


def to_float(value):
    if is_dask(value):
        value = value.compute()
    return float(value)


def weighted_mean(values, weight):
    if weight is None:
        return values.mean()
    return (values * weight).sum() / weight.sum()
