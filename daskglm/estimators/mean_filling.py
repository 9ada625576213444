"""``missing="mean"``: each missing value of dense ``X`` replaced by its column's mean,
the means found at fit (one driver pass over Dask ``X``) and kept for prediction."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..engine import is_dask
from ..engine.driver_passes import compute_pass


def filled_with_means(X, means=None):
    """``X`` with each missing value replaced by its column's mean.

    Parameters
    ----------
    X : ndarray or Dask array, dense
        ``X`` itself is never modified.
    means : array-like of shape (n_features,), optional
        The means, those of the fit for prediction; found (one pass over Dask ``X``, a
        ``driver_pass``) when None.

    Returns
    -------
    tuple
        ``(filled X, the means)``; a Dask ``X`` is filled lazily, block by block.

    Raises
    ------
    ValueError
        For sparse ``X``, or a column with no values to take a mean of.
    """
    if sp.issparse(X) or (is_dask(X) and sp.issparse(getattr(X, "_meta", None))):
        raise ValueError("missing='mean' takes dense X (or a table); sparse X stores no "
                         "missing values to fill.")
    if is_dask(X):
        if means is None:
            means = compute_pass(_nanmean(X))[0]
            _check_means(means)
        return X.map_blocks(_fill_block, np.asarray(means), dtype=X.dtype), np.asarray(means)
    X = np.asarray(X)
    if means is None:
        with np.errstate(all="ignore"):
            means = np.nanmean(np.asarray(X, dtype=np.float64), axis=0)
        _check_means(means)
    return _fill_block(X, means), np.asarray(means)


def _check_means(means):
    empty = np.flatnonzero(~np.isfinite(means))
    if empty.size:
        raise ValueError(f"Column(s) {empty.tolist()} of X have no values to take a mean of.")


def _nanmean(X):
    import dask.array as da

    with np.errstate(all="ignore"):
        return da.nanmean(X.astype(np.float64), axis=0)


def _fill_block(block, means):
    missing = np.isnan(block)
    if not missing.any():
        return block
    return np.where(missing, np.asarray(means, dtype=block.dtype), block)
