"""The offset of a fit or a prediction, checked: :func:`check_offset`.

An offset is added to the linear predictor; an exposure is its exponential
(``offset = log(exposure)``, a log link only).  NumPy offsets are checked here, Dask
offsets by the engine's validation round (NaN) or lazily, on the pass that reads them.
"""

from __future__ import annotations

import numpy as np

from ..engine import is_dask
from ..model.links import Log
from .validation import check_dask_vector, dask_frame_to_array

__all__ = ["check_offset"]


def check_offset(estimator, offset, exposure, X, family):
    """The offset of a fit or a prediction (``log(exposure)`` for an exposure), checked.

    Parameters
    ----------
    estimator : estimator
        Named in the error for an exposure without a log link.
    offset, exposure : array-like, Dask array or Dask Series of shape (n_rows,), or None
        At most one of them.
    X : array-like or Dask array
        The rows the offset goes with (its first dimension only is read).
    family : Family
        The model's family, whose link an exposure needs to be the log.

    Returns
    -------
    ndarray, dask.array.Array or None
        The offset (None without one): numpy input checked now, Dask input checked lazily.

    Raises
    ------
    ValueError
        For both an offset and an exposure, an exposure without a log link, a NumPy
        offset of the wrong length, not finite, or an exposure not strictly positive.
    """
    if offset is not None and exposure is not None:
        raise ValueError("Pass offset or exposure, not both (offset = log(exposure)).")
    if exposure is not None:
        if not isinstance(family.link, Log):
            raise ValueError(f"exposure needs a log link (offset = log(exposure)); "
                             f"{type(estimator).__name__} has {family.link!r}.")
        name, values = "exposure", exposure
    elif offset is not None:
        name, values = "offset", offset
    else:
        return None
    n_rows = X.shape[0]
    if is_dask(values):
        values = check_dask_vector(dask_frame_to_array(values)[0], name, n_rows)
        if exposure is not None:
            import dask.array as da

            values = da.log(values.map_blocks(_positive_block, dtype=values.dtype))
        return values
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.shape != (n_rows,):
        raise ValueError(f"{name}.shape == {values.shape}, expected ({n_rows},).")
    if not np.isfinite(values).all():
        raise ValueError(f"{name} contains NaN or infinity.")
    if exposure is not None:
        _positive_block(values)
        values = np.log(values)
    return values


def _positive_block(block):
    if block.size and not np.min(block) > 0:
        raise ValueError("exposure must be strictly positive.")
    return block
