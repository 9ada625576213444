"""Data sources: the package's zarr layout, written and read chunk by chunk.

A data set is a zarr group (zarr format 2 or 3) holding, chunked over rows with the same
row chunks::

    X              (n_samples, n_features) array, one chunk spans all the columns
    y              (n_samples,) array
    sample_weight  (n_samples,) array, optional

A sparse ``X`` is stored as a subgroup ``X`` instead, since zarr cannot store sparse chunks:
the padded-row (ELLPACK) layout, two ``(n_samples, k)`` arrays chunked over rows like ``y``,
where ``k`` is the largest number of non-zeros in a row::

    X/indices      column index of each stored entry of each row
    X/data         its value; a row with fewer than ``k`` entries is padded with 0.0
    X.attrs        {"format": "ell", "shape": [n_samples, n_features]}

Unlike the compressed-row arrays of a CSR matrix, these are rectangular and chunk over
rows exactly as ``y`` does, so every chunk is written by its own task, in parallel, and
read back as one CSR matrix.  The padding costs little when rows hold similar numbers of
non-zeros (hashed text, one-hot features) and zarr's compression shrinks it further; a
few very long rows make every row as long.

:func:`write_zarr` writes Dask, numpy or scipy.sparse arrays in this layout, one task per
row chunk, never holding the whole array; :func:`load_zarr` opens a store as Dask arrays.
Dask DataFrames (``dask.dataframe.read_parquet``, ``read_csv``) need no reader here: the
estimators take them as they are.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .compute.kernels import as_csr_or_dense

__all__ = ["load_zarr", "write_zarr", "ELL_FORMAT"]

#: The ``format`` attribute of a sparse ``X`` subgroup.
ELL_FORMAT = "ell"

#: Bytes of one row chunk of ``X`` when :func:`write_zarr` chooses the chunking.
DEFAULT_CHUNK_BYTES = 1 << 25


# reading -------------------------------------------------------------------------------------
def _ell_to_csr(indices, data, n_features):
    """One row chunk of the padded-row layout as a CSR matrix (padding dropped)."""
    rows, k = data.shape
    indptr = np.arange(0, rows * k + 1, k, dtype=np.int64)
    matrix = sp.csr_matrix(
        (data.ravel(), indices.ravel(), indptr), shape=(rows, n_features)
    )
    matrix.eliminate_zeros()
    return as_csr_or_dense(matrix)


def _read_sparse(node):
    import dask.array as da

    fmt = node.attrs.get("format")
    if fmt != ELL_FORMAT:
        raise ValueError(
            f"The group 'X' has format {fmt!r}; daskglm reads sparse X stored as {ELL_FORMAT!r}."
        )
    n_samples, n_features = (int(v) for v in node.attrs["shape"])
    indices, data = da.from_zarr(node["indices"]), da.from_zarr(node["data"])
    if indices.shape != data.shape or indices.chunks != data.chunks or indices.shape[0] != n_samples:
        raise ValueError("X/indices and X/data must have the same shape and chunks.")
    meta = sp.csr_matrix((0, 0), dtype=data.dtype)
    return da.map_blocks(
        _ell_to_csr, indices, data, n_features, chunks=(data.chunks[0], (n_features,)),
        dtype=data.dtype, meta=meta,
    )


def load_zarr(path):
    """Open a data set stored in daskglm's zarr layout as Dask arrays.

    Nothing is read until the arrays are computed; each Dask chunk is one zarr row chunk
    (a CSR matrix for a sparse ``X``), so an estimator's partitions are the store's chunks.

    Parameters
    ----------
    path : str or os.PathLike
        Directory (or any store zarr opens) of a group in the layout of this module,
        zarr format 2 or 3.

    Returns
    -------
    X : dask.array.Array of shape (n_samples, n_features)
    y : dask.array.Array of shape (n_samples,)
    sample_weight : dask.array.Array of shape (n_samples,) or None
    """
    import dask.array as da
    import zarr

    group = zarr.open_group(str(path), mode="r")
    missing = [name for name in ("X", "y") if name not in group]
    if missing:
        raise ValueError(f"{path} is not a daskglm data set: it has no {' or '.join(missing)}.")
    node = group["X"]
    X = da.from_zarr(node) if isinstance(node, zarr.Array) else _read_sparse(node)
    y = da.from_zarr(group["y"])
    sample_weight = da.from_zarr(group["sample_weight"]) if "sample_weight" in group else None
    for name, a in (("y", y), ("sample_weight", sample_weight)):
        if a is not None and a.shape != (X.shape[0],):
            raise ValueError(f"{name} has shape {a.shape}; X has {X.shape[0]} rows.")
    return X, y, sample_weight


# writing -------------------------------------------------------------------------------------
def _is_dask(a):
    return hasattr(a, "__dask_graph__")


def _default_rows(X):
    """Rows per chunk so that a chunk of ``X`` holds about :data:`DEFAULT_CHUNK_BYTES`."""
    n, d = X.shape
    if _is_dask(X):
        return max(1, max(X.chunks[0], default=1))
    row_bytes = 8 * max(1, d)
    if sp.issparse(X):
        row_bytes = 12 * max(1, math.ceil(X.nnz / max(n, 1)))
    return max(1, min(n, DEFAULT_CHUNK_BYTES // row_bytes))


def _as_dask(a, rows):
    """``a`` as a Dask array of regular row chunks of ``rows`` (all columns in one chunk)."""
    import dask.array as da

    if a is None:
        return None
    if not _is_dask(a):
        if sp.issparse(a):
            a = as_csr_or_dense(a)
            return da.from_array(a, chunks=(rows, a.shape[1]), asarray=False,
                                 meta=sp.csr_matrix((0, 0), dtype=a.dtype))
        a = np.asarray(a)
        return da.from_array(a, chunks=(rows,) + a.shape[1:])
    if any(math.isnan(c) for c in a.chunks[0]):
        a = a.compute_chunk_sizes()
    return a.rechunk({0: rows, **{axis: -1 for axis in range(1, a.ndim)}})


def _row_nnz_max(block):
    block = as_csr_or_dense(block)
    return np.array([int(np.diff(block.indptr).max(initial=0))])


def _csr_to_ell(block, k, part):
    """The ``indices`` (``part == "indices"``) or ``data`` of one chunk in the padded layout."""
    block = as_csr_or_dense(block)
    lengths = np.diff(block.indptr)
    if lengths.max(initial=0) > k:
        raise ValueError(
            f"A row has {lengths.max()} non-zeros, more than max_row_nnz={k}."
        )
    rows = np.repeat(np.arange(block.shape[0]), lengths)
    slots = np.arange(block.nnz) - np.repeat(block.indptr[:-1], lengths)
    if part == "indices":
        out = np.zeros((block.shape[0], k), dtype=_index_dtype(block.shape[1]))
        out[rows, slots] = block.indices
    else:
        out = np.zeros((block.shape[0], k), dtype=block.dtype)
        out[rows, slots] = block.data
    return out


def _index_dtype(n_features):
    return np.int32 if n_features <= np.iinfo(np.int32).max else np.int64


def _create(group, name, shape, chunks, dtype, compressor="default"):
    """A new array in ``group`` (zarr-python 3, or 2's ``create_dataset``)."""
    create_array = getattr(group, "create_array", None)
    if create_array is not None:
        options = {} if _is_default(compressor) else {"compressors": compressor}
        return create_array(name, shape=shape, chunks=chunks, dtype=dtype, **options)
    options = {} if _is_default(compressor) else {"compressor": compressor}
    return group.create_dataset(name, shape=shape, chunks=chunks, dtype=dtype, **options)


def _is_default(compressor):
    return isinstance(compressor, str) and compressor == "default"


def _open_for_writing(path, zarr_format):
    import zarr

    if zarr_format is None:
        return zarr.open_group(str(path), mode="w")
    if zarr_format not in (2, 3):
        raise ValueError(f"zarr_format must be 2, 3 or None; got {zarr_format!r}.")
    return zarr.open_group(str(path), mode="w", zarr_format=zarr_format)


def _frame_rows(a):
    """A Dask DataFrame or Series as a Dask array of its rows (chunk sizes counted on its
    own partitions: :func:`daskglm.estimators.validation.frame_as_array`); ``a`` itself
    otherwise."""
    if hasattr(a, "__dask_graph__") and hasattr(a, "dtypes"):
        from .estimators.validation import frame_as_array

        return frame_as_array(a)
    return a


def write_zarr(path, X, y, sample_weight=None, *, chunks=None, zarr_format=None,
               max_row_nnz=None, compressor="default"):
    """Write ``(X, y, sample_weight)`` to a zarr store in daskglm's layout, chunk by chunk.

    The arrays are rechunked to regular row chunks (all columns in one chunk) that match
    the store's chunks, and written by one task per chunk in a single Dask computation
    (on the cluster when a ``distributed.Client`` is active: the path must then be
    reachable from the workers).  Chunks are computed, written and released one at a
    time per worker thread, so a lazily generated array is never held whole.

    Parameters
    ----------
    path : str or os.PathLike
        Where to write; an existing store there is replaced.
    X : ndarray, scipy.sparse matrix, dask.array.Array or Dask DataFrame of shape (n_samples, n_features)
        Dense, or sparse (scipy.sparse, or a Dask array of scipy.sparse or pydata
        ``sparse`` chunks), stored in the padded-row layout of this module.  A Dask
        DataFrame (a parquet dataset's numeric columns, say) is written as its values.
    y : ndarray, dask.array.Array or Dask Series of shape (n_samples,)
    sample_weight : ndarray, dask.array.Array or Dask Series of shape (n_samples,), optional
    chunks : int, optional
        Rows per chunk.  Default: the first row chunk of a Dask ``X``, else about 32 MiB
        of ``X`` per chunk.
    zarr_format : {2, 3}, optional
        Format of the store (zarr's default, 3 with zarr-python 3, when None).
    max_row_nnz : int, optional
        Sparse ``X`` only: a known upper bound on the non-zeros of a row, the width ``k``
        of the padded layout.  Without it, ``X`` is computed once more to find the
        largest row.
    compressor : "default", None or a codec
        Compression of every array: zarr's default (Zstandard with zarr-python 3), None
        for none, or a codec zarr accepts for the store's format (``zarr.codecs`` for
        format 3, ``numcodecs`` for 2).  Uncompressed stores take more disk but are
        faster to stream: every pass over a compressed store decompresses it again.

    Returns
    -------
    str
        ``path``, as a string.
    """
    import dask.array as da

    X, y, sample_weight = (_frame_rows(a) for a in (X, y, sample_weight))
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D; got shape {X.shape}.")
    if isinstance(compressor, str) and not _is_default(compressor):
        raise ValueError(f"compressor must be 'default', None or a codec; got {compressor!r}.")
    rows = int(chunks) if chunks is not None else _default_rows(X)
    if rows < 1:
        raise ValueError(f"chunks must be a positive number of rows; got {chunks!r}.")
    X, y, sample_weight = (_as_dask(a, rows) for a in (X, y, sample_weight))
    for name, a in (("y", y), ("sample_weight", sample_weight)):
        if a is not None and a.shape != (X.shape[0],):
            raise ValueError(f"{name} has shape {a.shape}; expected ({X.shape[0]},).")
    n, d = X.shape
    group = _open_for_writing(path, zarr_format)
    group.attrs["daskglm"] = {"layout": 1}
    sources, targets = [], []
    sparse_meta = sp.issparse(X._meta) or hasattr(X._meta, "to_scipy_sparse")
    if sparse_meta:
        n_chunks = X.numblocks[0]
        k = max_row_nnz
        if k is None:
            k = int(X.map_blocks(_row_nnz_max, drop_axis=1, chunks=((1,) * n_chunks,),
                                 dtype=np.int64, meta=np.array([], dtype=np.int64)).max().compute())
        k = max(1, int(k))
        node = group.create_group("X")
        node.attrs.update({"format": ELL_FORMAT, "shape": [int(n), int(d)]})
        data_dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
        for part, dtype in (("indices", _index_dtype(d)), ("data", data_dtype)):
            sources.append(X.map_blocks(_csr_to_ell, k, part, chunks=(X.chunks[0], (k,)),
                                        dtype=dtype, meta=np.empty((0, 0), dtype=dtype)))
            targets.append(_create(node, part, (n, k), (rows, k), dtype, compressor))
    else:
        sources.append(X)
        targets.append(_create(group, "X", (n, d), (rows, max(d, 1)), X.dtype, compressor))
    for name, a in (("y", y), ("sample_weight", sample_weight)):
        if a is not None:
            sources.append(a)
            targets.append(_create(group, name, (n,), (rows,), a.dtype, compressor))
    da.store(sources, targets, lock=False, compute=True)
    return str(path)
