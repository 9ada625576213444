"""Building engines: partition, persist (or stream) and validate a data set."""

from __future__ import annotations

from ..accounting.ledger import CommReport
from .cache import choose_cache
from .distributed import DistributedEngine, active_client
from .local import LocalEngine, StreamingLocalEngine
from .partitions import (
    compute_beside_blocks,
    default_partitions,
    delayed_partitions,
    float32_copies,
    in_memory_parts,
    is_dask,
    merged_partitions,
    scatter_partitions,
)
from .streaming import StreamingDistributedEngine
from .topologies import check_topology


def _keep_leading(delayed_parts, kept, client):
    """The partitions, the first ``kept`` computed and kept in memory (futures on the
    workers, or tuples in this process), the others still delayed (read every round)."""
    if not kept:
        return list(delayed_parts)
    if client is None:
        import dask

        leading = list(dask.compute(*delayed_parts[:kept], scheduler="threads"))
    else:
        leading = client.compute(delayed_parts[:kept])
    return leading + list(delayed_parts[kept:])


def make_engine(X, y, sample_weight=None, *, family, client="auto", n_partitions=None,
                split_every=8, group_partitions=True, cache="memory", labels=False,
                rescale=False, offset=None, topology="tree", first=None, sample_rows=True):
    """Partition, persist and validate ``(X, y, sample_weight)``; return an engine.

    Parameters
    ----------
    X : ndarray, scipy.sparse matrix or dask.array.Array of shape (n_samples, n_features)
    y : ndarray or dask.array.Array of shape (n_samples,)
    sample_weight : ndarray, dask.array.Array or None
    family : Family
        Used to check the targets in the validation round.
    client : distributed.Client, None or "auto"
        Where to run: ``"auto"`` uses the active client if there is one and this process
        otherwise; ``None`` forces the in-process engine.
    n_partitions : int, optional
        Row partitions for in-memory input (default: one per worker thread).  A Dask
        array keeps its own row chunks, but in this process fewer are taken by joining
        neighbouring chunks once computed (:func:`merged_partitions`), where a solver
        asks for fewer.
    split_every : int
        Fan-in of the reduction tree.
    group_partitions : bool
        On a cluster, run all the partitions one worker thread holds in one task per
        round (one task per thread instead of one per partition: less scheduling per
        round); False for one task per partition.
    cache : {"memory", "none", "auto"}
        ``"memory"`` persists the partitions once (on the workers, or in this process);
        ``"none"`` reads them from the source of the Dask arrays in every round, with
        memory bounded by about one partition per thread; ``"auto"`` persists when the
        data take at most half of the free memory, and otherwise persists the leading
        partitions that fit there and reads the others in every round (``"partial"``,
        :func:`choose_cache`), keeping float32 copies of a float64 ``X`` where Dask's
        config key ``daskglm.kept-copies`` is ``"float32"``.  In-memory input is always
        ``"memory"``.
    labels : bool
        Collect the distinct target values (``engine.labels``) instead of checking the
        targets against ``family``: for class labels, encoded afterwards with
        :meth:`Engine.relabel`.
    rescale : bool
        Rescale columns of ``X`` too large or too small for float64 products by powers of
        two (``engine.column_scale``) instead of raising ValueError; for problems whose
        solution does not depend on column scales (no penalty).
    offset : ndarray, dask.array.Array or None
        A known term added to every row's linear predictor; it travels with the rows,
        as the fourth item of each partition.
    topology : {"tree", "server", "ring"}
        How the tree rounds of a cluster sum their partials
        (:mod:`daskglm.engine.topologies`): the fixed-order tree, a central server, or a
        ring allreduce.  In-process engines, and the streaming ones, always use the tree.
    first : FirstEvaluation, optional
        A solver's first evaluation, run in the validation round
        (:meth:`Engine.validate`); the solver takes its result from the engine.
    sample_rows : bool
        Whether the validation round takes a sample of the rows' products (for the
        solvers that decorrelate the columns with it, :meth:`Engine.validate`).

    Returns
    -------
    Engine
        Validated: ``n_samples`` and ``sum_weight`` are set.
    """
    check_topology(topology)
    if client == "auto":
        client = active_client()
    ledger = CommReport()
    dask_input = any(is_dask(a) for a in (X, y, sample_weight, offset))
    choice = choose_cache(cache, X, y, sample_weight, client)
    policy, reason, kept = choice.policy, choice.reason, choice.kept
    if choice.float32:
        ledger.note_choice("kept copies", "float32", reason)
    if dask_input and not is_dask(X):
        import dask.array as da

        n_partitions = n_partitions or default_partitions(X)
        X = da.from_array(X, chunks=(max(1, -(-X.shape[0] // n_partitions)), -1))

    def dask_partitions():
        delayed_parts, n_features = delayed_partitions(X, y, sample_weight, offset)
        if choice.float32:
            delayed_parts = float32_copies(delayed_parts, kept)
        return delayed_parts, n_features

    if policy in ("none", "partial"):
        delayed_parts, d = dask_partitions()
        parts = _keep_leading(delayed_parts, kept if policy == "partial" else 0, client)
        if client is None:
            engine = StreamingLocalEngine(parts, d, ledger=ledger, split_every=split_every)
        else:
            engine = StreamingDistributedEngine(client, parts, d, ledger=ledger,
                                                split_every=split_every)
        if policy == "partial":
            rows = [int(r) for r in X.chunks[0]]
            engine.cache = "partial"
            engine.streamed_share = sum(rows[kept:]) / max(1, sum(rows))
    elif client is None:
        if dask_input:
            import dask

            delayed_parts, d = dask_partitions()
            parts = dask.compute(*delayed_parts, scheduler="threads")
            if n_partitions is not None and n_partitions < len(parts):
                parts = merged_partitions(parts, n_partitions)
        else:
            parts = in_memory_parts(X, y, sample_weight, n_partitions or default_partitions(X),
                                     offset)
            d = X.shape[1]
        engine = LocalEngine(parts, d, ledger=ledger, split_every=split_every)
    else:
        sources = None
        if dask_input:
            delayed_parts, d = dask_partitions()
            futures = compute_beside_blocks(client, delayed_parts, X)
        else:
            sources = in_memory_parts(X, y, sample_weight,
                                       n_partitions or default_partitions(X), offset)
            futures = scatter_partitions(client, sources)
            d = X.shape[1]
        engine = DistributedEngine(client, futures, d, ledger=ledger, split_every=split_every,
                                   group_partitions=group_partitions, sources=sources,
                                   direct_rounds=direct_rounds_enabled())
    engine.reads_source = dask_input
    if choice.float32:  # the partitions as read: float64 X, and float64 y, weight, offset
        engine.bytes_as_read = X.nbytes + 8 * X.shape[0] * sum(
            a is not None for a in (y, sample_weight, offset))
    engine.cache_reason = reason
    engine.topology = topology
    try:
        engine.validate(family, labels, rescale, first, sample_rows)
    except BaseException:
        engine.close()
        raise
    return engine


def direct_rounds_enabled():
    """Whether cluster engines may run rounds on partition holders, past the scheduler
    (:mod:`daskglm.engine.direct`): Dask's config key ``daskglm.direct-rounds``
    (default True; ``dask.config.set({"daskglm.direct-rounds": False})`` keeps every
    round on scheduler tasks)."""
    import dask

    return bool(dask.config.get("daskglm.direct-rounds", True))


def stream_engines(X, y, sample_weight=None, *, family, client="auto", ledger=None):
    """Yield one validated single-partition engine per row chunk of ``X``, in order.

    A Dask array is computed one row chunk at a time, when its turn comes: on the cluster
    when there is a client (the chunk stays on the worker that computed it), in this
    process otherwise.  Each engine is closed, releasing its chunk, before the next chunk
    is computed, so the whole array is never held at once.  In-memory input is one
    partition.

    Parameters
    ----------
    X, y, sample_weight
        As for :func:`make_engine`.
    family : Family
        Used to check the targets in each chunk's validation round.
    client : distributed.Client, None or "auto"
        As for :func:`make_engine`.
    ledger : CommReport, optional
        Every engine writes its rounds here (a new ledger by default).

    Yields
    ------
    Engine
        With one partition; ``n_samples`` and ``sum_weight`` are those of the chunk.
    """
    if client == "auto":
        client = active_client()
    ledger = CommReport() if ledger is None else ledger
    if not any(is_dask(a) for a in (X, y, sample_weight)):
        parts = in_memory_parts(X, y, sample_weight, 1)
        yield from _validated(LocalEngine(parts, X.shape[1], ledger=ledger), family)
        return
    if not is_dask(X):
        import dask.array as da

        X = da.from_array(X, chunks=(X.shape[0], -1))
    delayed_parts, d = delayed_partitions(X, y, sample_weight)
    for delayed_part in delayed_parts:
        if client is None:
            engine = LocalEngine([delayed_part.compute(scheduler="threads")], d, ledger=ledger)
        else:
            engine = DistributedEngine(client, [client.compute(delayed_part)], d, ledger=ledger,
                                       direct_rounds=direct_rounds_enabled())
        yield from _validated(engine, family)


def _validated(engine, family):
    """Yield ``engine`` after its validation round; close it when the consumer moves on."""
    with engine:
        engine.validate(family)
        yield engine
