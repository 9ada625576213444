"""Input checks shared by ``fit``, ``predict`` and ``score``.

Cheap checks that need no pass over the data (shapes, dtypes, lengths, datetimes, numeric
targets), Dask DataFrames turned into Dask arrays, and the checks of ``score``'s inputs.
NaN and infinity in Dask input are found lazily, on the pass that uses the data
(:func:`_finite_block` here; the engine's validation round in a fit).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import _check_sample_weight, check_consistent_length, column_or_1d

from ..engine import is_dask
from ..engine.driver_passes import with_known_rows
from .table_columns import is_table_with_categories


def dask_frame_to_array(data):
    """A Dask DataFrame or Series as a Dask array with known chunk sizes, plus column names
    (also for an array this function made of a frame: ``score`` passes its converted
    ``X`` to ``predict``, which then checks the frame's names, not an array's none)."""
    names = None
    if hasattr(data, "columns"):
        names = np.asarray(data.columns, dtype=object)
    elif getattr(data, "name", None) in _FRAME_COLUMNS:
        names = _FRAME_COLUMNS[data.name]
    if hasattr(data, "to_dask_array"):
        data = frame_as_array(data)
        if names is not None:
            _FRAME_COLUMNS[data.name] = names
            while len(_FRAME_COLUMNS) > _FRAMES_REMEMBERED:
                del _FRAME_COLUMNS[next(iter(_FRAME_COLUMNS))]
    return data, names


#: The column names of the arrays :func:`dask_frame_to_array` made of Dask DataFrames, by
#: the array's name (its graph's key: the same array, whichever object holds it), the
#: last :data:`_FRAMES_REMEMBERED` of them.
_FRAME_COLUMNS: dict[str, list] = {}
_FRAMES_REMEMBERED = 64


def frame_partitions(frame):
    """A Dask DataFrame's (or Series's) partitions as they are computed (``to_delayed``,
    after Dask's optimisation).

    Rows must be counted on these partitions (:func:`partition_rows`), or on a projection
    with as many (:func:`projected_partitions`): an optimised
    ``frame.map_partitions(len)`` (which ``to_dask_array(lengths=True)`` computes) needs
    no column, so a parquet read fuses its files into fewer, larger partitions for it than
    the frame computes to.
    """
    return list(frame.to_delayed())


def projected_partitions(frame, columns):
    """The partitions of a Dask DataFrame as a pass over ``columns`` alone reads them (at
    least one column), so that a parquet or CSV source reads no other; ``frame``'s own
    (:func:`frame_partitions`) unless the projected frame has as many.

    Each projected partition then holds the rows of ``frame``'s partition: rows, levels
    and means counted on them hold for ``frame``.  A projection that Dask fuses into
    fewer partitions (a parquet read of a small share of the columns can be) is not used.
    """
    whole = frame_partitions(frame)
    if not hasattr(frame, "columns"):  # a Series: its one column
        return whole
    wanted = set(columns)
    columns = [c for c in frame.columns if c in wanted] or list(frame.columns[:1])
    if not columns or len(columns) == len(frame.columns):
        return whole
    projected = frame_partitions(frame[columns])
    return projected if len(projected) == len(whole) else whole


def partition_rows(parts, compute=None):
    """The rows of each of ``parts`` (:func:`frame_partitions`), counted in one pass (a
    ``driver_pass`` of the fit's ledger unless ``compute`` is given)."""
    import dask

    from ..engine.driver_passes import compute_pass

    return list((compute or compute_pass)(*(dask.delayed(len)(part) for part in parts)))


def frame_as_array(frame, compute=None):
    """A Dask DataFrame or Series as a Dask array of its values (``to_numpy`` of each
    partition), one row chunk per partition, its chunk sizes counted on those partitions
    (:func:`partition_rows`)."""
    import dask
    import dask.array as da

    parts = frame_partitions(frame)
    lengths = partition_rows(projected_partitions(frame, []), compute)
    dtype = _numeric_dtype(frame._meta)
    meta = frame._meta.to_numpy(dtype=dtype, na_value=np.nan if dtype else None)
    values = dask.delayed(_values, pure=True)
    blocks = [da.from_delayed(values(part, dtype), shape=(int(rows),) + meta.shape[1:],
                              dtype=meta.dtype, meta=meta[:0])
              for part, rows in zip(parts, lengths)]
    return da.concatenate(blocks, axis=0)


def _numeric_dtype(meta):
    """float64 for a pandas frame or series of numbers and booleans whose values would
    otherwise be objects (booleans beside floats, pandas' nullable ``Int64``, ``Float64``
    and ``boolean``, whose missing values become NaN); None to keep ``to_numpy``'s own."""
    import pandas as pd

    dtypes = list(meta.dtypes) if hasattr(meta, "columns") else [meta.dtype]
    numeric = all(pd.api.types.is_numeric_dtype(d) or pd.api.types.is_bool_dtype(d)
                  for d in dtypes)
    return np.float64 if numeric and meta.to_numpy().dtype == object else None


def _values(part, dtype=None):
    if dtype is None:
        return part.to_numpy()
    return part.to_numpy(dtype=dtype, na_value=np.nan)


def check_feature_names_match(estimator, names):
    """Check the column names of ``X`` (``names``: a Dask DataFrame's from
    :func:`dask_frame_to_array`, or those a later ``partial_fit`` found; None for an
    array) against the first fit's, as scikit-learn checks a data frame's: a ValueError
    when both have names and they differ (in value or order), a warning when only one of
    the two has names."""
    if names is not None and not all(isinstance(name, str) for name in names):
        names = None  # only string names are feature names, as at fit
    fitted = getattr(estimator, "feature_names_in_", None)
    estimator_name = type(estimator).__name__
    if names is None and fitted is None:
        return
    if fitted is None:
        warnings.warn(f"X has feature names, but {estimator_name} was fitted without feature "
                      "names", UserWarning, stacklevel=4)
        return
    if names is None:
        warnings.warn(f"X does not have valid feature names, but {estimator_name} was fitted "
                      "with feature names", UserWarning, stacklevel=4)
        return
    if len(names) == len(fitted) and all(names == fitted):
        return
    message = "The feature names should match those that were passed during fit.\n"
    unexpected = sorted(set(names) - set(fitted))
    missing = sorted(set(fitted) - set(names))
    if unexpected:
        message += "Feature names unseen at fit time:\n- " + "\n- ".join(unexpected) + "\n"
    if missing:
        message += "Feature names seen at fit time, yet now missing:\n- " \
            + "\n- ".join(missing) + "\n"
    if not unexpected and not missing:
        message += "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(message)


def check_has_rows(X):
    """ValueError for a Dask ``X`` known to have no rows, as scikit-learn's for an array.

    Parameters
    ----------
    X : Dask array
        Its number of rows may be unknown (NaN): no error then.

    Raises
    ------
    ValueError
    """
    if X.shape[0] == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is required."
        )


def each_with_known_rows(*arrays):
    """``arrays`` with the unknown row chunk sizes of Dask ones (after boolean indexing,
    say) computed, a pass over each such array: cross-validation's splits need the
    number of rows before the engine exists.

    Parameters
    ----------
    *arrays : Dask array, array-like or None
        Only Dask arrays are changed (:func:`~daskglm.engine.driver_passes.with_known_rows`).

    Returns
    -------
    tuple
        The arrays, in order.
    """
    return tuple(with_known_rows(a) if is_dask(a) else a for a in arrays)


def reject_datetimes(X):
    """TypeError for datetime or timedelta features, which are not numbers to fit on.

    Parameters
    ----------
    X : array-like, Dask array or data frame
        Its ``dtypes`` (a frame's) or ``dtype`` are checked; without either, nothing is.

    Raises
    ------
    TypeError
    """
    dtypes = getattr(X, "dtypes", getattr(X, "dtype", None))  # data frames have dtypes
    if dtypes is None:
        return
    for dtype in np.ravel(np.asarray(dtypes, dtype=object)):
        if getattr(dtype, "kind", "") in ("m", "M"):
            raise TypeError(
                f"X has dtype {dtype}: dates and durations are not features to fit on; "
                "convert them to numbers (e.g. seconds since an origin) first."
            )


def check_numeric_target(y, estimator):
    """ValueError for targets of strings or other non-numbers given to a regressor.

    Parameters
    ----------
    y : array-like
        The targets; an object array of numbers passes.
    estimator : estimator
        The regressor, named in the message.

    Raises
    ------
    ValueError
    """
    kind = np.dtype(y.dtype).kind if hasattr(y, "dtype") else None
    if kind in ("U", "S", "O", "M", "m") and not (kind == "O" and _all_numbers(y)):
        raise ValueError(
            f"{type(estimator).__name__} needs numeric targets y; got dtype {y.dtype}."
        )


def _all_numbers(y):
    try:
        np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def check_dask_matrix(X):
    """The checks scikit-learn makes of an array ``X`` that need no pass over Dask ``X``:
    two dimensions, real numbers (or booleans), at least one column.

    Parameters
    ----------
    X : Dask array

    Raises
    ------
    ValueError
        For an ``X`` that is not 2-D or has no columns.
    TypeError
        For an ``X`` that does not hold real numbers.
    """
    if X.ndim != 2:
        raise ValueError(
            f"Expected 2D array, got {X.ndim}D array instead. Reshape your data either "
            "using array.reshape(-1, 1) if your data has a single feature or "
            "array.reshape(1, -1) if it contains a single sample."
        )
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) or np.issubdtype(
        X.dtype, np.complexfloating
    ):
        raise TypeError(f"X must hold real numbers; got dtype {X.dtype}.")
    if X.shape[1] == 0:
        raise ValueError("Found array with 0 feature(s) while a minimum of 1 is required.")


def check_dask_vector(a, name, n_rows, numeric=True):
    """A Dask vector (``y``, ``sample_weight``, an offset) checked as scikit-learn checks
    an array's, with no pass over it.

    Parameters
    ----------
    a : Dask array
        A column vector is raveled, with a DataConversionWarning.
    name : str
        Its name, in the messages.
    n_rows : int or float
        The rows of ``X`` (NaN when unknown: the lengths are then not compared).
    numeric : bool, default=True
        Whether it must hold real numbers (booleans become float64); False for class
        labels.

    Returns
    -------
    Dask array, 1-D

    Raises
    ------
    ValueError
        For an ``a`` that is not a vector, or whose length is not ``n_rows``.
    TypeError
        For a numeric ``a`` that does not hold real numbers.
    """
    if a.ndim == 2 and a.shape[1] == 1:
        warnings.warn(
            f"A column-vector {name} was passed when a 1d array was expected; it is raveled.",
            DataConversionWarning,
            stacklevel=4,
        )
        a = a[:, 0]
    if a.ndim != 1:
        raise ValueError(f"{name} should be a 1d array, got an array of shape {a.shape} instead.")
    if a.dtype == bool and numeric:
        a = a.astype(np.float64)
    if numeric and (not np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.complexfloating)):
        raise TypeError(f"{name} must hold real numbers; got dtype {a.dtype}.")
    if not math.isnan(a.shape[0]) and not math.isnan(n_rows) and a.shape[0] != n_rows:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: [{n_rows}, {a.shape[0]}]"
        )
    return a


def _finite_block(block, name):
    """``block``, after checking it holds no NaN or infinity (a lazy check for Dask)."""
    if block.dtype.kind in "fc" and not np.isfinite(block).all():
        raise ValueError(f"Input {name} contains NaN or infinity.")
    return block


def check_score_input(X, y, sample_weight, numeric=True):
    """``(X, y, sample_weight)`` for ``score``, checked as ``fit`` checks them.

    A column-vector ``y`` is raveled (with a DataConversionWarning); lengths must agree;
    NaN or infinity in ``y`` or the weights is an error (for Dask input, raised when the
    score is computed, from the same pass).  Dask ``y`` and weights are chunked like the
    rows of a Dask ``X``; a Dask table with categorical or string columns stays a table
    (``predict`` encodes it), and its partitions' rows are counted, reading one column.
    """
    if not (is_dask(X) or is_dask(y) or is_dask(sample_weight)):
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y, sample_weight)
        if numeric or y.dtype.kind in "fc":
            _finite_block(np.asarray(y, dtype=np.float64) if numeric else y, "y")
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, y, dtype=np.float64)
        return X, y, sample_weight

    import dask.array as da

    if is_dask(X) and is_table_with_categories(X):
        rows = tuple(partition_rows(projected_partitions(X, [])))
        n_rows = sum(rows)
    else:
        X, _ = dask_frame_to_array(X) if is_dask(X) else (X, None)
        n_rows = X.shape[0]
        rows = X.chunks[0] if is_dask(X) else None

    def as_dask_vector(a, name):
        if is_dask(a):
            a, _ = dask_frame_to_array(a)
        else:
            a = np.asarray(a)
            if a.ndim == 2 and a.shape[1] == 1:
                warnings.warn(f"A column-vector {name} was passed when a 1d array was "
                              "expected; it is raveled.", DataConversionWarning, stacklevel=4)
                a = a[:, 0]
            a = da.from_array(a, chunks=-1)  # chunked like X once its length is checked
        a = check_dask_vector(a, name, n_rows, numeric=numeric or name != "y")
        if rows is not None and a.chunks[0] != rows and not math.isnan(a.shape[0]):
            a = a.rechunk({0: rows})
        return a.map_blocks(_finite_block, name, dtype=a.dtype)

    y = as_dask_vector(y, "y")
    if sample_weight is not None:
        sample_weight = as_dask_vector(sample_weight, "sample_weight")
    return X, y, sample_weight


def column_count(X):
    """The number of columns of ``X``, or None when it is not a matrix (``fit`` says so)."""
    if hasattr(X, "columns"):
        return len(X.columns)
    shape = getattr(X, "shape", None)
    shape = np.shape(X) if shape is None else shape
    return int(shape[1]) if len(shape) == 2 else None
