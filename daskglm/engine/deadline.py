"""Deadline rounds: a reduce that returns once a deadline passes or enough weight arrived.

The result sums only the partitions that arrived, in the fixed-order tree restricted to
them; the round says which were dropped and what share of the weight arrived, so that a
solver can reweight.  Late results are cancelled, never mixed into a later round.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..accounting.bytemodel import nbytes
from ..compute.summaries import partition_weight
from ..compute.tree import partial_tree_sum
from .measure import Timer


@dataclass
class DeadlineRound:
    """What :meth:`Engine.reduce_by_deadline` returns.

    Attributes
    ----------
    result
        The sum of the arrived partitions' results in the fixed-order reduction tree
        restricted to them (:func:`~daskglm.compute.tree.partial_tree_sum`): it depends only on
        which partitions arrived.  None when none arrived.
    arrived, dropped : tuple of int
        Partition indices whose result was, and was not, summed.
    weight_arrived, weight_total : float
        Total sample weight of the arrived partitions, and of all partitions.
    """

    result: object
    arrived: tuple
    dropped: tuple
    weight_arrived: float
    weight_total: float

    @property
    def fraction(self) -> float:
        """``weight_arrived / weight_total``: the share of the data the result covers."""
        return self.weight_arrived / self.weight_total if self.weight_total else 0.0


def _cancelled(future):
    """Whether a (thread or Dask) future was cancelled rather than run."""
    status = getattr(future, "status", None)
    if status is not None:  # distributed.Future
        return status in ("cancelled", "lost")
    return future.cancelled()


class DeadlineVerbs:
    """The deadline verbs of :class:`~daskglm.engine.base.Engine`."""

    # deadline rounds ----------------------------------------------------------------
    def partition_weights(self):
        """Total sample weight of each partition (one ``"weights"`` round, the first time).

        The validation round sums the weights in the tree (its record follows the
        payload model, one summary per task); this round returns one float per
        partition, once per engine.
        """
        if self._partition_weights is None:
            weights = self.map(partition_weight, kind="weights")
            self._partition_weights = np.asarray(weights, dtype=np.float64)
        return self._partition_weights

    def reduce_by_deadline(self, kernel, *args, kind, deadline=None, min_fraction=None):
        """One round that sums the partitions that arrive in time.

        Runs ``kernel(part, *args)`` as one task per partition and returns once
        ``deadline`` seconds have passed since the round started, or once the partitions
        that arrived hold at least ``min_fraction`` of the total sample weight, whichever
        comes first (with neither, once every partition arrived).  Results that arrive later
        are discarded (their tasks are cancelled; a task already running finishes on its
        worker and its result is dropped), never mixed into a later round.

        The arrived results are summed in the fixed-order reduction tree restricted to
        them (:func:`~daskglm.compute.tree.partial_tree_sum`): the sum depends only on which
        partitions arrived, and equals a :meth:`reduce` whose dropped partitions returned
        exact zeros.  The per-partition weights come from :meth:`partition_weights`.

        Returns
        -------
        DeadlineRound
            The sum, ``arrived`` and ``dropped`` partition indices, ``weight_arrived`` and
            ``weight_total``, so that a solver can reweight.
        """
        return self._deadline_round(kernel, args, None, kind, deadline, min_fraction)

    def reduce_each_by_deadline(self, kernel, each, *args, kind, deadline=None,
                                min_fraction=None):
        """:meth:`reduce_by_deadline` with one item per partition, sent to that partition
        only: ``kernel(part_i, each[i], *args)``, as :meth:`reduce_each` (a stochastic
        step's draws).  The items count in the round's bytes sent."""
        return self._deadline_round(kernel, args, self._check_each(each), kind, deadline,
                                    min_fraction)

    def _deadline_round(self, kernel, args, each, kind, deadline, min_fraction):
        if deadline is not None and not deadline >= 0:
            raise ValueError(f"deadline must be a number of seconds >= 0; got {deadline!r}.")
        if min_fraction is not None and not 0 < min_fraction <= 1:
            raise ValueError(f"min_fraction must be in (0, 1]; got {min_fraction!r}.")
        weights = self.partition_weights()  # before the clock starts: a round of its own
        start = time.monotonic()
        total = float(weights.sum())
        need = None if min_fraction is None else min_fraction * total
        stop_at = None if deadline is None else start + deadline
        with Timer() as timer, self._probe(kind) as probe:
            results = self._recovering(
                lambda: self._execute_deadline(kernel, args, probe, weights, need, stop_at,
                                               each=each)
            )
        arrived = tuple(sorted(results))
        dropped = tuple(i for i in range(self.n_partitions) if i not in results)
        n = self.n_partitions
        sent = n * nbytes(args) + (0 if each is None else nbytes(each))
        record = self.ledger.record(
            kind, n, sent, sum(nbytes(r) for r in results.values()),
            timer.seconds, partitions=n, groups=n, probe=probe,
        )
        record.dropped = dropped
        if self.cache == "none":
            record.bytes_read = self.data_bytes
        return DeadlineRound(partial_tree_sum(results, n), arrived, dropped,
                             float(weights[list(arrived)].sum()), total)

    def _execute_deadline(self, fn, args, probe, weights, need, stop_at, each=None):
        """Run ``fn`` once per partition (with its item of ``each``, when given); return
        ``{index: result}`` of those in time."""
        raise NotImplementedError

    @staticmethod
    def _await_arrivals(futures, weights, need, stop_at, wait_first):
        """Indices of ``futures`` done before ``stop_at`` or once their weight reaches
        ``need``; ``wait_first(pending, timeout)`` returns the done ones (empty on time
        out).  A future that failed raises its error; one cancelled (its partition lost
        with a worker) counts as not arrived."""
        index = {future: i for i, future in enumerate(futures)}
        pending, arrived, weight = set(futures), [], 0.0
        while pending and (need is None or weight < need):
            timeout = None if stop_at is None else stop_at - time.monotonic()
            if timeout is not None and timeout <= 0:
                break
            done = wait_first(pending, timeout)
            if not done:
                break
            for future in done:
                pending.discard(future)
                if _cancelled(future):
                    continue
                future.result()  # raises the kernel's error, if any
                arrived.append(index[future])
                weight += float(weights[index[future]])
        return arrived
