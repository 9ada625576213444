"""Partitions: how data become ``(X, y, weight)`` row blocks, in memory or from Dask chunks.

A fit with an offset has ``(X, y, weight, offset)`` blocks: the offset is cut, chunked and
scattered exactly as ``y`` is.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..compute.backend import array_module, is_device
from ..compute.blocked import warm_up
from ..compute.kernels import as_csr_or_dense
from ..compute.summaries import stored_bytes

#: In-memory (numpy, scipy) input is cut into row partitions of about this many bytes of
#: ``X``: the partitioning, and so every result, is the same on every machine.
PARTITION_BYTES = 32 << 20


def is_dask(obj) -> bool:
    """True for Dask collections (arrays, dataframes, series)."""
    return hasattr(obj, "__dask_graph__") and hasattr(obj, "__dask_keys__")


def _usable(a):
    """``a`` as the kernels read it: C-contiguous and naturally aligned (each element at a
    multiple of its size), copied only when it is not already.

    A partition is used as it arrives: the user's array, a persisted Dask chunk or a
    deserialised buffer is not copied when it is C-contiguous and naturally aligned.  The
    kernels' results do not depend on where such a buffer starts (``tests/test_alignment.py``
    checks every kernel the engine runs at each 8-byte offset modulo 64), so no copy to a
    cache-line boundary is needed.  Buffers deserialised on a worker can lie at any byte
    offset inside a network frame; numpy hands those to no BLAS routine and reads them
    element by element, so they (alone) are copied.
    """
    if a is None or sp.issparse(a) or is_device(a):
        return a
    return np.require(a, requirements=["C", "A"])


def _as_partition(X, y, weight, offset=None):
    """Normalise one row block to the kernels' layout: ``(X, float64 y, float64 weight|None)``,
    and ``float64 offset`` after them when there is one.

    ``X`` becomes a CSR matrix (any sparse input) or a C-contiguous array.  Nothing is
    copied that is already in that layout: a float64 or float32 C-contiguous ``X`` and a
    float64 ``y`` are the partition's arrays (:func:`_usable`).
    """
    X = as_csr_or_dense(X)
    _warm_up_for(X)
    xp = array_module(X)
    y = xp.asarray(y, dtype=np.float64).ravel()
    if weight is not None:
        weight = xp.asarray(weight, dtype=np.float64).ravel()
    part = (_usable(X), _usable(y), _usable(weight))
    if offset is None:
        return part
    return (*part, _usable(xp.asarray(offset, dtype=np.float64).ravel()))


def _realign(part):
    """Run on a worker after a scatter: the partition with naturally aligned buffers."""
    _warm_up_for(part[0])
    return tuple(_usable(a) for a in part)


def _warm_up_for(X):
    """Start loading the fused gradient's compiled loop where dense numpy ``X`` will use it."""
    if isinstance(X, np.ndarray) and X.dtype in (np.float32, np.float64):
        warm_up(X.dtype)


def _scatter_in_order(client, parts):
    """Scatter ``parts`` in contiguous runs, one run per worker (in proportion to its
    threads), so that each worker thread's partitions are neighbours in the reduction tree.

    Returns futures of the partitions with naturally aligned buffers.
    """
    nthreads = client.nthreads()
    workers = sorted(nthreads)
    shares = np.array([nthreads[w] for w in workers], dtype=float)
    bounds = np.rint(np.cumsum(shares) / shares.sum() * len(parts)).astype(int)
    futures, start = [], 0
    for worker, stop in zip(workers, bounds):
        if stop > start:
            scattered = client.scatter(list(parts[start:stop]), workers=[worker], hash=False)
            futures.extend(client.map(_realign, scattered, workers=[worker], pure=False))
        start = stop
    return futures


def _split_rows(n_rows, n_partitions):
    n_partitions = max(1, min(n_partitions, n_rows))
    bounds = np.linspace(0, n_rows, n_partitions + 1).astype(int)
    return list(zip(bounds[:-1], bounds[1:]))


def _row_slice(a, start, stop):
    return None if a is None else a[start:stop]


def default_partitions(X):
    """Row partitions of in-memory ``X``: one per :data:`PARTITION_BYTES` it takes.

    It depends on the data alone, not on the machine or the cluster, so that methods
    whose result depends on the partitioning (one-shot averaging, ADMM stopped early)
    give the same answer everywhere.
    """
    return max(1, -(-stored_bytes(X) // PARTITION_BYTES))


def _in_memory_parts(X, y, weight, n_partitions, offset=None):
    return [
        _as_partition(X[a:b], y[a:b], _row_slice(weight, a, b), _row_slice(offset, a, b))
        for a, b in _split_rows(X.shape[0], n_partitions)
    ]


def _align_dask(X, y, weight, offset=None):
    """Whole-row chunks of X with y, weight and offset chunked like X's rows."""
    import dask.array as da

    if any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    row_chunks = X.chunks[0]

    def align(a):
        if a is None:
            return None
        if not is_dask(a):
            return da.from_array(np.asarray(a), chunks=(row_chunks,) + a.shape[1:])
        if any(math.isnan(c) for c in a.chunks[0]):
            a = a.compute_chunk_sizes()
        if a.shape[0] != X.shape[0]:
            raise ValueError(
                f"Found input variables with inconsistent numbers of samples: "
                f"[{X.shape[0]}, {a.shape[0]}]"
            )
        return a.rechunk({0: row_chunks, **{i: -1 for i in range(1, a.ndim)}})

    return X, align(y), align(weight), align(offset)


def _dask_partitions(X, y, weight, offset=None):
    """One delayed ``(X, y, weight[, offset])`` partition per row chunk of X."""
    import dask

    X, y, weight, offset = _align_dask(X, y, weight, offset)
    x_blocks = X.to_delayed().ravel()
    y_blocks = list(np.ravel(y.to_delayed()))

    def blocks(a):
        return [None] * len(x_blocks) if a is None else list(np.ravel(a.to_delayed()))

    pack = dask.delayed(_as_partition, pure=False)  # each engine owns its partitions
    return [pack(*blocks_i) for blocks_i in
            zip(x_blocks, y_blocks, blocks(weight), blocks(offset))], X.shape[1]
