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
(:meth:`~.partition_holders.PartitionHolder.run` with a state name), and putting,
fetching and dropping them are calls too.  The engine then lists :class:`HeldState` markers for them, naming the
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
import itertools
import math
from typing import NamedTuple

from ..compute.tree import combine_nodes, tree_root
from .partition_holders import (
    DirectRoundFailed,
    PartitionHolder,
    call_holder,
    pack_message,
    unpack_message,
)
from .tasks import complete_node_keys

__all__ = ["DirectRounds", "DirectRoundFailed", "HeldState", "DirectMeasurement"]

#: Seconds a round waits for the holders being made; longer, and they have failed.
MAKE_SECONDS = 2.0


#: Numbers the sets of holders an engine makes, so that a state kept by holders since
#: dropped is known to be lost.
_GENERATIONS = itertools.count()


class HeldState(NamedTuple):
    """Where the engine's list of partition states says a state is kept by a partition
    holder: state ``name`` of partition ``index``, in the holders of ``generation``."""

    name: str
    index: int  # type: ignore[assignment]
    generation: int


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


class DirectMeasurement:
    """What a direct round moved and how long its groups computed; in a tree round, the
    partial sums its groups made (``partials``) and those the driver received
    (``gathered``: the rest were merged on their holder)."""

    def __init__(self, sent, returned, calls, groups, spans, partials=0, gathered=0):
        self.sent, self.returned, self.calls = sent, returned, calls
        self.groups, self.spans = groups, spans
        self.partials, self.gathered = partials, gathered

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
        record.bytes_kept_local = 0
        if record.split_every and self.partials:  # a tree round: what its groups made
            result = record.bytes_returned / max(1, record.partials or record.tasks)
            record.partials, record.gathered = self.partials, self.gathered
            record.bytes_returned = int(round(self.partials * result))
            record.bytes_kept_local = int(round((self.partials - self.gathered) * result))
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
            payloads = [pack_message((fn, args, None, n_leaves, state, fresh))] * len(self.groups)
        else:
            payloads = [pack_message((fn, args, [[each[i] for i in group] for group in worker_groups],
                                n_leaves, state, fresh))
                        for worker_groups in self.groups]
        try:
            answers = self.client.sync(self._call_all, payloads)
        except Exception as exc:
            raise DirectRoundFailed(f"{type(exc).__name__}: {exc}") from exc
        outputs, spans, returned = [], [], 0
        for answer, received in answers:
            ok, value, timings, relayed = unpack_message(answer)
            if not ok:
                raise value
            returned += len(answer) + relayed  # to the driver, and within the team
            outputs.append(value)
            for worker, thread, seconds, before_answer in timings:
                stop = received - before_answer
                spans.append((True, (worker, thread), stop - seconds, stop))
        sent = sum(len(payloads[j]) for team in self.teams for j in team
                   if j == team[0] or payloads[j] is not payloads[team[0]])
        if tree:
            n = self.n_partitions
            partials = sum(len(complete_node_keys(group, n)) for group in self.engine_groups)
            measurement = DirectMeasurement(sent, returned, len(payloads), self.n_groups, spans,
                                            partials, sum(len(nodes) for nodes in outputs))
            return combine_nodes(n, *outputs)[tree_root(n)], measurement
        measurement = DirectMeasurement(sent, returned, len(payloads), self.n_groups, spans)
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
        payloads = [pack_message((name, {i: states[i] for group in worker_groups for i in group}))
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
        payload = pack_message(name)
        answers = self._call_each("fetch_states", [payload] * len(self.futures))
        states = [None] * self.n_partitions
        for answer, _ in answers:
            for index, state in unpack_message(answer).items():
                states[index] = state
        return states, DirectMeasurement(len(payload) * len(answers),
                                         sum(len(a) for a, _ in answers), len(answers),
                                         self.n_groups, [])

    def drop_states(self, name):
        """Ask every holder to forget the states kept under ``name`` (best effort: a
        holder that cannot be reached has lost them anyway)."""
        try:
            self._call_each("drop_states", [pack_message(name)] * len(self.futures))
        except DirectRoundFailed:
            pass

    def _call_each(self, method, payloads):
        """Call ``method`` of every holder, holder ``j`` with ``payloads[j]``."""
        self.check()
        client = self.client
        straight = self._reaches_workers()

        async def calls():
            return await asyncio.gather(*(
                call_holder(client.rpc, future.key, worker, payload, (), straight,
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
            calls.append(call_holder(client.rpc, keys[first], self.workers[first],
                                      payloads[first], relay, straight, client.scheduler))
        return await asyncio.gather(*calls)

    def close(self):
        """Release the holders (and their references to the partitions)."""
        for future in self.futures:
            future.release()
        self.futures = []
