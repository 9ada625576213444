"""The data plane: the only module that talks to Dask.

An engine holds the row partitions ``(X, y, weight)`` of one data set, co-located and kept
in memory where they are computed (on the workers of a ``distributed`` cluster, or in this
process), and offers these verbs to the solvers:

* :meth:`Engine.reduce` -- ONE round: run a kernel on every partition with the same
  broadcast arguments and sum the partial results in a fixed-order tree;
* :meth:`Engine.map` -- ONE round: run a function on every partition and return one
  result per partition;
* :meth:`Engine.map_each` -- ONE round, as ``map`` but with one extra argument per
  partition (per-partition solver state, as in ADMM);
* :meth:`Engine.reduce_each` -- ONE round, as ``reduce`` but with one extra argument per
  partition (what each partition of a mini-batch draws, as in SGD);
* :meth:`Engine.reduce_stateful` and :meth:`Engine.map_stateful` -- ONE round, as
  ``reduce`` and ``map`` with **partition state**: the kernel is called as ``kernel(part,
  state, *args)`` and returns ``(result, new_state)``; the new state stays next to its
  partition (on a cluster, a future per partition kept by the engine under the state's
  name) for the next round that names it, and is never shipped with the results
  (error feedback, local SGD, ADMM, gossip).  :meth:`Engine.fetch_state` ships the
  states to the driver (ONE round), :meth:`Engine.put_state` sends them from it (ONE
  round), :meth:`Engine.drop_state` releases them.  A state lost with a worker is
  recomputed by Dask when it has lineage (partitions computed from Dask collections) and
  otherwise reset to None and reported in the round's :class:`StateRound`;
* :meth:`Engine.reduce_by_deadline` -- ONE round with **a deadline**: one task per
  partition; returns once ``deadline`` seconds passed or ``min_fraction`` of the sample
  weight arrived, with the sum of the arrived partitions (the reduction tree restricted
  to them), which were dropped and the weight that arrived (:class:`DeadlineRound`).
  Late tasks are cancelled and their results discarded.

:func:`stream_engines` walks a Dask array one row chunk at a time, for streaming fits.

Each round is written to the engine's :class:`~daskglm.comm.CommReport`.  No dask.array
graph is built per round: the partitions are persisted once and every round maps over
their futures.  Stateful and deadline rounds place their tasks on the worker holding each
partition (a loose restriction, read with one ``who_has`` call per round), so that a state
is made where its partition lives and a straggler's partitions are not moved away.
"""

from __future__ import annotations

import functools
import math
import os
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor
from concurrent.futures import wait as wait_threads
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from .backend import array_module, is_device
from .comm import CommReport, DaskMeter, Kind, LocalProbe, Timer, nbytes
from .kernels import (
    PartitionSummary,
    as_csr_or_dense,
    column_max_abs,
    combine_nodes,
    complete_nodes,
    encode_positive,
    node_start,
    partial_tree_sum,
    partition_weight,
    run_group,
    run_stateful_group,
    scale_columns,
    stored_bytes,
    summarize,
    tree_root,
)

__all__ = [
    "Engine", "LocalEngine", "DistributedEngine", "make_engine", "stream_engines", "active_client",
    "is_dask", "StateRound", "DeadlineRound",
]

#: Broadcast arguments larger than this are scattered to the workers once per round
#: instead of being embedded in every task.
SCATTER_BYTES = 1 << 20

#: In-memory (numpy, scipy) input is cut into row partitions of about this many bytes of
#: ``X``: the partitioning, and so every result, is the same on every machine.
PARTITION_BYTES = 32 << 20

#: Times a round is retried after partitions were lost with a worker.
MAX_RECOVERIES = 3

#: Columns of ``X`` whose root mean square lies outside ``[2^-SAFE_EXPONENT,
#: 2^SAFE_EXPONENT]`` (about 1e-120 to 1e120) make the kernels' products of two entries,
#: summed over rows, underflow or overflow.
SAFE_EXPONENT = 400


class StateRound(NamedTuple):
    """What :meth:`Engine.reduce_stateful` and :meth:`Engine.map_stateful` return.

    Attributes
    ----------
    result
        The tree sum of the kernel's results (``reduce_stateful``) or the list of them, one
        per partition (``map_stateful``).
    reset : tuple of int
        Partitions whose state was lost with a worker and could not be recomputed: their
        kernel was called with ``state=None`` this round, as on the first one.  Empty when
        nothing was lost (or Dask recomputed the lost states from their lineage).
    """

    result: object
    reset: tuple


@dataclass
class DeadlineRound:
    """What :meth:`Engine.reduce_by_deadline` returns.

    Attributes
    ----------
    result
        The sum of the arrived partitions' results in the fixed-order reduction tree
        restricted to them (:func:`~daskglm.kernels.partial_tree_sum`): it depends only on
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


#: Extra seconds that kernel tasks sleep on a worker, by worker address.  Set in a worker
#: process only by :func:`daskglm.testing.slow_worker`; while it is empty (always, outside
#: tests and demos), a task's check of it costs one test of an empty dict.
_TASK_DELAYS = {}


def _cancelled(future):
    """Whether a (thread or Dask) future was cancelled rather than run."""
    status = getattr(future, "status", None)
    if status is not None:  # distributed.Future
        return status in ("cancelled", "lost")
    return future.cancelled()


def _delay_task():
    """Sleep as :data:`_TASK_DELAYS` says for the worker running this task."""
    try:
        from distributed import get_worker

        seconds = _TASK_DELAYS.get(get_worker().address, 0.0)
    except (ImportError, ValueError):  # not in a worker
        return
    if seconds:
        time.sleep(seconds)


@functools.cache
def _blas_controller():
    """The native thread pools (BLAS, OpenMP) of this process, inspected once.

    Inspecting them is slow (it reads the process's memory map), so it is not repeated on
    every round.
    """
    return ThreadpoolController()


def is_dask(obj) -> bool:
    """True for Dask collections (arrays, dataframes, series)."""
    return hasattr(obj, "__dask_graph__") and hasattr(obj, "__dask_keys__")


def active_client():
    """The default ``distributed.Client``, or None when there is none."""
    try:
        from distributed import default_client
    except ImportError:  # pragma: no cover - distributed is a dependency
        return None
    try:
        return default_client()
    except ValueError:
        return None


class Engine:
    """Row-partitioned data and the rounds run over it.

    Attributes
    ----------
    cache : {"memory", "none"}
        Whether the partitions are kept in memory or read from their source every round.
    n_partitions : int
    n_samples : int
    n_features : int
    sum_weight : float
        Total sample weight (the number of rows when unweighted).
    ledger : CommReport
    split_every : int
        Fan-in of the reduction tree.
    """

    cache = "memory"

    def __init__(self, n_features, ledger=None, split_every=8):
        if split_every < 2:
            raise ValueError(f"split_every must be >= 2; got {split_every}.")
        self.n_features = int(n_features)
        self.ledger = CommReport() if ledger is None else ledger
        #: bytes of the partitions in memory, known after the validation round
        self.data_bytes = 0
        #: whether the validation round reads the data from a source (Dask input)
        self.reads_source = False
        self.split_every = int(split_every)
        self.n_samples = 0
        self.sum_weight = 0.0
        #: weighted column sums and sums of squares of ``X``, from the validation round
        self.column_moments = None
        #: powers of two the columns of ``X`` were multiplied by (None: not rescaled)
        self.column_scale = None
        #: partition states by name: one state (or future of one) per partition
        self._states = {}
        self._partition_weights = None

    # verbs ---------------------------------------------------------------------------
    def reduce(self, kernel, *args, kind):
        """One round: ``sum(kernel(part, *args) for part in partitions)``, summed in a tree."""
        return self._round(kernel, args, None, True, kind)

    def map(self, fn, *args, kind):
        """One round: ``[fn(part, *args) for part in partitions]``."""
        return self._round(fn, args, None, False, kind)

    def map_each(self, fn, each, *args, kind):
        """One round: ``[fn(part, item, *args) for part, item in zip(partitions, each)]``.

        ``each`` holds one item per partition, sent to that partition only; ``args`` go to
        every partition.
        """
        return self._round(fn, args, self._check_each(each), False, kind)

    def reduce_each(self, kernel, each, *args, kind):
        """One round: ``sum(kernel(part, item, *args) for part, item in zip(partitions, each))``.

        As :meth:`reduce`, summed in the same fixed-order tree, with ``each`` holding one
        item per partition, sent to that partition only.
        """
        return self._round(kernel, args, self._check_each(each), True, kind)

    def _round(self, fn, args, each, tree, kind):
        """Run one round and write its record: one task per group of partitions."""
        with Timer() as timer, self._probe(kind) as probe:
            result, combine_tasks = self._execute_recovering(fn, args, each, tree, probe)
        groups = len(self.groups)
        tasks = groups + combine_tasks
        sent = groups * nbytes(args) + (0 if each is None else nbytes(each))
        returned = tasks * nbytes(result) if tree else nbytes(result)
        record = self.ledger.record(
            kind, tasks, sent, returned, timer.seconds, partitions=self.n_partitions,
            groups=groups, split_every=self.split_every if tree else None, probe=probe,
        )
        if self.cache == "none":
            record.bytes_read = self.data_bytes
        return result

    def _execute_recovering(self, fn, args, each, tree, probe):
        """:meth:`_execute`, run again after rebuilding partitions lost with a worker."""
        return self._recovering(lambda: self._execute(fn, args, each, tree, probe))

    def _recovering(self, attempt):
        """``attempt()``, run again after rebuilding partitions lost with a worker."""
        for attempt_number in range(MAX_RECOVERIES + 1):
            try:
                self._recover()
                return attempt()
            except Exception as exc:
                if attempt_number == MAX_RECOVERIES or not self._lost(exc):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    # partition state ----------------------------------------------------------------
    def reduce_stateful(self, kernel, state, *args, kind):
        """One round with partition state: ``kernel(part, state_i, *args) -> (result,
        new_state_i)``; the results are summed as by :meth:`reduce`.

        ``state`` names the state: each partition's ``new_state_i`` stays where the
        partition lives (on its worker, as a future the engine keeps under that name) and
        is passed to the kernel of the next round that names it; on the first round, and
        after :meth:`drop_state`, the kernel gets None.  States never travel with the
        round's results: :meth:`fetch_state` ships them when asked.

        Returns
        -------
        StateRound
            ``(result, reset)``: the tree sum, and the partitions whose state was lost
            with a worker and could not be recomputed (their kernel got None this round).
        """
        return self._stateful_round(kernel, state, args, True, kind)

    def map_stateful(self, fn, state, *args, kind):
        """One round with partition state, as :meth:`reduce_stateful` but returning one
        result per partition: ``StateRound(results, reset)``."""
        return self._stateful_round(fn, state, args, False, kind)

    def state_names(self):
        """Names of the partition states the engine holds."""
        return sorted(self._states)

    def fetch_state(self, state, *, kind="fetch_state"):
        """One round: ship the states stored under ``state`` to the driver.

        Returns
        -------
        list
            One state per partition, exactly as the kernel returned it (None for a
            partition whose state was reset and not yet rebuilt).
        """
        states = self._states_of(state, must_exist=True)
        with Timer() as timer, self._probe(kind) as probe:
            fetched, tasks = self._fetch(states, probe)
        # one task per state held on a worker (none in this process); only states move
        self.ledger.record(kind, tasks, 0, nbytes(fetched), timer.seconds,
                           partitions=tasks or self.n_partitions,
                           groups=tasks or self.n_partitions, probe=probe)
        return fetched

    def put_state(self, state, states, *, kind="put_state"):
        """One round: send one state per partition from the driver, stored under
        ``state`` next to each partition (replacing what was there).

        For a solver that starts its states from the driver (ADMM's duals from a warm
        start), or restarts them after :attr:`StateRound.reset`.  On a cluster the states
        are scattered to the partitions' workers and have no lineage: they, and the
        states computed from them, are recomputed by Dask no further back than this
        round (:meth:`fetch_state` then ``put_state`` cuts a long lineage short).
        """
        self._states_of(state)  # checks the name
        states = self._check_each(states)
        with Timer() as timer, self._probe(kind) as probe:
            placed, tasks = self._put(states, probe)
        old = self._states.get(state)
        self._states[state] = placed
        if old is not None:
            self._release_states(old)
        self.ledger.record(kind, tasks, nbytes(states), 0, timer.seconds,
                           partitions=self.n_partitions, groups=tasks or self.n_partitions,
                           probe=probe)

    def _put(self, states, probe):
        """``(the states where the partitions live, tasks run to put them there)``."""
        return list(states), 0

    def drop_state(self, state):
        """Release the states stored under ``state`` (no round; nothing moves).  Unknown
        names are ignored."""
        states = self._states.pop(state, None)
        if states is not None:
            self._release_states(states)

    def _states_of(self, state, must_exist=False):
        if not isinstance(state, str) or not state:
            raise TypeError(f"A partition state is named by a non-empty str; got {state!r}.")
        if state not in self._states:
            if must_exist:
                raise KeyError(f"No partition state named {state!r}; "
                               f"held: {self.state_names()}.")
            return [None] * self.n_partitions
        return self._states[state]

    def _stateful_round(self, fn, state, args, tree, kind):
        """Run one stateful round, keep its new states and write its record."""
        self._states_of(state)  # checks the name
        reset = set()

        def attempt():
            states = list(self._states_of(state))
            for i in self._unrecoverable_states(states):
                states[i] = None
                reset.add(i)
            if state in self._states:
                self._states[state] = states
            return self._execute_stateful(fn, states, args, tree, probe)

        with Timer() as timer, self._probe(kind) as probe:
            result, new_states, combine_tasks, pick_tasks = self._recovering(attempt)
        old = self._states.get(state)
        self._states[state] = new_states
        if old is not None:
            self._release_states(old)
        groups = len(self.groups)
        tasks = groups + combine_tasks + pick_tasks
        # the states stay where they are: only the broadcast arguments go down and only
        # the results (partials, then the root) come back
        sent = groups * nbytes(args)
        returned = (groups + combine_tasks) * nbytes(result) if tree else nbytes(result)
        record = self.ledger.record(
            kind, tasks, sent, returned, timer.seconds, partitions=self.n_partitions,
            groups=groups, split_every=self.split_every if tree else None, probe=probe,
        )
        record.state_reset = tuple(sorted(reset))
        if self.cache == "none":
            record.bytes_read = self.data_bytes
        return StateRound(result, tuple(sorted(reset)))

    def _execute_stateful(self, fn, states, args, tree, probe):
        """Run a stateful kernel over every group: ``(result, new states, combine tasks,
        other tasks)``."""
        raise NotImplementedError

    def _unrecoverable_states(self, states):
        """Indices of ``states`` lost for good (reset to None before the round)."""
        return []

    def _fetch(self, states, probe):
        """``(the states on the driver, tasks run to fetch them)``."""
        return list(states), 0

    def _release_states(self, states):
        """Let go of a list of states."""

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
        them (:func:`~daskglm.kernels.partial_tree_sum`): the sum depends only on which
        partitions arrived, and equals a :meth:`reduce` whose dropped partitions returned
        exact zeros.  The per-partition weights come from :meth:`partition_weights`.

        Returns
        -------
        DeadlineRound
            The sum, ``arrived`` and ``dropped`` partition indices, ``weight_arrived`` and
            ``weight_total``, so that a solver can reweight.
        """
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
                lambda: self._execute_deadline(kernel, args, probe, weights, need, stop_at)
            )
        arrived = tuple(sorted(results))
        dropped = tuple(i for i in range(self.n_partitions) if i not in results)
        n = self.n_partitions
        record = self.ledger.record(
            kind, n, n * nbytes(args), sum(nbytes(r) for r in results.values()),
            timer.seconds, partitions=n, groups=n, probe=probe,
        )
        record.dropped = dropped
        if self.cache == "none":
            record.bytes_read = self.data_bytes
        return DeadlineRound(partial_tree_sum(results, n), arrived, dropped,
                             float(weights[list(arrived)].sum()), total)

    def _execute_deadline(self, fn, args, probe, weights, need, stop_at):
        """Run ``fn`` once per partition; return ``{index: result}`` of those in time."""
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

    def _execute(self, fn, args, each, tree, probe):
        """Run ``fn`` over every group: ``(tree sum, combine tasks)`` with ``tree``, else
        ``(per-partition results, 0)``."""
        raise NotImplementedError

    def _lost(self, exc):
        """Whether ``exc`` says partitions were lost (the round can run again)."""
        return False

    def _recover(self):
        """Rebuild the partitions lost with a worker, where that needs the engine's help."""

    def _check_each(self, each):
        each = list(each)
        if len(each) != self.n_partitions:
            raise ValueError(
                f"Need one item per partition: got {len(each)} for "
                f"{self.n_partitions} partitions."
            )
        return each

    def close(self):
        """Release the partitions."""

    # shared --------------------------------------------------------------------------
    def _tree_tasks(self, n):
        tasks = 0
        while n > 1:
            n = math.ceil(n / self.split_every)
            tasks += n
        return tasks

    def _probe(self, kind):
        """What measures one round of ``kind`` (see :mod:`daskglm.comm`)."""
        raise NotImplementedError

    def validate(self, family, labels=False, rescale=False):
        """One round over the data: row count, total weight, NaN/inf, labels, weights.

        With ``labels``, the distinct target values are collected into ``self.labels``
        instead of being checked against ``family``.  The same read sums the columns of
        ``X`` and their squares (``self.column_moments``), which standardising solvers
        need.  Raises ValueError naming every problem found.

        Columns whose magnitude is beyond what float64 products can hold (see
        :data:`SAFE_EXPONENT`) are an error, or with ``rescale`` are multiplied by powers
        of two where they live (exact; two more rounds, only then), recorded in
        ``self.column_scale``: coefficients fitted on the rescaled data are multiplied by
        it to apply to the original columns.
        """
        summary: PartitionSummary = self.reduce(summarize, family, labels, kind=Kind.VALIDATE)
        self.labels = summary.labels
        self.column_moments = summary.moments
        self.data_bytes = summary.nbytes
        if self.reads_source:  # this round read the data from their source
            self.ledger.records[-1].bytes_read = summary.nbytes
        if summary.problems:
            raise ValueError(" ".join(dict.fromkeys(summary.problems)))
        if summary.rows == 0:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
        if not summary.weight > 0:
            raise ValueError("The sample weights sum to zero; at least one must be positive.")
        self.n_samples = summary.rows
        self.sum_weight = summary.weight
        unsafe = self._unsafe_columns()
        if unsafe.any():
            maxima = self.reduce(column_max_abs, kind=Kind.MAXIMA).values
            if not rescale:
                raise ValueError(_scale_message(unsafe, maxima))
            exponents = np.zeros(self.n_features)
            exponents[unsafe & (maxima > 0)] = -np.round(np.log2(maxima[unsafe & (maxima > 0)]))
            scale = np.ldexp(1.0, exponents.astype(int))
            self._transform(scale_columns, scale, Kind.SCALE)
            summary = self.validate(family, labels)
            self.column_scale = scale
        return summary

    def _unsafe_columns(self):
        """Columns whose root mean square is outside the safe range (or not finite)."""
        moments = self.column_moments
        if moments is None:
            return np.zeros(self.n_features, dtype=bool)
        with np.errstate(all="ignore"):
            mean_square = moments.squares / self.sum_weight
            unsafe = ~np.isfinite(mean_square) | ~np.isfinite(moments.sums)
            unsafe |= (mean_square < 2.0 ** (-2 * SAFE_EXPONENT)) & (moments.sums != 0)
            unsafe |= mean_square > 2.0 ** (2 * SAFE_EXPONENT)
        return unsafe

    def relabel(self, positive):
        """Replace every partition's targets by ``1.0`` where they equal ``positive``, else 0."""
        self._transform(encode_positive, positive, Kind.ENCODE)

    def _transform(self, fn, arg, kind):
        """One round: ``parts[i] = fn(parts[i], arg)`` where the partitions live."""
        with Timer() as timer, self._probe(kind) as probe:
            self._replace_parts(fn, arg, probe)
        n = self.n_partitions
        self.ledger.record(kind, n, n * nbytes(arg), 0, timer.seconds, partitions=n, groups=n,
                           probe=probe)

    def _replace_parts(self, fn, arg, probe):
        """``parts[i] = fn(parts[i], arg)`` where the partitions live."""
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (
            f"{type(self).__name__}(n_partitions={self.n_partitions}, "
            f"n_samples={self.n_samples}, n_features={self.n_features})"
        )


class LocalEngine(Engine):
    """Partitions held in this process; rounds run on a thread pool.

    Each partition's kernel runs single-threaded (BLAS limited to one thread) and the
    partitions run concurrently, as on single-threaded workers.
    """

    def __init__(self, parts, n_features, n_threads=None, ledger=None, split_every=8):
        super().__init__(n_features, ledger, split_every)
        self.parts = list(parts)
        self.n_partitions = len(self.parts)
        self.groups = [[i] for i in range(self.n_partitions)]
        self.n_threads = max(1, min(n_threads or os.cpu_count() or 1, self.n_partitions))
        self._pool = ThreadPoolExecutor(self.n_threads) if self.n_threads > 1 else None
        self._deadline_pool = None  # the pool, or one thread when there is no pool

    def _probe(self, kind):
        return LocalProbe(self.n_threads)

    def _execute(self, fn, args, each, tree, probe):
        run = probe.timed(run_group)
        n = self.n_partitions
        jobs = [
            (fn, [self.parts[i] for i in group], None if each is None else [each[i] for i in group],
             args) + ((group, n) if tree else ())
            for group in self.groups
        ]
        results = self._run_jobs(run, jobs)
        if tree:
            root = combine_nodes(n, *results)[tree_root(n)]
            return root, self._tree_tasks(len(self.groups))
        return [item for group_results in results for item in group_results], 0

    def _run_jobs(self, run, jobs):
        if self._pool is None:
            return [run(*job) for job in jobs]
        with _blas_controller().limit(limits=1):
            return list(self._pool.map(lambda job: run(*job), jobs))

    def _execute_stateful(self, fn, states, args, tree, probe):
        run = probe.timed(run_stateful_group)
        n = self.n_partitions
        jobs = [
            (fn, [self.parts[i] for i in group], [states[i] for i in group], args)
            + ((group, n) if tree else ())
            for group in self.groups
        ]
        outputs = self._run_jobs(run, jobs)
        new_states = [None] * n
        for group, (_, group_states) in zip(self.groups, outputs):
            for index, item in zip(group, group_states):
                new_states[index] = item
        if tree:
            root = combine_nodes(n, *(out for out, _ in outputs))[tree_root(n)]
            return root, new_states, self._tree_tasks(len(self.groups)), 0
        return [item for out, _ in outputs for item in out], new_states, 0, 0

    def _execute_deadline(self, fn, args, probe, weights, need, stop_at):
        if self._deadline_pool is None:
            self._deadline_pool = self._pool or ThreadPoolExecutor(self.n_threads)
        run = probe.timed(run_group)
        with _blas_controller().limit(limits=1):
            futures = [self._deadline_pool.submit(run, fn, [part], None, args)
                       for part in self.parts]
            arrived = self._await_arrivals(
                futures, weights, need, stop_at,
                lambda pending, timeout: wait_threads(pending, timeout, FIRST_COMPLETED).done,
            )
        for future in futures:
            future.cancel()  # those not started; a running one finishes and is dropped
        return {i: futures[i].result()[0] for i in arrived}

    def _replace_parts(self, fn, arg, probe):
        run = probe.timed(fn)
        self.parts = [run(part, arg) for part in self.parts]

    def close(self):
        for pool in {id(p): p for p in (self._pool, self._deadline_pool) if p}.values():
            pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._deadline_pool = None
        self._states = {}
        self.parts = []


class DistributedEngine(Engine):
    """Partitions persisted on the workers of a ``distributed`` cluster.

    A round submits one task per group of partitions that share a worker thread
    (broadcast arguments embedded, or scattered once when large), then the combine tasks
    of the fixed-order reduction tree on the workers, and gathers one small result.  The
    tree depends on partition indices only (:func:`~daskglm.kernels.complete_nodes`), so
    results do not depend on where partitions live.

    Partitions computed from Dask collections are recomputed by Dask when a worker is
    lost.  In-memory input has no such lineage: the engine keeps its partitions on the
    driver (``sources``, views of the caller's arrays where no conversion was needed) and
    scatters the lost ones again, with every transformation applied since.
    """

    def __init__(self, client, part_futures, n_features, ledger=None, split_every=8,
                 group_partitions=True, sources=None):
        super().__init__(n_features, ledger, split_every)
        self.client = client
        self.parts = list(part_futures)
        self.n_partitions = len(self.parts)
        self.meter = DaskMeter.for_client(client)
        self.group_partitions = group_partitions
        self.sources = sources
        self._transforms = []
        self._regroup()

    def _regroup(self):
        self.groups = (
            _groups_by_thread(self.client, self.parts) if self.group_partitions
            else [[i] for i in range(self.n_partitions)]
        )

    def _probe(self, kind):
        return self.meter.round(kind)

    def _broadcast(self, args, created):
        sent = []
        for a in args:
            if nbytes(a) > SCATTER_BYTES:
                a = self.client.scatter(a, broadcast=True, hash=False)
                created.append(a)
            sent.append(a)
        return tuple(sent)

    def _execute(self, fn, args, each, tree, probe):
        created = []  # released at once if the round fails or is interrupted
        try:
            return self._submit(fn, args, each, tree, probe, created)
        except BaseException:
            for future in created:
                future.release()
            raise

    def _submit(self, fn, args, each, tree, probe, created):
        sent = self._broadcast(args, created)
        groups = self.groups
        reduce_args = [(group, self.n_partitions) for group in groups] if tree \
            else [()] * len(groups)
        futures = self.client.map(
            _run_task,
            [fn] * len(groups),
            [[self.parts[i] for i in group] for group in groups],
            [None if each is None else [each[i] for i in group] for group in groups],
            [sent] * len(groups),
            reduce_args,
            key=probe.keys(len(groups)),
            pure=False,
        )
        created.extend(futures)
        if tree:
            return self._tree(futures, probe, created)
        results = [None] * self.n_partitions
        for group, group_results in zip(groups, self.client.gather(futures)):
            for index, item in zip(group, group_results):
                results[index] = item
        return results, 0

    def _tree(self, group_futures, probe, created):
        """Sum the groups' results on the workers; return ``(root sum, combine tasks)``.

        Each group's task returns the complete subtrees of its partitions; combine tasks
        of fan-in ``split_every`` merge them (in order of position) until one holds the
        root.  Which worker holds what changes how much each task sends, never the sum.
        """
        n = self.n_partitions
        level = sorted(
            ((future, _complete_node_keys(group, n)) for group, future in zip(self.groups,
                                                                              group_futures)),
            key=lambda item: node_start(item[1][0]),
        )
        combines = 0
        while len(level) > 1:
            merged = []
            for i in range(0, len(level), self.split_every):
                chunk = level[i : i + self.split_every]
                keys = {node: 0 for _, nodes in chunk for node in nodes}
                future = self.client.submit(combine_nodes, n, *(f for f, _ in chunk),
                                            pure=False, key=probe.combine_key())
                created.append(future)
                merged.append((future, list(complete_nodes(keys, n))))
                combines += 1
            level = merged
        root = tree_root(n)
        return level[0][0].result()[root], combines

    def collect_measurements(self):
        """Fetch Dask's counters for the rounds not measured yet into their records."""
        try:
            self.meter.collect()
        except Exception:  # measuring never breaks a fit: those rounds stay unmeasured
            pass

    # partition state ----------------------------------------------------------------
    def _execute_stateful(self, fn, states, args, tree, probe):
        created = []  # released at once if the round fails or is interrupted
        try:
            return self._submit_stateful(fn, states, args, tree, probe, created)
        except BaseException:
            for future in created:
                future.release()
            raise

    def _submit_stateful(self, fn, states, args, tree, probe, created):
        """One task per group runs the kernel and returns ``(out, new states)``; on its
        worker, one small task per group picks ``out`` (what the tree or the gather
        uses) and one per partition picks its new state, so the states never leave.

        The three are placed on the worker holding the group's partitions (a loose
        restriction: another worker if that one is gone), so that a new state is made
        and kept next to its partition even before Dask has learnt that picking is fast.
        """
        sent = self._broadcast(args, created)
        groups, n = self.groups, self.n_partitions
        keys = probe.keys(len(groups))
        places = self._placement([group[0] for group in groups])
        results, new_states = [], [None] * n
        for g, (group, place) in enumerate(zip(groups, places)):
            output = self.client.submit(
                _run_stateful_task, fn, [self.parts[i] for i in group],
                [states[i] for i in group], sent, (group, n) if tree else (),
                key=keys[g], pure=False, **place,
            )
            created.append(output)
            results.append(self.client.submit(_pick_output, output, key=probe.pick_key(f"out{g}"),
                                              pure=False, **place))
            created.append(results[-1])
            for j, index in enumerate(group):
                new_states[index] = self.client.submit(
                    _pick_state, output, j, key=probe.pick_key(f"state{index}"), pure=False,
                    **place)
        created.extend(new_states)
        picks = len(results) + n
        if tree:
            result, combines = self._tree(results, probe, created)
            return result, new_states, combines, picks
        gathered = [None] * n
        for group, group_results in zip(groups, self.client.gather(results)):
            for index, item in zip(group, group_results):
                gathered[index] = item
        return gathered, new_states, 0, picks

    def _unrecoverable_states(self, states):
        """States whose future was cancelled or failed: a dependency they need (a
        scattered partition, a state before them) is gone for good.  States that Dask
        can recompute from their lineage (partitions computed from Dask collections)
        are left to it."""
        return [i for i, future in enumerate(states)
                if future is not None and future.status in ("cancelled", "error")]

    def _fetch(self, states, probe):
        held = [i for i, future in enumerate(states) if future is not None]
        # one task per state, on the state's worker, named for this round so that the
        # transfers are measured as this round's
        holders = self.client.who_has([states[i] for i in held])
        keys = probe.keys(len(held))
        copies = []
        for key, i in zip(keys, held):
            worker = holders.get(states[i].key) or ()
            place = {"workers": [worker[0]], "allow_other_workers": True} if worker else {}
            copies.append(self.client.submit(_identity, states[i], key=key, pure=False, **place))
        fetched = [None] * self.n_partitions
        try:
            for index, item in zip(held, self.client.gather(copies)):
                fetched[index] = item
        finally:
            for future in copies:
                future.release()
        return fetched, len(held)

    def _put(self, states, probe):
        places = self._placement(range(self.n_partitions))
        by_worker = {}
        for i, (item, place) in enumerate(zip(states, places)):
            if item is not None:
                by_worker.setdefault(tuple(place.get("workers", ())), []).append(i)
        placed = [None] * self.n_partitions
        for workers, indices in by_worker.items():
            # a list of items: each is scattered whole (a dict state stays one future)
            futures = self.client.scatter([states[i] for i in indices],
                                          workers=list(workers) or None, hash=False)
            for i, future in zip(indices, futures):
                placed[i] = future
        return placed, 0

    def _release_states(self, states):
        for future in states:
            if future is not None:
                future.release()

    # deadline rounds ----------------------------------------------------------------
    def _placement(self, indices):
        """Submit options that place a task on the worker holding partition ``indices[0]``.

        A loose restriction: Dask may still run the task elsewhere if that worker is gone.
        Without it, Dask spreads the tasks of a round whose duration it does not know yet
        over idle workers, moving small partitions (and making a state, or a straggler,
        land on the wrong worker).
        """
        holders = self.client.who_has([self.parts[i] for i in indices])
        places = []
        for i in indices:
            worker = holders.get(self.parts[i].key) or ()
            places.append({"workers": [worker[0]], "allow_other_workers": True} if worker
                          else {})
        return places

    def _partition_futures(self, fn, sent, probe):
        """One task per partition, where it lives: ``run_group(fn, [part], None, sent)``."""
        n = self.n_partitions
        keys = probe.keys(n)
        places = self._placement(range(n))
        return [self.client.submit(_run_task, fn, [part], None, sent, (), key=keys[i],
                                   pure=False, **places[i])
                for i, part in enumerate(self.parts)]

    def _execute_deadline(self, fn, args, probe, weights, need, stop_at):
        from distributed import wait

        def wait_first(pending, timeout):
            try:
                return wait(list(pending), timeout=timeout, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                return set()

        created = []
        try:
            sent = self._broadcast(args, created)
            futures = self._partition_futures(fn, sent, probe)
            created.extend(futures)
            arrived = self._await_arrivals(futures, weights, need, stop_at, wait_first)
            late = [future for i, future in enumerate(futures) if i not in set(arrived)]
            if late:
                self.client.cancel(late, reason="past the round's deadline")
            gathered = self.client.gather([futures[i] for i in arrived])
            return {i: group_results[0] for i, group_results in zip(arrived, gathered)}
        finally:
            for future in created:
                future.release()

    def _lost(self, exc):
        from distributed.client import FutureCancelledError

        return isinstance(exc, FutureCancelledError) and (
            self._lost_parts() != []
            or any(self._unrecoverable_states(states) for states in self._states.values())
        )

    def _lost_parts(self):
        return [i for i, future in enumerate(self.parts)
                if future.status in ("cancelled", "lost", "error")]

    def _recover(self):
        lost = self._lost_parts()
        if self.sources is None:
            # partitions computed from Dask collections read "lost" until Dask has
            # recomputed them from their lineage: only cancelled ones are gone for good
            lost = [i for i in lost if self.parts[i].status != "lost"]
        if not lost:
            return
        if self.sources is None:
            raise RuntimeError(
                f"Partitions {lost} were lost with a worker and cannot be recomputed."
            )
        parts = []
        for i in lost:
            part = self.sources[i]
            for fn, arg in self._transforms:
                part = fn(part, arg)
            parts.append(part)
        scattered = self.client.scatter(parts, hash=False)
        for i, future in zip(lost, self.client.map(_realign, scattered, pure=False)):
            self.parts[i] = future
        self._regroup()

    def _replace_parts(self, fn, arg, probe):
        new = self.client.map(fn, self.parts, [arg] * self.n_partitions,
                              key=probe.keys(self.n_partitions), pure=False)
        for future in self.parts:
            future.release()
        self.parts = new
        self._transforms.append((fn, arg))
        if len(self.groups) < self.n_partitions:
            self._regroup()

    def close(self):
        self.collect_measurements()
        for states in self._states.values():
            self._release_states(states)
        self._states = {}
        # release, not cancel: another engine may hold futures of the same keys
        for future in self.parts:
            future.release()
        self.parts = []
        self.sources = None


def _complete_node_keys(indices, n_leaves):
    """The nodes :func:`~daskglm.kernels.run_group` returns for partitions ``indices``."""
    return list(complete_nodes({(0, i): 0 for i in indices}, n_leaves))


def _run_task(fn, parts, items, args, reduce_args):
    """A group's task: :func:`~daskglm.kernels.run_group`, reducing when ``reduce_args``."""
    if _TASK_DELAYS:
        _delay_task()
    return run_group(fn, parts, items, args, *reduce_args)


def _run_stateful_task(fn, parts, states, args, reduce_args):
    """A group's task of a stateful round: :func:`~daskglm.kernels.run_stateful_group`."""
    if _TASK_DELAYS:
        _delay_task()
    return run_stateful_group(fn, parts, states, args, *reduce_args)


def _pick_output(output):
    """The results (or tree nodes) of a stateful group task's output."""
    return output[0]


def _pick_state(output, position):
    """The new state of the ``position``-th partition of a stateful group task's output."""
    return output[1][position]


def _identity(item):
    return item


class _Loading:
    """``fn`` called on a partition loaded from its source first (streaming rounds)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, part, *args):
        return self.fn(part.compute(scheduler="sync"), *args)


class StreamingLocalEngine(LocalEngine):
    """Partitions read from their source in every round, in this process (``cache="none"``).

    ``parts`` are delayed partitions; each round loads each one in the thread that uses
    it, so at most one partition per thread is in memory at a time.
    """

    cache = "none"

    def __init__(self, parts, n_features, **kwargs):
        super().__init__(parts, n_features, **kwargs)
        self.reads_source = True

    def _execute(self, fn, args, each, tree, probe):
        return super()._execute(_Loading(fn), args, each, tree, probe)

    def _execute_stateful(self, fn, states, args, tree, probe):
        return super()._execute_stateful(_Loading(fn), states, args, tree, probe)

    def _execute_deadline(self, fn, args, probe, weights, need, stop_at):
        return super()._execute_deadline(_Loading(fn), args, probe, weights, need, stop_at)

    def _replace_parts(self, fn, arg, probe):
        import dask

        self.parts = [dask.delayed(fn, pure=False)(part, arg) for part in self.parts]


class StreamingDistributedEngine(DistributedEngine):
    """Partitions read from their source in every round, on the workers (``cache="none"``).

    Each round computes one task per partition from the partition's own (small) graph,
    so the workers read, use and drop it; Dask's queuing of root tasks keeps only about
    one partition per worker thread in memory.
    """

    cache = "none"

    def __init__(self, client, delayed_parts, n_features, **kwargs):
        super().__init__(client, delayed_parts, n_features, group_partitions=False, **kwargs)
        self.reads_source = True

    def _submit(self, fn, args, each, tree, probe, created):
        import dask

        sent = self._broadcast(args, created)
        keys = probe.keys(self.n_partitions)
        n = self.n_partitions
        run = dask.delayed(_run_task, pure=False)
        tasks = [
            run(fn, [part], None if each is None else [each[i]], sent,
                ([i], n) if tree else (), dask_key_name=keys[i])
            for i, part in enumerate(self.parts)
        ]
        futures = self.client.compute(tasks)
        created.extend(futures)
        if tree:
            return self._tree(futures, probe, created)
        return [group_results[0] for group_results in self.client.gather(futures)], 0

    def _partition_futures(self, fn, sent, probe):
        import dask

        keys = probe.keys(self.n_partitions)
        run = dask.delayed(_run_task, pure=False)
        return self.client.compute([run(fn, [part], None, sent, (), dask_key_name=keys[i])
                                    for i, part in enumerate(self.parts)])

    def _execute_stateful(self, fn, states, args, tree, probe):
        raise NotImplementedError(
            "Partition state lives next to a partition kept in memory; with cache='none' "
            "the partitions are read again in every round and live nowhere.  Use "
            "cache='memory'."
        )

    def _lost_parts(self):
        return []  # read from their source in every round

    def _replace_parts(self, fn, arg, probe):
        import dask

        self.parts = [dask.delayed(fn, pure=False)(part, arg) for part in self.parts]

    def close(self):
        self.collect_measurements()
        self.parts = []


def _groups_by_thread(client, parts):
    """Partition indices grouped by the worker thread that will run them.

    Each worker's partitions (in index order) are split into as many contiguous groups as
    it has threads.  Partitions whose holder is unknown get a group of their own.
    """
    from distributed import wait

    wait(parts)
    holders = client.who_has(parts)
    nthreads = client.nthreads()
    by_worker, groups = {}, []
    for index, future in enumerate(parts):
        workers = holders.get(future.key) or ()
        if workers:
            by_worker.setdefault(workers[0], []).append(index)
        else:
            groups.append([index])
    for worker, indices in by_worker.items():
        slots = max(1, min(nthreads.get(worker, 1), len(indices)))
        groups.extend(chunk.tolist() for chunk in np.array_split(np.array(indices), slots))
    return sorted(groups)


# building engines ----------------------------------------------------------------------
#: ``cache="auto"`` keeps the data in memory when they take at most this share of the
#: memory free on the workers (or in this process), leaving room for the rounds' work.
CACHE_SAFETY = 0.5


def data_nbytes(X, y, sample_weight=None):
    """Bytes of ``(X, y, sample_weight)`` once in memory.

    For a Dask array with sparse chunks, the stored size of its first chunk scaled to all
    its rows (one chunk is read); an array whose length is not known yet counts
    as 0.
    """
    total = 0
    for a in (X, y, sample_weight):
        if a is None or any(math.isnan(size) for size in np.shape(a)):
            continue
        if sp.issparse(a):
            total += stored_bytes(a)
        elif is_dask(a) and sp.issparse(getattr(a, "_meta", None)) and a.numblocks[0]:
            first = a.blocks[0].compute()
            total += stored_bytes(first) * a.shape[0] // max(1, first.shape[0])
        else:
            total += int(np.prod(np.shape(a))) * np.dtype(a.dtype).itemsize
    return total


def free_memory(client):
    """Bytes of memory free for data: on the workers of ``client``, or in this process.

    A worker with a memory limit has that limit less what it uses; workers without one
    (``memory_limit=0`` or None) may use their machine's available memory, counted once
    per machine however many such workers share it.
    """
    if client is None:
        return _available_memory()
    workers = client.scheduler_info(n_workers=-1)["workers"]
    free = 0
    unlimited = []
    for address, info in workers.items():
        limit = info.get("memory_limit") or 0
        if not limit:
            unlimited.append(address)
            continue
        used = (info.get("metrics") or {}).get("memory", 0) or 0
        free += max(0, int(limit) - int(used))
    if unlimited:
        available = client.run(_available_memory, workers=unlimited)
        by_host = {}
        for address, value in available.items():
            host = workers[address].get("host") or address
            by_host[host] = max(by_host.get(host, 0), int(value))
        free += sum(by_host.values())
    return free


def _scale_message(unsafe, maxima):
    columns = np.flatnonzero(unsafe)
    shown = ", ".join(f"{j} (largest |value| {maxima[j]:.3g})" for j in columns[:5])
    more = f" and {columns.size - 5} more" if columns.size > 5 else ""
    return (
        f"X has columns whose values are too large or too small for float64 arithmetic on "
        f"their products: {shown}{more}.  Rescale them (e.g. with "
        f"sklearn.preprocessing.StandardScaler or MaxAbsScaler); without a penalty they "
        f"are rescaled automatically."
    )


def _available_memory():
    """Memory available on this machine, in bytes."""
    import psutil

    return int(psutil.virtual_memory().available)


def choose_cache(cache, X, y, sample_weight, client):
    """The cache policy for a fit and why: ``("memory" | "none", reason)``.

    Parameters
    ----------
    cache : {"auto", "memory", "none"}
    X, y, sample_weight : the data
    client : distributed.Client or None

    Raises
    ------
    ValueError
        For an unknown policy.
    """
    if cache not in ("auto", "memory", "none"):
        raise ValueError(f"cache must be 'auto', 'memory' or 'none'; got {cache!r}.")
    if not any(is_dask(a) for a in (X, y, sample_weight)):
        return "memory", "the data are already in memory"
    if cache != "auto":
        return cache, f"cache={cache!r} was asked for"
    need = data_nbytes(X, y, sample_weight)
    free = free_memory(client)
    where = "on the workers" if client is not None else "in this process"
    if need <= CACHE_SAFETY * free:
        return "memory", (f"the data ({need / 1e9:.2f} GB) fit in {CACHE_SAFETY:.0%} of the "
                          f"{free / 1e9:.2f} GB free {where}")
    return "none", (f"the data ({need / 1e9:.2f} GB) exceed {CACHE_SAFETY:.0%} of the "
                    f"{free / 1e9:.2f} GB free {where}: streaming them from their source")

#: Partition buffers start on this boundary (a cache line, the widest SIMD load).
ALIGNMENT = 64


def _aligned(a):
    """``a`` as a C-contiguous array starting on an :data:`ALIGNMENT`-byte boundary
    (copied only if it is not one already).

    Buffers deserialised on a worker can be misaligned, which makes numpy skip BLAS; and
    SIMD kernels round differently depending on a buffer's offset from that boundary, so
    the same partition must always start on it for fits to be reproducible bit for bit.
    """
    if a is None or sp.issparse(a) or is_device(a):  # device buffers are allocated aligned
        return a
    a = np.require(a, requirements=["C", "A"])
    if a.ctypes.data % ALIGNMENT == 0 or a.nbytes == 0:
        return a
    raw = np.empty(a.nbytes + ALIGNMENT, dtype=np.uint8)
    offset = -raw.ctypes.data % ALIGNMENT
    copy = raw[offset : offset + a.nbytes].view(a.dtype).reshape(a.shape)
    copy[...] = a
    return copy


def _as_partition(X, y, weight):
    """Normalise one row block to the kernels' layout: ``(X, float64 y, float64 weight|None)``.

    ``X`` becomes a CSR matrix (any sparse input) or an aligned C-contiguous array.
    """
    X = as_csr_or_dense(X)
    xp = array_module(X)
    y = xp.asarray(y, dtype=np.float64).ravel()
    if weight is not None:
        weight = xp.asarray(weight, dtype=np.float64).ravel()
    return _aligned(X), _aligned(y), _aligned(weight)


def _realign(part):
    """Run on a worker after a scatter: the partition with aligned buffers."""
    return tuple(_aligned(a) for a in part)


def _scatter_in_order(client, parts):
    """Scatter ``parts`` in contiguous runs, one run per worker (in proportion to its
    threads), so that each worker thread's partitions are neighbours in the reduction tree.

    Returns futures of the partitions with aligned buffers.
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


def _in_memory_parts(X, y, weight, n_partitions):
    return [
        _as_partition(X[a:b], y[a:b], _row_slice(weight, a, b))
        for a, b in _split_rows(X.shape[0], n_partitions)
    ]


def _align_dask(X, y, weight):
    """Whole-row chunks of X with y and weight chunked like X's rows."""
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

    return X, align(y), align(weight)


def _dask_partitions(X, y, weight):
    """One delayed ``(X, y, weight)`` partition per row chunk of X."""
    import dask

    X, y, weight = _align_dask(X, y, weight)
    x_blocks = X.to_delayed().ravel()
    y_blocks = list(np.ravel(y.to_delayed()))
    w_blocks = [None] * len(x_blocks) if weight is None else list(np.ravel(weight.to_delayed()))
    pack = dask.delayed(_as_partition, pure=False)  # each engine owns its partitions
    return [pack(xb, yb, wb) for xb, yb, wb in zip(x_blocks, y_blocks, w_blocks)], X.shape[1]


def make_engine(X, y, sample_weight=None, *, family, client="auto", n_partitions=None,
                split_every=8, group_partitions=True, cache="memory", labels=False,
                rescale=False):
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
        array keeps its own row chunks.
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
        data take at most half of the free memory (:func:`choose_cache`).  In-memory input
        is always ``"memory"``.
    labels : bool
        Collect the distinct target values (``engine.labels``) instead of checking the
        targets against ``family``: for class labels, encoded afterwards with
        :meth:`Engine.relabel`.
    rescale : bool
        Rescale columns of ``X`` too large or too small for float64 products by powers of
        two (``engine.column_scale``) instead of raising ValueError; for problems whose
        solution does not depend on column scales (no penalty).

    Returns
    -------
    Engine
        Validated: ``n_samples`` and ``sum_weight`` are set.
    """
    if client == "auto":
        client = active_client()
    ledger = CommReport()
    dask_input = any(is_dask(a) for a in (X, y, sample_weight))
    policy, reason = choose_cache(cache, X, y, sample_weight, client)
    if dask_input and not is_dask(X):
        import dask.array as da

        n_partitions = n_partitions or default_partitions(X)
        X = da.from_array(X, chunks=(max(1, -(-X.shape[0] // n_partitions)), -1))
    if policy == "none":
        delayed_parts, d = _dask_partitions(X, y, sample_weight)
        if client is None:
            engine = StreamingLocalEngine(delayed_parts, d, ledger=ledger, split_every=split_every)
        else:
            engine = StreamingDistributedEngine(client, delayed_parts, d, ledger=ledger,
                                                split_every=split_every)
    elif client is None:
        if dask_input:
            import dask

            delayed_parts, d = _dask_partitions(X, y, sample_weight)
            parts = dask.compute(*delayed_parts, scheduler="threads")
        else:
            parts = _in_memory_parts(X, y, sample_weight, n_partitions or default_partitions(X))
            d = X.shape[1]
        engine = LocalEngine(parts, d, ledger=ledger, split_every=split_every)
    else:
        sources = None
        if dask_input:
            delayed_parts, d = _dask_partitions(X, y, sample_weight)
            futures = client.compute(delayed_parts)
        else:
            sources = _in_memory_parts(X, y, sample_weight,
                                       n_partitions or default_partitions(X))
            futures = _scatter_in_order(client, sources)
            d = X.shape[1]
        engine = DistributedEngine(client, futures, d, ledger=ledger, split_every=split_every,
                                   group_partitions=group_partitions, sources=sources)
    engine.reads_source = dask_input
    engine.cache_reason = reason
    try:
        engine.validate(family, labels, rescale)
    except BaseException:
        engine.close()
        raise
    return engine


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
        parts = _in_memory_parts(X, y, sample_weight, 1)
        yield from _validated(LocalEngine(parts, X.shape[1], ledger=ledger), family)
        return
    if not is_dask(X):
        import dask.array as da

        X = da.from_array(X, chunks=(X.shape[0], -1))
    delayed_parts, d = _dask_partitions(X, y, sample_weight)
    for delayed_part in delayed_parts:
        if client is None:
            engine = LocalEngine([delayed_part.compute(scheduler="threads")], d, ledger=ledger)
        else:
            engine = DistributedEngine(client, [client.compute(delayed_part)], d, ledger=ledger)
        yield from _validated(engine, family)


def _validated(engine, family):
    """Yield ``engine`` after its validation round; close it when the consumer moves on."""
    with engine:
        engine.validate(family)
        yield engine
