"""Deadline rounds: a reduce that returns once a deadline passes or enough weight arrived.

The result sums only the partitions that arrived, in the fixed-order tree restricted to
them; the round says which were dropped and what share of the weight arrived, so that a
solver can reweight.  Late results are cancelled, never mixed into a later round.

A backend may run a partition more than once in a round (a *backup* task on a replica
of the partition, :class:`~daskglm.engine.distributed.DistributedEngine`): the round
takes whichever copy arrives first, and waits for a partition with a backup past
``min_fraction`` (until the deadline; without one, as long again as the weight took).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NamedTuple

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
    backups : tuple of int
        Partitions that ran a backup task on a replica (their result is the copy that
        arrived first; all copies compute the same bits).
    """

    result: object
    arrived: tuple
    dropped: tuple
    weight_arrived: float
    weight_total: float
    backups: tuple = ()

    @property
    def fraction(self) -> float:
        """``weight_arrived / weight_total``: the share of the data the result covers."""
        return self.weight_arrived / self.weight_total if self.weight_total else 0.0


class Cutoff(NamedTuple):
    """When a deadline round stops waiting.

    Attributes
    ----------
    weights : numpy.ndarray
        Sample weight of each partition.
    need : float or None
        The weight after which the round may end (None: every partition's).
    stop_at, start : float or None
        The deadline (None: none) and the round's start, on :func:`time.monotonic`'s
        clock.
    """

    weights: np.ndarray
    need: float | None
    stop_at: float | None
    start: float


@dataclass
class Arrivals:
    """What a backend's ``_execute_deadline`` returns.

    Attributes
    ----------
    results : dict
        ``{index: result}`` of the partitions that arrived in time.
    backups : tuple of int
        Partitions that ran a backup task.
    backup_only : tuple of int
        Those of them that ran no task of their own (they moved to their replica's
        worker).
    copied : tuple of int
        Partitions the round started copying to another worker, for backups in the
        rounds after it.
    bytes_copied : int
        Their bytes (as Dask sizes them).
    """

    results: dict
    backups: tuple = ()
    backup_only: tuple = ()
    copied: tuple = ()
    bytes_copied: int = 0


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

        On a cluster (partitions in memory), a partition that missed a deadline round
        runs, from the next one on, also as a backup task on a worker that met it (its
        replica copied there once, then kept): the first copy to finish counts, the other
        is cancelled, and ``min_fraction`` does not end the round while a partition with
        a backup is missing (the deadline does; without one, the round waits for those
        as long again as the weight took to arrive).  Both copies compute the same bits,
        so a round where nothing was dropped equals :meth:`reduce`.

        The arrived results are summed in the fixed-order reduction tree restricted to
        them (:func:`~daskglm.compute.tree.partial_tree_sum`): the sum depends only on which
        partitions arrived, and equals a :meth:`reduce` whose dropped partitions returned
        exact zeros.  The per-partition weights come from :meth:`partition_weights`.

        The round's record lists the partitions dropped (``dropped``), those run with a
        backup (``backups``) and the bytes of the replicas it started copying
        (``bytes_replicated``).

        Returns
        -------
        DeadlineRound
            The sum, ``arrived`` and ``dropped`` partition indices, ``weight_arrived`` and
            ``weight_total``, so that a solver can reweight, and ``backups``.
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
        cutoff = Cutoff(weights, None if min_fraction is None else min_fraction * total,
                        None if deadline is None else start + deadline, start)
        with Timer() as timer, self._probe(kind) as probe:
            arrivals = self._recovering(
                lambda: self._execute_deadline(kernel, args, probe, cutoff, each=each)
            )
        results = arrivals.results
        arrived = tuple(sorted(results))
        dropped = tuple(i for i in range(self.n_partitions) if i not in results)
        n = self.n_partitions
        ran = [i for i in range(n) if i not in arrivals.backup_only] + list(arrivals.backups)
        tasks = len(ran)
        sent = tasks * nbytes(args) + (0 if each is None else sum(nbytes(each[i]) for i in ran))
        record = self.ledger.record(
            kind, tasks, sent, sum(nbytes(r) for r in results.values()),
            timer.seconds, partitions=n, groups=n, probe=probe,
        )
        record.dropped = dropped
        record.backups = arrivals.backups
        record.bytes_replicated = arrivals.bytes_copied
        record.bytes_read = self.round_bytes_read()
        return DeadlineRound(partial_tree_sum(results, n), arrived, dropped,
                             float(weights[list(arrived)].sum()), total, arrivals.backups)

    def _execute_deadline(self, fn, args, probe, cutoff, each=None):
        """Run ``fn`` once per partition (with its item of ``each``, when given) until
        ``cutoff`` (a :class:`Cutoff`); return the :class:`Arrivals`."""
        raise NotImplementedError

    @staticmethod
    def _await_arrivals(copies, cutoff, wait_first, covered=frozenset()):
        """The first copy to finish of each partition that arrives before ``cutoff``.

        ``copies[i]`` are the futures computing partition ``i`` (its task, a backup
        task, or both); ``wait_first(pending, timeout)`` returns the done ones among
        ``pending`` (empty on time out).  The wait ends once every partition arrived, at
        the deadline, or once the arrived weight reaches the weight needed and no
        partition of ``covered`` (those with a backup) is missing; while one is, the
        wait goes on until the deadline or, without one, for as long again as the
        weight took to arrive.  A copy that failed raises its error; one cancelled (lost
        with a worker) does not arrive.

        Returns
        -------
        dict
            ``{index: future}``: the copy that finished first, for each partition that
            arrived.
        """
        weights, need, stop_at, start = cutoff
        owner = {future: i for i, futures in enumerate(copies) for future in futures}
        pending, first, weight = set(owner), {}, 0.0
        enough = False
        while pending:
            if need is not None and weight >= need:
                if not any(owner[future] in covered for future in pending):
                    break
                if not enough and stop_at is None:  # backups get as long again
                    now = time.monotonic()
                    stop_at = now + (now - start)
                enough = True
            timeout = None if stop_at is None else stop_at - time.monotonic()
            if timeout is not None and timeout <= 0:
                break
            done = wait_first(pending, timeout)
            if not done:
                break
            for future in done:
                pending.discard(future)
                index = owner[future]
                if index in first or _cancelled(future):
                    continue
                future.result()  # raises the kernel's error, if any
                first[index] = future
                weight += float(weights[index])
                pending.difference_update(copies[index])
        return first
