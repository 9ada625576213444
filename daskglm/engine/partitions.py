"""Partitions: how data become ``(X, y, weight)`` row blocks, in memory or from Dask chunks.

A fit with an offset has ``(X, y, weight, offset)`` blocks: the offset is cut, chunked and
scattered exactly as ``y`` is.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
import scipy.sparse as sp

from ..backend import array_module, is_device
from ..compute.blocked import warm_up
from ..compute.categorical_matrix import CategoricalMatrix, is_categorical_matrix
from ..compute.kernels import as_csr_or_dense
from ..compute.summaries import stored_bytes

#: In-memory (numpy, scipy) input is cut into row partitions of about this many bytes of
#: ``X``: the partitioning, and so every result, is the same on every machine.
PARTITION_BYTES = 32 << 20

#: Times :func:`scatter_partitions` sends partitions whose worker left during the call.
SCATTER_ATTEMPTS = 5

#: Seconds a scatter waits for its worker to be running (it was when the scheduler was
#: asked); past that its partitions go to the workers running then.  Dask's own wait is
#: its connect timeout, 30 s by default, for a worker closing or paused since.
WORKER_WAIT_SECONDS = 1.0

#: Seconds between the checks, while a scatter runs, that the scheduler still knows its
#: worker.
WATCH_SECONDS = 0.5


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
    if is_categorical_matrix(a):
        return CategoricalMatrix(_usable(a.numeric), _usable(a.columns), a.n_features)
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
    if offset is not None:
        offset = xp.asarray(offset, dtype=np.float64).ravel()
    rows = {int(a.shape[0]) for a in (y, weight, offset) if a is not None}
    if rows != {int(X.shape[0])}:
        # a chunk's declared rows (which aligned the others to it) are not its data's
        raise ValueError(f"A partition's X has {X.shape[0]} rows but its y, weights or "
                         f"offset {sorted(rows)}: a Dask array's chunk sizes do not match "
                         "the rows its chunks compute to.")
    part = (_usable(X), _usable(y), _usable(weight))
    if offset is None:
        return part
    return (*part, _usable(offset))


def _float32_copy(part):
    """The partition with a float32 copy of its float64 ``X`` (a kept copy:
    :data:`daskglm.engine.cache.KEPT_COPIES_KEY`); the partition itself when a value of
    ``X`` is beyond float32's range, so that no finite value becomes infinite."""
    X = part[0]
    if type(X) is not np.ndarray:  # the copies are of dense float64 partitions only
        return part
    if X.size and np.nanmax(np.abs(X)) > np.finfo(np.float32).max:
        return part
    return (np.ascontiguousarray(X, dtype=np.float32), *part[1:])


def float32_copies(delayed_parts, kept):
    """``delayed_parts`` with the first ``kept`` made into float32 copies (:func:`_float32_copy`)."""
    import dask

    copy = dask.delayed(_float32_copy, pure=False)
    return [copy(part) for part in delayed_parts[:kept]] + list(delayed_parts[kept:])


def _realign(part):
    """Run on a worker after a scatter: the partition with naturally aligned buffers."""
    _warm_up_for(part[0])
    return tuple(_usable(a) for a in part)


def _warm_up_for(X):
    """Start loading the fused gradient's compiled loop where dense numpy ``X`` will use it."""
    if isinstance(X, np.ndarray) and X.dtype in (np.float32, np.float64):
        warm_up(X.dtype)


def scatter_partitions(client, parts):
    """Scatter ``parts`` to the workers running now, in contiguous runs, one per worker (in
    proportion to its threads), so that each worker thread's partitions are neighbours in
    the reduction tree.

    The one place partitions are sent from the driver: when the engine is made, and again
    for the partitions lost with a worker.  The workers are asked of the scheduler at the
    call, never remembered, and a run whose worker leaves during its scatter (the scheduler
    no longer knows it, it cannot be reached, or it has not been running for
    :data:`WORKER_WAIT_SECONDS`) is scattered again, with the other partitions still to
    send, to the workers running then, at most :data:`SCATTER_ATTEMPTS` times.

    Parameters
    ----------
    client : distributed.Client
    parts : sequence of tuple
        The partitions, as :func:`_as_partition` makes them.

    Returns
    -------
    list of distributed.Future
        One per partition, in order: the partition on its worker with naturally aligned
        buffers (:func:`_realign`).

    Raises
    ------
    WorkerLeft, KeyError, OSError or TimeoutError
        Workers left during every attempt.
    """
    futures = [None] * len(parts)
    pending = list(range(len(parts)))
    for attempt in range(SCATTER_ATTEMPTS):
        failed = []
        for worker, run in _runs(pending, running_threads(client)):
            try:
                scattered = client.sync(_scatter_while_known, client,
                                        [parts[i] for i in run], worker)
            except (WorkerLeft, KeyError, OSError, TimeoutError):  # it left, or is not running
                if attempt == SCATTER_ATTEMPTS - 1:
                    raise
                failed.extend(run)
                continue
            aligned = client.map(_realign, scattered, workers=[worker], pure=False)
            for i, future in zip(run, aligned):
                futures[i] = future
        pending = failed
        if not pending:
            break
    return futures


class WorkerLeft(Exception):
    """The scheduler forgot a worker while partitions were being scattered to it."""


async def _scatter_while_known(client, items, worker):
    """``client.scatter(items, workers=[worker])``, given up (:class:`WorkerLeft`) once the
    scheduler no longer knows ``worker``.

    A scatter the scheduler takes for a worker it removes before connecting to it (the
    worker was killed) tries to connect until Dask's connect timeout, 30 s by default,
    has run out.  Cancelling the call closes its connection; the scheduler's attempt
    fails later, unheard, and registers nothing.
    """
    from . import dask_compat  # driver side only: cold workers import this module

    scatter = asyncio.ensure_future(client.scatter(
        items, workers=[worker], hash=False, timeout=WORKER_WAIT_SECONDS, asynchronous=True))
    while True:
        done, _ = await asyncio.wait([scatter], timeout=WATCH_SECONDS)
        if done:
            return scatter.result()
        if not await dask_compat.worker_known(client, worker):
            scatter.cancel()
            raise WorkerLeft(worker)


def running_threads(client):
    """``{address: threads}`` of the workers the scheduler lists as running now (not
    paused, not closing).

    With none, it waits for one as long as ``client.scatter`` would (Dask's connect
    timeout), then raises TimeoutError.
    """
    import dask
    from dask.utils import parse_timedelta

    from . import dask_compat

    timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s")
    deadline = time.monotonic() + timeout
    while True:
        nthreads = dask_compat.running_worker_threads(client)
        if nthreads:
            return nthreads
        if time.monotonic() > deadline:
            raise TimeoutError(f"No running worker to send partitions to within {timeout} s")
        time.sleep(0.1)


def _runs(indices, nthreads):
    """``indices`` cut into contiguous runs, one per worker in address order, sized in
    proportion to the workers' threads: ``[(worker, run), ...]``, empty runs left out."""
    workers = sorted(nthreads)
    shares = np.array([nthreads[w] for w in workers], dtype=float)
    bounds = np.rint(np.cumsum(shares) / shares.sum() * len(indices)).astype(int)
    starts = np.concatenate([[0], bounds[:-1]])
    return [(worker, list(indices[start:stop]))
            for worker, start, stop in zip(workers, starts, bounds) if stop > start]


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


def in_memory_parts(X, y, weight, n_partitions, offset=None):
    """In-memory data cut into partitions of contiguous rows, each in the kernels' layout.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_rows, n_features)
    y : ndarray of shape (n_rows,)
    weight, offset : ndarray of shape (n_rows,) or None
    n_partitions : int
        How many partitions; at most one per row, at least one.

    Returns
    -------
    list of tuple
        ``(X, y, weight)`` per partition, with ``offset`` after them when there is one,
        in row order, each as :func:`_as_partition` makes it.
    """
    return [
        _as_partition(X[a:b], y[a:b], _row_slice(weight, a, b), _row_slice(offset, a, b))
        for a, b in _split_rows(X.shape[0], n_partitions)
    ]


def merged_partitions(parts, n_partitions):
    """Computed partitions joined into ``n_partitions`` runs of neighbouring ones (in row
    order), each as :func:`_as_partition` makes it; ``parts`` as they are unless every
    ``X`` is a numpy array or a scipy sparse matrix.  For a solver that asks this
    process for fewer partitions than a Dask array has chunks: its result then does not
    depend on the chunks."""
    if not all(type(part[0]) is np.ndarray or sp.issparse(part[0]) for part in parts):
        return list(parts)
    merged = []
    for run in np.array_split(np.arange(len(parts)), max(1, int(n_partitions))):
        pieces = [parts[i] for i in run]
        if len(pieces) == 1:
            merged.append(pieces[0])
            continue
        X = (sp.vstack([p[0] for p in pieces], format="csr") if sp.issparse(pieces[0][0])
             else np.concatenate([p[0] for p in pieces]))
        columns = [None if pieces[0][k] is None else np.concatenate([p[k] for p in pieces])
                   for k in range(1, len(pieces[0]))]
        merged.append(_as_partition(X, *columns))
    return merged


def _align_dask(X, y, weight, offset=None):
    """Whole-row chunks of X with y, weight and offset chunked like X's rows."""
    import dask.array as da

    from .driver_passes import with_known_rows  # driver side: not on the workers' path

    X = with_known_rows(X)
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    row_chunks = X.chunks[0]

    def align(a):
        if a is None:
            return None
        if not is_dask(a):
            return da.from_array(np.asarray(a), chunks=(row_chunks,) + a.shape[1:])
        a = with_known_rows(a)
        if a.shape[0] != X.shape[0]:
            raise ValueError(
                f"Found input variables with inconsistent numbers of samples: "
                f"[{X.shape[0]}, {a.shape[0]}]"
            )
        return a.rechunk({0: row_chunks, **{i: -1 for i in range(1, a.ndim)}})

    return X, align(y), align(weight), align(offset)


def compute_beside_blocks(client, delayed_parts, X):
    """Futures of ``delayed_parts`` (one per row block of Dask ``X``), each computed on the
    worker that holds its block of ``X`` when ``X`` is persisted.

    Left to the scheduler, a fresh cluster's first partitions go where the scheduler
    balances its estimate of their duration (unknown the first time, so it guesses half
    a second), and a whole block of ``X`` could be copied to another worker for it.
    The restriction is loose: a partition whose worker has left goes to another.
    """
    from dask.core import flatten
    from distributed import Future

    blocks = list(flatten(X.__dask_keys__()))
    if len(blocks) != len(delayed_parts):  # X has column blocks: packed from several
        return client.compute(delayed_parts)
    held = [key for key in blocks if isinstance(X.dask.get(key), Future)]
    holders = client.who_has([X.dask[key] for key in held]) if held else {}
    futures = [None] * len(delayed_parts)
    by_worker = {}
    for index, key in enumerate(blocks):
        workers = holders.get(key) or ()
        by_worker.setdefault(workers[0] if workers else None, []).append(index)
    for worker, indices in by_worker.items():
        options = {} if worker is None else {"workers": [worker], "allow_other_workers": True}
        computed = client.compute([delayed_parts[i] for i in indices], **options)
        for index, future in zip(indices, computed):
            futures[index] = future
    return futures


def delayed_partitions(X, y, weight, offset=None):
    """One delayed ``(X, y, weight[, offset])`` partition per row chunk of Dask ``X``.

    Parameters
    ----------
    X : Dask array of shape (n_rows, n_features)
        Its column chunks are joined first.
    y : Dask array or array-like of shape (n_rows,)
    weight, offset : Dask array, array-like or None
        Each is chunked like the rows of ``X``.

    Returns
    -------
    tuple
        ``(partitions, n_features)``: the list of delayed partitions, each packed on the
        worker into the kernels' layout (:func:`_as_partition`), and the columns of ``X``.
    """
    import dask

    X, y, weight, offset = _align_dask(X, y, weight, offset)
    x_blocks = X.to_delayed().ravel()
    y_blocks = list(np.ravel(y.to_delayed()))

    def blocks(a):
        return [None] * len(x_blocks) if a is None else list(np.ravel(a.to_delayed()))

    pack = dask.delayed(_as_partition, pure=False)  # each engine owns its partitions
    return [pack(*blocks_i) for blocks_i in
            zip(x_blocks, y_blocks, blocks(weight), blocks(offset))], X.shape[1]
