"""The engine's verbs and what every backend shares: rounds, recovery, state, deadlines,
validation and transformations of the partitions.

:class:`Engine` defines every verb once; a backend (:mod:`.local`, :mod:`.distributed`)
supplies how a round executes (``_execute``, ``_execute_stateful``, ``_execute_deadline``)
and how partitions are transformed where they live."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..accounting.bytemodel import nbytes
from ..accounting.kinds import Kind
from ..accounting.ledger import CommReport
from ..compute.summaries import (
    PartitionSummary,
    column_max_abs,
    encode_positive,
    partition_weight,
    scale_columns,
    summarize,
)
from ..compute.tree import partial_tree_sum
from .measure import Timer

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



def is_dask(obj) -> bool:
    """True for Dask collections (arrays, dataframes, series)."""
    return hasattr(obj, "__dask_graph__") and hasattr(obj, "__dask_keys__")



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
        #: open parameter holders (see :meth:`parameter_holder`)
        self._holders = []

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
        them (:func:`~daskglm.compute.tree.partial_tree_sum`): the sum depends only on which
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

    # asynchronous work --------------------------------------------------------------
    def map_as_completed(self, fn, *args, kind):
        """One round consumed as it completes: ``fn(part, *args)`` as one task per
        partition (on the partition's worker), yielding ``(index, result)`` in completion
        order, each partition at most once.

        Returns an :class:`~daskglm.engine.asynchronous.AsCompleted` iterator; the tasks are
        submitted now.  Stopping early (``close()``, ``break`` inside ``with``, or dropping
        the iterator) cancels the tasks not consumed.  A partition whose task is lost with a
        worker is skipped and listed in ``failed`` (never a hang): scattered partitions are
        rebuilt by the next round, Dask recomputes those with lineage (they are then
        yielded late, not failed).  A kernel's error is raised.  ONE ledger record is written
        when the iteration ends: ``P`` tasks, the arguments sent ``P`` times, the bytes of
        the results yielded, ``dropped`` = the partitions not yielded (failed or cancelled).
        """
        from .asynchronous import AsCompleted

        self._recover()  # partitions lost in an earlier round are rebuilt first
        timer = Timer().__enter__()
        probe = self._probe(kind).__enter__()
        n = self.n_partitions
        try:
            stream, cancel = self._submit_as_completed(fn, args, probe)
        except BaseException:
            probe.__exit__(None, None, None)
            raise

        def finish(it):
            probe.__exit__(None, None, None)
            timer.__exit__()
            done = set(it.yielded) | set(it.failed)
            it.cancelled = tuple(i for i in range(n) if i not in done)
            record = self.ledger.record(kind, n, n * nbytes(args), it._returned, timer.seconds,
                                        partitions=n, groups=n, probe=probe)
            record.dropped = tuple(sorted(set(it.failed) | set(it.cancelled)))
            if self.cache == "none":
                record.bytes_read = self.data_bytes * len(it.yielded) // max(n, 1)
            return record

        return AsCompleted(stream, cancel, finish)

    def _submit_as_completed(self, fn, args, probe):
        """Submit one task per partition; return ``(stream, cancel)``: an iterator of
        ``(index, ok, result)`` in completion order (``ok`` False for a partition lost
        with a worker) and a function releasing what is not consumed."""
        raise NotImplementedError

    def parameter_holder(self, params):
        """A long-lived parameter holder, usable on the driver and inside partition tasks
        (pass the handle as an argument of the kernel): ``pull() -> (version, params)``,
        ``push(delta, based_on_version) -> version``, ``stats()``.

        On a cluster a :class:`~daskglm.engine.asynchronous.ParameterHolder` runs as a
        Dask Actor on one worker and the handle is an
        :class:`~daskglm.engine.asynchronous.ActorHolder`; in this process the handle is
        the holder itself.  Its traffic is written to the ledger by :meth:`close_holder`
        (or :meth:`close`).
        """
        handle = self._make_holder(np.asarray(params, dtype=np.float64))
        self._holders.append(handle)
        return handle

    def close_holder(self, handle):
        """Release a holder and write its traffic to the ledger: one ``push`` and one
        ``pull`` record (tasks = calls, bytes as :meth:`ParameterHolder.stats` counts them,
        ``seconds`` 0: the calls ran inside other rounds' tasks or on the driver); the
        ``push`` record carries the staleness histogram.  Returns the final stats, or None
        when the holder was lost with its worker (its traffic is then not recorded).
        """
        from .asynchronous import HolderLostError

        if not any(h is handle for h in self._holders):
            raise ValueError(f"{handle!r} is not an open holder of this engine.")
        self._holders = [h for h in self._holders if h is not handle]
        try:
            stats = handle.stats()
        except HolderLostError:
            stats = None
        finally:
            self._release_holder(handle)
        if stats is None:
            return None
        push = self.ledger.record(Kind.PUSH, stats["pushes"], stats["bytes_pushed"], 0, 0.0)
        push.staleness = dict(stats["staleness"])
        self.ledger.record(Kind.PULL, stats["pulls"], 0, stats["bytes_pulled"], 0.0)
        return stats

    def _close_holders(self):
        for handle in list(self._holders):
            self.close_holder(handle)

    def _make_holder(self, params):
        raise NotImplementedError

    def _release_holder(self, handle):
        """Let go of a holder (nothing to do in this process)."""

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
        """What measures one round of ``kind`` (see :mod:`daskglm.accounting.ledger`)."""
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
