"""A deadline round with one item per partition: :func:`reduce_each_by_deadline`.

:meth:`Engine.reduce_by_deadline` sends the same arguments to every partition; a
stochastic step sends each partition its own draw (the rows it gives to the mini-batch),
as :meth:`Engine.reduce_each` does.  This verb is that deadline round with ``each``: the
same clock, the same cancellation of late tasks, the same restricted tree sum and the
same record (with the items counted in the bytes sent).  Both backends run it.
"""

from __future__ import annotations

import time

from ..accounting.bytemodel import nbytes
from ..compute.tree import partial_tree_sum
from .deadline import DeadlineRound
from .measure import Timer

__all__ = ["reduce_each_by_deadline"]


def reduce_each_by_deadline(engine, kernel, each, *args, kind, deadline=None,
                            min_fraction=None):
    """One round: ``kernel(part_i, each[i], *args)`` summed over the partitions in time.

    As :meth:`~daskglm.engine.Engine.reduce_by_deadline` (the round returns once
    ``deadline`` seconds have passed or the arrived partitions hold ``min_fraction`` of
    the sample weight; late results are discarded, never mixed into a later round), with
    one item per partition sent to that partition only.

    Parameters
    ----------
    engine : Engine
    kernel : callable
        ``kernel(part, item, *args)``.
    each : sequence
        One item per partition.
    *args
        Broadcast to every partition.
    kind : str
        The round's kind in the ledger.
    deadline : float, optional
        Seconds from the start of the round.
    min_fraction : float in (0, 1], optional
        Share of the sample weight after which the round stops waiting.

    Returns
    -------
    DeadlineRound
    """
    if deadline is not None and not deadline >= 0:
        raise ValueError(f"deadline must be a number of seconds >= 0; got {deadline!r}.")
    if min_fraction is not None and not 0 < min_fraction <= 1:
        raise ValueError(f"min_fraction must be in (0, 1]; got {min_fraction!r}.")
    each = engine._check_each(each)
    weights = engine.partition_weights()  # before the clock starts: a round of its own
    start = time.monotonic()
    total = float(weights.sum())
    need = None if min_fraction is None else min_fraction * total
    stop_at = None if deadline is None else start + deadline
    with Timer() as timer, engine._probe(kind) as probe:
        results = engine._recovering(
            lambda: engine._execute_deadline(kernel, args, probe, weights, need, stop_at,
                                             each=each)
        )
    arrived = tuple(sorted(results))
    dropped = tuple(i for i in range(engine.n_partitions) if i not in results)
    n = engine.n_partitions
    record = engine.ledger.record(
        kind, n, n * nbytes(args) + nbytes(each), sum(nbytes(r) for r in results.values()),
        timer.seconds, partitions=n, groups=n, probe=probe,
    )
    record.dropped = dropped
    if engine.cache == "none":
        record.bytes_read = engine.data_bytes
    return DeadlineRound(partial_tree_sum(results, n), arrived, dropped,
                         float(weights[list(arrived)].sum()), total)
