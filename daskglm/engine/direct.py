"""Direct rounds: a round's calls sent straight to the workers, past the scheduler.

Every task round costs a scheduler round trip (``python -m benchmarks fixed-cost``
measures it against a direct round's).  A *partition holder* is a Dask actor
pinned to each worker that holds partitions: it keeps references to that worker's
persisted partitions (no copy), and a direct round sends each holder one call.  The
holder runs its worker's groups of partitions on the worker's own threads, as the round's
tasks would (:func:`~daskglm.compute.tree.run_group`), merges their complete subtrees
(:func:`~daskglm.compute.tree.combine_nodes`) and answers; the driver sums the answers in
the same fixed-order tree, so a direct round's result is bit-identical to the task
round's.  On more workers than the engine's ``split_every``, the holders answer in teams:
the driver calls the first holder of each team, which calls the rest of its team and
answers for it (:class:`DirectRounds`), so the driver sums no more answers than a task
round's tree leaves it.

The engine (:class:`~daskglm.engine.distributed.DistributedEngine`) makes the holders
without waiting, while a task round runs, and uses them from the next round.  They are
dropped whenever the partitions change (a transformation, a recovery after a lost worker,
a regrouping) and when a call fails: that round runs again as tasks, where Dask's lineage
and the engine's recovery rebuild what was lost.  A kernel's own error is raised as it
would be from a task.

A holder also keeps partition states that the engine was asked to keep there
(:meth:`~daskglm.engine.Engine.keep_states_in_holders`): a stateful round on them is one
direct call per worker whose kernels leave their new states in the holder
(:meth:`PartitionHolder.run` with a state name), and putting, fetching and dropping them
are calls too.  The engine then lists :class:`HeldState` markers for them, naming the
holders' generation; states kept by holders since dropped are lost, and reset.

The calls use internals of ``distributed`` (:mod:`.dask_compat`, which checks for them);
where the installed version lacks them, every round runs as tasks.

Measurement: the engine pickles each call itself, and the holder its answer, so the bytes
every direct round moves are counted as sent (``bytes_submitted``: the calls;
``bytes_transferred``: the answers; Dask's message envelope, a few hundred bytes per
call, is not in them).  Compute times are timed on the workers and placed on the
driver's clock when each answer arrives, as the scheduler plugin does for tasks.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import math
import pickle
import threading
import time
from typing import NamedTuple

from ..compute.tree import (
    combine_nodes,
    is_row_additive,
    maximal_nodes,
    run_group,
    run_stateful_group,
    tree_root,
)
from . import tasks
from .dask_compat import actor_call, worker_executor
from .device_rows import DeviceRows

__all__ = ["PartitionHolder", "DirectRounds", "DirectRoundFailed", "HeldState"]

#: Seconds a direct call waits to connect to a worker before its round runs as tasks.
CONNECT_SECONDS = 5.0

#: Seconds a round waits for the holders being made; longer, and they have failed.
MAKE_SECONDS = 2.0


class DirectRoundFailed(Exception):
    """A holder could not be reached or answered outside the kernel: run the round as tasks."""


#: Numbers the sets of holders an engine makes, so that a state kept by holders since
#: dropped is known to be lost.
_GENERATIONS = itertools.count()


class HeldState(NamedTuple):
    """Where the engine's list of partition states says a state is kept by a partition
    holder: state ``name`` of partition ``index``, in the holders of ``generation``."""

    name: str
    index: int
    generation: int


def _dumps(value):
    import cloudpickle  # kernels may be closures, as in a task's graph

    return cloudpickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _loads(payload):
    return pickle.loads(payload)


class PartitionHolder:
    """A Dask actor holding one worker's persisted partitions for direct rounds.

    Parameters
    ----------
    groups : list of list of int
        The worker's groups of partition indices, one per worker thread.
    *parts
        The partitions of ``groups``, in order (Dask hands the actor the objects in the
        worker's memory).
    """

    def __init__(self, groups, *parts):
        from distributed import get_worker

        self.groups = [list(group) for group in groups]
        indices = [i for group in self.groups for i in group]
        self.parts = dict(zip(indices, parts))
        self.worker = get_worker()
        self.address = self.worker.address
        self.executor = worker_executor(self.worker)
        #: partition states kept here: ``{name: {partition index: state}}``
        self.states = {}
        #: dense CuPy partitions of one device: each complete subtree of them stacked
        #: (:meth:`_run_stacked`), ``{node: DeviceRows}``; None for other partitions
        self.device_rows = None if DeviceRows.of(list(self.parts.values())) is None else {}

    def _run_group(self, fn, group, items, args, reduce_args, state=None, fresh=()):
        start = time.perf_counter()
        if tasks._TASK_DELAYS:  # slowed as its tasks would be (daskglm.testing.slow_worker)
            time.sleep(tasks._TASK_DELAYS.get(self.address, 0.0))
        parts = [self.parts[i] for i in group]
        if state is None:
            result = run_group(fn, parts, items, args, *reduce_args)
        else:  # a stateful round: the new states stay here
            held = self.states[state]
            states = [None if i in fresh else held.get(i) for i in group]
            result, new_states = run_stateful_group(fn, parts, states, args, *reduce_args)
            held.update(zip(group, new_states))
        stop = time.perf_counter()
        return result, (threading.get_ident(), stop - start, stop)

    def _run_stacked(self, fn, args, n_leaves):
        """A row-additive kernel on this worker's partitions, once per complete subtree of
        them on the rows of its partitions stacked in one device buffer: one launch of
        each kernel and one copy of its sums to the host per subtree, instead of per
        partition.  Returns what :meth:`_run_group` returns for all of them as one group."""
        start = time.perf_counter()
        if tasks._TASK_DELAYS:
            time.sleep(tasks._TASK_DELAYS.get(self.address, 0.0))
        answer = {}
        for node, leaves in maximal_nodes(self.parts, n_leaves):
            rows = self.device_rows.setdefault(node, DeviceRows())
            whole, parts = rows.whole([self.parts[i] for i in leaves])
            self.parts.update(zip(leaves, parts))  # views of the stack, when stacked
            if whole is None:  # no room on the device for the copy
                answer.update(run_group(fn, parts, None, args, leaves, n_leaves))
            else:
                answer[node] = fn(whole, *args)
        stop = time.perf_counter()
        return answer, (threading.get_ident(), stop - start, stop)

    async def put_states(self, payload):
        """Keep the pickled ``(name, {index: state})`` (a state None is dropped)."""
        name, states = _loads(payload)
        held = self.states.setdefault(name, {})
        for index, state in states.items():
            if state is None:
                held.pop(index, None)
            else:
                held[index] = state
        return _dumps(True)

    async def fetch_states(self, payload):
        """The pickled ``{index: state}`` of the pickled state ``name``."""
        return _dumps(dict(self.states.get(_loads(payload), {})))

    async def drop_states(self, payload):
        """Forget the states of the pickled ``name``."""
        self.states.pop(_loads(payload), None)
        return _dumps(True)

    async def run(self, payload, relay=()):
        """Run one round's call: ``payload`` is the pickled ``(fn, args, items, n_leaves,
        state, fresh)``, ``items`` None or one list per group, ``n_leaves`` None for a
        gather round, ``state`` None or the name of the partition states the kernel takes
        and leaves here (``fn(part, state, *args) -> (result, new state)``), ``fresh``
        the partitions whose kernel gets None instead of the state kept.
        ``relay``: ``(holder key, worker address, payload)`` of the holders this one
        calls for the driver (see :class:`DirectRounds`), whose answers it merges with
        its own; a payload None is this holder's own (a call the same for every holder
        crosses from the driver once per team).

        Returns the pickled ``(True, answer, timings, relayed)``, ``answer`` the merged
        complete nodes (tree round) or ``{index: result}``, ``timings`` one ``(worker,
        thread, seconds, seconds before the answer)`` per group, ``relayed`` the bytes of
        the relayed calls and their answers; ``(False, error, None, 0)`` when a kernel
        raised (here or on a relayed holder).

        Raises
        ------
        DirectRoundFailed
            A relayed holder could not be reached or failed outside its kernel.
        """
        relay = [(key, address, payload if call is None else call)
                 for key, address, call in relay]
        relayed = [asyncio.ensure_future(_call_holder(self.worker.rpc, key, address, call))
                   for key, address, call in relay]
        try:
            own = await self._run_own(payload)
        finally:
            answers = await asyncio.gather(*relayed, return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException):
                raise DirectRoundFailed(f"{type(answer).__name__}: {answer}")
        ok, value, stops, n_leaves = own  # stops: (worker, thread, seconds, stop here)
        if not ok:
            return _dumps((False, value, None, 0))
        moved = sum(len(call) for _, _, call in relay)
        merged = [value]
        for answer, received in answers:
            moved += len(answer)
            ok, other, other_timings, other_moved = _loads(answer)
            if not ok:
                return _dumps((False, other, None, 0))
            merged.append(other)
            moved += other_moved
            stops.extend((worker, thread, seconds, received - before)
                         for worker, thread, seconds, before in other_timings)
        if n_leaves is None:
            answer = {i: r for part in merged for i, r in part.items()}
        else:
            answer = combine_nodes(n_leaves, *merged)
        answered = time.perf_counter()
        timings = [(worker, thread, seconds, answered - stop)
                   for worker, thread, seconds, stop in stops]
        return _dumps((True, answer, timings, moved))

    async def _run_own(self, payload):
        """This worker's groups: ``(ok, answer or error, stops, n_leaves)``, ``stops`` one
        ``(worker, thread, seconds, end on this process's clock)`` per group."""
        fn, args, items, n_leaves, state, fresh = _loads(payload)
        if state is not None:
            self.states.setdefault(state, {})
        loop = asyncio.get_running_loop()
        jobs = []
        if (self.device_rows is not None and n_leaves is not None and items is None
                and state is None and is_row_additive(fn)):
            jobs.append(loop.run_in_executor(
                self.executor, contextvars.copy_context().run, self._run_stacked, fn, args,
                n_leaves))
        for g, group in enumerate(self.groups if not jobs else ()):
            reduce_args = () if n_leaves is None else (group, n_leaves)
            # in a copy of this call's context, where get_worker() finds the worker
            jobs.append(loop.run_in_executor(
                self.executor, contextvars.copy_context().run, self._run_group, fn, group,
                None if items is None else items[g], args, reduce_args, state, fresh))
        try:
            outputs = await asyncio.gather(*jobs)
        except Exception as exc:  # the kernel's error, raised on the driver
            return False, _picklable(exc), None, n_leaves
        stops = [(self.address, thread, seconds, stop) for _, (thread, seconds, stop) in outputs]
        if n_leaves is None:
            answer = {i: r for group, (results, _) in zip(self.groups, outputs)
                      for i, r in zip(group, results)}
        else:
            answer = combine_nodes(n_leaves, *(nodes for nodes, _ in outputs))
        return True, answer, stops, n_leaves


async def _call_holder(pool, key, address, payload, relay=(), straight=True, scheduler=None,
                       method="run"):
    """Call ``method`` (:meth:`PartitionHolder.run` unless named) of holder ``key`` on
    ``address`` with ``payload``: ``(pickled answer, time received)``.  Straight to the worker through the connection ``pool`` (with a short
    connect timeout: a worker that does not answer ends the direct rounds, instead of
    Dask's 30 s of retries), or through the ``scheduler``'s proxy.

    Raises
    ------
    DirectRoundFailed
        The holder answered outside its kernel (it was lost, or a relay failed).
    """
    response = await actor_call(pool, scheduler, address, key, method, [payload],
                                {"relay": list(relay)} if relay else {}, straight=straight,
                                connect_seconds=CONNECT_SECONDS)
    received = time.perf_counter()
    if response.get("status") != "OK":
        raise DirectRoundFailed(f"holder on {address}: {response.get('exception')!r}")
    return response["result"], received


def _on_this_machine(address):
    """Whether a worker's address is on the loopback interface (or in this process)."""
    from distributed.comm import get_address_host, parse_address

    try:
        if parse_address(address)[0] == "inproc":
            return True
        host = get_address_host(address)
    except Exception:  # a scheme this process cannot parse: go through the scheduler
        return False
    return host in ("localhost", "::1") or host.startswith("127.")


def _picklable(exc):
    try:
        pickle.dumps(exc)
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


class DirectMeasurement:
    """What a direct round moved and how long its groups computed."""

    def __init__(self, sent, returned, calls, groups, spans):
        self.sent, self.returned, self.calls = sent, returned, calls
        self.groups, self.spans = groups, spans

    def fill(self, record):
        """Write the measured fields of ``record``."""
        from ..accounting.bytemodel import direct_control_bytes
        from ..accounting.round_record import round_timing

        record.route = "direct"
        record.bytes_overhead = direct_control_bytes(record, self.calls)
        record.bytes_submitted = self.sent
        record.bytes_dispatched = 0
        record.bytes_transferred = self.returned
        record.bytes_measured = self.sent + self.returned
        record.transfers = record.seconds_transferring = None  # no data requests: calls
        tasks = max(1, record.tasks)
        record.bytes_kept_local = (int(round((self.groups - self.calls) * record.bytes_returned
                                             / tasks)) if record.split_every else 0)
        for name, value in round_timing(self.spans).items():
            setattr(record, name, value)


class DirectRounds:
    """The partition holders of one set of persisted partitions, and the rounds run on them.

    Parameters
    ----------
    client : distributed.Client
    parts : list of Future
        The engine's partitions.
    groups : list of list of int
        The engine's groups (one per worker thread), each on one worker.
    keys : callable
        ``keys(n)``: the keys of the ``n`` holders' tasks (named for the round that makes
        them, which the ledger measures with them).
    fan_in : int
        The most answers one summer takes (the engine's ``split_every``).  With at most
        ``fan_in`` holders the driver calls each and sums their answers; with more (at most
        ``fan_in ** 2``) it calls one holder of each *team* of at most ``fan_in``
        consecutive holders, which calls the others of its team for it (one message each
        way between workers) and answers with the team's merged sum: the driver still
        sums at most ``fan_in`` answers, as it does the top of a task round's tree.

    Raises
    ------
    DirectRoundFailed
        A group's partitions are not on one known worker, or there are more workers than
        ``fan_in ** 2``.
    """

    def __init__(self, client, parts, groups, keys, fan_in):
        self.client = client
        self.generation = next(_GENERATIONS)
        self.engine_groups = [list(group) for group in groups]
        self._made = False
        self.n_partitions = len(parts)
        self.n_groups = len(groups)
        holders = client.who_has(parts)
        by_worker = {}
        for group in self.engine_groups:
            where = {(holders.get(parts[i].key) or (None,))[0] for i in group}
            if len(where) != 1 or None in where:  # a holder must not pull partitions over
                raise DirectRoundFailed(f"partitions {group} are not on one known worker")
            by_worker.setdefault(where.pop(), []).append(group)
        n_holders = len(by_worker)
        if n_holders > fan_in ** 2:
            raise DirectRoundFailed(f"{n_holders} workers: more than {fan_in ** 2} holders "
                                    f"for teams of at most {fan_in} to sum")
        self.workers = sorted(by_worker)
        self.groups = [by_worker[w] for w in self.workers]
        size = math.ceil(n_holders / fan_in)  # holders per team, its caller included
        self.teams = [list(range(start, min(start + size, n_holders)))
                      for start in range(0, n_holders, size)]
        names = keys(len(self.workers))
        # pinned: a holder must never be made again, empty-handed, on another worker
        self.futures = [
            client.submit(PartitionHolder, worker_groups,
                          *(parts[i] for group in worker_groups for i in group),
                          actor=True, workers=[worker], allow_other_workers=False, pure=False,
                          key=name)
            for worker, worker_groups, name in zip(self.workers, self.groups, names)
        ]

    def check(self):
        """Make sure every holder is there: wait for them the first time (they were
        submitted a round before), then only look at their futures.

        Raises
        ------
        DirectRoundFailed
            A holder failed, was not made within :data:`MAKE_SECONDS`, or was lost with
            its worker.
        """
        from concurrent.futures import CancelledError

        from distributed import wait

        if not self._made:
            try:
                wait(self.futures, timeout=MAKE_SECONDS)
            except TimeoutError:
                raise DirectRoundFailed(
                    f"partition holders not made within {MAKE_SECONDS} s") from None
            except CancelledError:  # a holder, or a partition it takes, lost with a worker
                raise DirectRoundFailed("partition holders were cancelled") from None
        statuses = {future.status for future in self.futures}
        if statuses != {"finished"}:
            raise DirectRoundFailed(f"partition holders are {sorted(statuses)}")
        self._made = True

    def run(self, fn, args, each, tree, state=None, fresh=frozenset()):
        """One round on the holders: ``(tree sum or per-partition results, measurement)``.

        With ``state`` (a name), ``fn(part, state_i, *args)`` returns ``(result, new
        state_i)`` and the holders keep the new states under that name; the partitions in
        ``fresh`` get None instead of the state kept.

        Raises
        ------
        DirectRoundFailed
            A holder could not be reached or failed outside the kernel.
        """
        n_leaves = self.n_partitions if tree else None
        if each is None:  # the same call to every holder: pickled once
            payloads = [_dumps((fn, args, None, n_leaves, state, fresh))] * len(self.groups)
        else:
            payloads = [_dumps((fn, args, [[each[i] for i in group] for group in worker_groups],
                                n_leaves, state, fresh))
                        for worker_groups in self.groups]
        try:
            answers = self.client.sync(self._call_all, payloads)
        except Exception as exc:
            raise DirectRoundFailed(f"{type(exc).__name__}: {exc}") from exc
        outputs, spans, returned = [], [], 0
        for answer, received in answers:
            ok, value, timings, relayed = _loads(answer)
            if not ok:
                raise value
            returned += len(answer) + relayed  # to the driver, and within the team
            outputs.append(value)
            for worker, thread, seconds, before_answer in timings:
                stop = received - before_answer
                spans.append((True, (worker, thread), stop - seconds, stop))
        sent = sum(len(payloads[j]) for team in self.teams for j in team
                   if j == team[0] or payloads[j] is not payloads[team[0]])
        measurement = DirectMeasurement(sent, returned, len(payloads), self.n_groups, spans)
        if tree:
            return combine_nodes(self.n_partitions, *outputs)[tree_root(self.n_partitions)], \
                measurement
        results = [None] * self.n_partitions
        for answer in outputs:
            for i, item in answer.items():
                results[i] = item
        return results, measurement

    def put_states(self, name, states):
        """Give each holder the states of its partitions (one call each): the measurement
        of the calls.

        Raises
        ------
        DirectRoundFailed
            A holder could not be reached.
        """
        payloads = [_dumps((name, {i: states[i] for group in worker_groups for i in group}))
                    for worker_groups in self.groups]
        answers = self._call_each("put_states", payloads)
        return DirectMeasurement(sum(map(len, payloads)), sum(len(a) for a, _ in answers),
                                 len(payloads), self.n_groups, [])

    def fetch_states(self, name):
        """``(states, measurement)``: the states kept under ``name``, one per partition
        (None where a holder keeps none).

        Raises
        ------
        DirectRoundFailed
            A holder could not be reached.
        """
        payload = _dumps(name)
        answers = self._call_each("fetch_states", [payload] * len(self.futures))
        states = [None] * self.n_partitions
        for answer, _ in answers:
            for index, state in _loads(answer).items():
                states[index] = state
        return states, DirectMeasurement(len(payload) * len(answers),
                                         sum(len(a) for a, _ in answers), len(answers),
                                         self.n_groups, [])

    def drop_states(self, name):
        """Ask every holder to forget the states kept under ``name`` (best effort: a
        holder that cannot be reached has lost them anyway)."""
        try:
            self._call_each("drop_states", [_dumps(name)] * len(self.futures))
        except DirectRoundFailed:
            pass

    def _call_each(self, method, payloads):
        """Call ``method`` of every holder, holder ``j`` with ``payloads[j]``."""
        self.check()
        client = self.client
        straight = self._reaches_workers()

        async def calls():
            return await asyncio.gather(*(
                _call_holder(client.rpc, future.key, worker, payload, (), straight,
                             client.scheduler, method=method)
                for future, worker, payload in zip(self.futures, self.workers, payloads)))

        try:
            return client.sync(calls)
        except Exception as exc:
            raise DirectRoundFailed(f"{type(exc).__name__}: {exc}") from exc

    def _reaches_workers(self):
        """Whether calls go straight to the workers: as the client says, and by default
        when every holder's worker listens on this machine (else through the scheduler,
        which any client reaches)."""
        direct = self.client.direct_to_workers
        if direct is not None:
            return bool(direct)
        return all(_on_this_machine(worker) for worker in self.workers)

    async def _call_all(self, payloads):
        """Call the first holder of every team, which calls the rest of its team."""
        client = self.client
        straight = self._reaches_workers()
        keys = [future.key for future in self.futures]
        calls = []
        for team in self.teams:
            first, rest = team[0], team[1:]
            # a call the same for every holder crosses from the driver once per team
            relay = [(keys[j], self.workers[j],
                      None if payloads[j] is payloads[first] else payloads[j]) for j in rest]
            calls.append(_call_holder(client.rpc, keys[first], self.workers[first],
                                      payloads[first], relay, straight, client.scheduler))
        return await asyncio.gather(*calls)

    def close(self):
        """Release the holders (and their references to the partitions)."""
        for future in self.futures:
            future.release()
        self.futures = []
