"""Partition holders: the Dask actors that run direct rounds on their worker.

A :class:`PartitionHolder` is pinned to each worker that holds partitions and keeps
references to that worker's persisted partitions (no copy).  A direct round sends each
holder one call (:meth:`PartitionHolder.run`): the holder runs its worker's groups of
partitions on the worker's own threads, as the round's tasks would
(:func:`~daskglm.compute.tree.run_group`), merges their complete subtrees and answers,
and calls the other holders of its team for the driver when asked.  It also keeps the
partition states the engine asked it to keep.  The driver's side, which makes the holders
and sums their answers, is :mod:`daskglm.engine.direct`.
"""

from __future__ import annotations

import asyncio
import contextvars
import pickle
import threading
import time

from ..compute.tree import (
    combine_nodes,
    is_row_additive,
    maximal_nodes,
    run_group,
    run_stateful_group,
)
from . import tasks
from .dask_compat import actor_call, worker_executor
from .device_rows import DeviceRows

__all__ = ["PartitionHolder", "DirectRoundFailed", "call_holder", "pack_message",
           "unpack_message", "CONNECT_SECONDS"]

#: Seconds a direct call waits to connect to a worker before its round runs as tasks.
CONNECT_SECONDS = 5.0


class DirectRoundFailed(Exception):
    """A holder could not be reached or answered outside the kernel: run the round as tasks."""


def pack_message(value):
    """``value`` pickled for a direct call or its answer (cloudpickle: kernels may be
    closures, as in a task's graph)."""
    import cloudpickle

    return cloudpickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def unpack_message(payload):
    """What :func:`pack_message` pickled."""
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
        if tasks.TASK_DELAYS:  # slowed as its tasks would be (daskglm.testing.slow_worker)
            time.sleep(tasks.TASK_DELAYS.get(self.address, 0.0))
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
        if tasks.TASK_DELAYS:
            time.sleep(tasks.TASK_DELAYS.get(self.address, 0.0))
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
        name, states = unpack_message(payload)
        held = self.states.setdefault(name, {})
        for index, state in states.items():
            if state is None:
                held.pop(index, None)
            else:
                held[index] = state
        return pack_message(True)

    async def fetch_states(self, payload):
        """The pickled ``{index: state}`` of the pickled state ``name``."""
        return pack_message(dict(self.states.get(unpack_message(payload), {})))

    async def drop_states(self, payload):
        """Forget the states of the pickled ``name``."""
        self.states.pop(unpack_message(payload), None)
        return pack_message(True)

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
        relayed = [asyncio.ensure_future(call_holder(self.worker.rpc, key, address, call))
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
            return pack_message((False, value, None, 0))
        moved = sum(len(call) for _, _, call in relay)
        merged = [value]
        for answer, received in answers:
            moved += len(answer)
            ok, other, other_timings, other_moved = unpack_message(answer)
            if not ok:
                return pack_message((False, other, None, 0))
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
        return pack_message((True, answer, timings, moved))

    async def _run_own(self, payload):
        """This worker's groups: ``(ok, answer or error, stops, n_leaves)``, ``stops`` one
        ``(worker, thread, seconds, end on this process's clock)`` per group."""
        fn, args, items, n_leaves, state, fresh = unpack_message(payload)
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


async def call_holder(pool, key, address, payload, relay=(), straight=True, scheduler=None,
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


def _picklable(exc):
    try:
        pickle.dumps(exc)
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
