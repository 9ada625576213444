"""The cluster backend: partitions persisted on the workers of a ``distributed`` cluster."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import NamedTuple

import numpy as np

from ..accounting.bytemodel import nbytes
from ..compute.tree import (
    combine_nodes,
    complete_nodes,
    node_start,
    tree_root,
)
from .base import Engine
from .dask_compat import cancel as cancel_futures
from .dask_compat import cluster_workers, warn_without_direct_rounds
from .deadline import Arrivals
from .direct import DirectRoundFailed, DirectRounds, HeldState
from .measure import DaskMeter
from .partitions import scatter_partitions
from .tasks import (
    _complete_node_keys,
    _identity,
    _pick_output,
    _pick_state,
    _run_stateful_task,
    _run_task,
)
from .topologies import RING_KINDS, ring_sum, server_sum

#: Failed direct rounds after which an engine runs every round as tasks.
MAX_DIRECT_FAILURES = 2

#: Broadcast arguments larger than this are scattered to the workers once per round
#: instead of being embedded in every task.
SCATTER_BYTES = 1 << 20

#: Prefix of the keys of the replicas that backup tasks of deadline rounds read (not a
#: round's key: the measurements of rounds do not look at them).
REPLICA_PREFIX = "daskglm-replica-"


class Backup(NamedTuple):
    """A partition's replica on another worker, read by its backup tasks."""

    worker: str
    replica: object  # the future of the copy, pinned to ``worker``


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


class DistributedEngine(Engine):
    """Partitions persisted on the workers of a ``distributed`` cluster.

    A round submits one task per group of partitions that share a worker thread
    (broadcast arguments embedded, or scattered once when large), then the combine tasks
    of the fixed-order reduction tree on the workers while more than ``split_every``
    partials are left, and gathers the last few to sum them on the driver.  The
    tree depends on partition indices only (:func:`~daskglm.compute.tree.complete_nodes`), so
    results do not depend on where partitions live.

    With ``direct_rounds`` (the default), the stateless rounds of tree topology run as
    one call per worker to a partition holder once the holders are ready, past the
    scheduler (:mod:`daskglm.engine.direct`): the same results, without a scheduler round
    trip per round.  Only with grouped partitions on at most ``split_every ** 2`` workers
    (beyond ``split_every``, the holders answer in teams, so that the driver gathers as
    many answers as a task round's tree leaves it partials).

    Deadline rounds run a backup task, on a replica kept on a worker that met an
    earlier deadline, for each partition that missed one (:meth:`_execute_deadline`).

    Partitions computed from Dask collections are recomputed by Dask when a worker is
    lost.  In-memory input has no such lineage: the engine keeps its partitions on the
    driver (``sources``, views of the caller's arrays where no conversion was needed) and
    scatters the lost ones again, with every transformation applied since, to the workers
    running then (:func:`~daskglm.engine.partitions.scatter_partitions`).  Partitions
    lost while the engine is made or transformed are rebuilt there too.
    """

    remote_rounds = True

    def __init__(self, client, part_futures, n_features, ledger=None, split_every=8,
                 group_partitions=True, sources=None, direct_rounds=True):
        super().__init__(n_features, ledger, split_every)
        self.client = client
        self.parts = list(part_futures)
        self.n_partitions = len(self.parts)
        self.meter = DaskMeter.for_client(client)
        self.group_partitions = group_partitions
        self.sources = sources
        self._transforms = []
        self._holder_futures = {}
        #: how tree rounds sum their partials (:mod:`daskglm.engine.topologies`)
        self.topology = "tree"
        #: whether stateless rounds may run on partition holders
        self.direct_rounds = bool(direct_rounds) and warn_without_direct_rounds()
        self._direct = None
        self._direct_failures = 0
        #: replicas of the partitions that missed a deadline round, by index
        self._backups = {}
        self._recovering(self._regroup)  # partitions lost while they were sent: sent again

    def _regroup(self):
        if self.group_partitions:
            self.groups, workers = _groups_by_thread(self.client, self.parts)
        else:  # one task per partition, placed by Dask (partitions may not exist yet)
            self.groups, workers = [[i] for i in range(self.n_partitions)], []
        #: The worker holding each group's partitions when grouped (by the group's
        #: indices); a group not in it runs where Dask places it.
        self.group_workers = {tuple(group): worker for group, worker in zip(self.groups, workers)
                              if worker is not None}

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
        failures = self._direct_failures
        direct = self._ready_direct()
        if direct is not None:
            try:
                result, probe.direct = direct.run(fn, args, each, tree)
                return result, 0
            except DirectRoundFailed:
                self._give_up_direct()
        # not in a round whose holders just failed (its partitions may be lost)
        if failures == self._direct_failures:
            self._request_direct(probe)  # made while this round runs, used from the next
        created = []  # released at once if the round fails or is interrupted
        try:
            return self._submit(fn, args, each, tree, probe, created)
        except BaseException:
            for future in created:
                future.release()
            raise

    # direct rounds ------------------------------------------------------------------
    def _direct_applies(self):
        return (self.direct_rounds and self.group_partitions and self.cache == "memory"
                and self.topology == "tree")

    def _ready_direct(self):
        """The partition holders, when they are there for the current partitions; else
        None (after dropping holders that failed or are for other groups)."""
        direct = self._direct
        if direct is None or not self._direct_applies():
            return None
        if direct.engine_groups != self.groups:  # regrouped: holders for the new groups
            self._drop_direct()
            return None
        try:
            direct.check()
        except DirectRoundFailed:
            self._give_up_direct()
            return None
        return direct

    def _holders_now(self):
        """The partition holders if they are for the current partitions (no checks, no
        side effects: :meth:`_ready_direct` checks them before a round)."""
        direct = self._direct
        if direct is None or not self._direct_applies() or direct.engine_groups != self.groups:
            return None
        return direct

    def _request_direct(self, probe):
        """Start making partition holders for the current partitions (without waiting),
        grouped by where the partitions are now, as part of ``probe``'s round."""
        if self._direct is not None or not self._direct_applies():
            return
        try:
            if self._direct_failures:  # partitions lost may have been recomputed elsewhere
                self._regroup()
            self._direct = DirectRounds(self.client, self.parts, self.groups,
                                        probe.holder_keys, fan_in=self.split_every)
        except Exception:  # e.g. a group whose worker is unknown: stay on tasks
            self.direct_rounds = False
            return
        probe.holders = len(self._direct.workers)

    def _drop_direct(self):
        if self._direct is not None:
            self._direct.close()
            self._direct = None

    def _give_up_direct(self):
        """Drop the holders; after :data:`MAX_DIRECT_FAILURES` failures, run every later
        round as tasks (else the next task round makes new ones)."""
        self._drop_direct()
        self._direct_failures += 1
        if self._direct_failures >= MAX_DIRECT_FAILURES:
            self.direct_rounds = False

    def _submit(self, fn, args, each, tree, probe, created):
        sent = self._broadcast(args, created)
        groups = self.groups
        reduce_args = [(group, self.n_partitions) for group in groups] if tree \
            else [()] * len(groups)
        keys = probe.keys(len(groups))
        futures = [None] * len(groups)
        # each group's task restricted (loosely: anywhere if that worker is gone) to the
        # worker holding its partitions, where the sharded fits' per-worker state expects
        # it: unrestricted, Dask may run it on another worker holding a copy of them
        by_worker = {}
        for g, group in enumerate(groups):
            by_worker.setdefault(self.group_workers.get(tuple(group)), []).append(g)
        for worker, indices in by_worker.items():
            place = {} if worker is None else {"workers": [worker], "allow_other_workers": True}
            mapped = self.client.map(
                _run_task,
                [fn] * len(indices),
                [[self.parts[i] for i in groups[g]] for g in indices],
                [None if each is None else [each[i] for i in groups[g]] for g in indices],
                [sent] * len(indices),
                [reduce_args[g] for g in indices],
                key=[keys[g] for g in indices],
                pure=False,
                **place,
            )
            for g, future in zip(indices, mapped):
                futures[g] = future
        created.extend(futures)
        if tree:
            return self._sum_groups(futures, probe, created)
        results = [None] * self.n_partitions
        for group, group_results in zip(groups, self.client.gather(futures)):
            for index, item in zip(group, group_results):
                results[index] = item
        return results, 0

    def _sum_groups(self, group_futures, probe, created):
        """Sum the groups' results by the engine's topology: ``(sum, combine tasks)``."""
        topology = self.topology
        if len(group_futures) == 1 or (topology == "ring" and probe.kind not in RING_KINDS):
            topology = "tree"
        if topology == "tree":
            return self._tree(group_futures, probe, created)
        probe.topology = topology
        summed = server_sum if topology == "server" else ring_sum
        return summed(self, group_futures, probe, created)

    def _tree(self, group_futures, probe, created, groups=None):
        """Sum the groups' results (of ``groups``, the engine's groups unless given);
        return ``(root sum, combine tasks)``.

        Each group's task returns the complete subtrees of its partitions; combine tasks
        of fan-in ``split_every`` on the workers merge them (in order of position) until
        at most ``split_every`` are left, which the driver gathers and sums: a root task
        would cost one more scheduler round trip and move the same bytes.  Which worker
        holds what changes how much each task sends, never the sum.
        """
        n = self.n_partitions
        level = sorted(
            ((future, _complete_node_keys(group, n))
             for group, future in zip(self.groups if groups is None else groups, group_futures)),
            key=lambda item: node_start(item[1][0]),
        )
        combines = 0
        while len(level) > self.split_every:
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
        tops = self.client.gather([future for future, _ in level])
        return combine_nodes(n, *tops)[tree_root(n)], combines

    def collect_measurements(self):
        """Fetch Dask's counters for the rounds not measured yet into their records."""
        try:
            self.meter.collect()
        except Exception:  # measuring never breaks a fit: those rounds stay unmeasured
            pass

    # partition state ----------------------------------------------------------------
    def _execute_stateful(self, fn, states, args, tree, probe, name=None):
        direct = self._ready_direct() if name in self._held_names else None
        if direct is not None and all(s is None or _kept_by(s, direct) for s in states):
            fresh = frozenset(i for i, s in enumerate(states) if s is None)
            try:
                result, probe.direct = direct.run(fn, args, None, tree, state=name,
                                                  fresh=fresh)
            except DirectRoundFailed:
                self._give_up_direct()  # with the states its holders kept
                raise HeldStatesLost(name) from None
            kept = [HeldState(name, i, direct.generation) for i in range(self.n_partitions)]
            return result, kept, 0, 0
        if any(isinstance(s, HeldState) for s in states):  # their holders are gone
            raise HeldStatesLost(name)
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
                if future is not None and (not _kept_by(future, self._holders_now()) if
                                           isinstance(future, HeldState) else
                                           future.status in ("cancelled", "error"))]

    def _fetch(self, states, probe):
        kept = [s for s in states if isinstance(s, HeldState)]
        if not kept:
            return self._fetch_futures(states, probe)
        fetched, tasks = [None] * self.n_partitions, 0
        direct = self._ready_direct()
        if direct is not None and all(_kept_by(s, direct) for s in kept):
            try:
                from_holders, probe.direct = direct.fetch_states(kept[0].name)
            except DirectRoundFailed:
                self._give_up_direct()  # the states are lost with the holders: None
            else:
                for s in kept:
                    fetched[s.index] = from_holders[s.index]
        futures = [None if isinstance(s, HeldState) else s for s in states]
        if any(f is not None for f in futures):
            from_futures, tasks = self._fetch_futures(futures, probe)
            for i, item in enumerate(from_futures):
                if item is not None:
                    fetched[i] = item
        return fetched, tasks

    def _fetch_futures(self, states, probe):
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

    def _put(self, states, probe, name=None):
        direct = None
        if name in self._held_names:
            self._request_direct(probe)  # new holders, after the last were dropped
            direct = self._ready_direct()
        if direct is not None:
            try:
                probe.direct = direct.put_states(name, states)
            except DirectRoundFailed:
                self._give_up_direct()
            else:
                return [None if s is None else HeldState(name, i, direct.generation)
                        for i, s in enumerate(states)], 0
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
        # states kept by holders are replaced there by the round after, or dropped with
        # the holders (:meth:`drop_state` forgets them)
        for future in states:
            if future is not None and not isinstance(future, HeldState):
                future.release()

    def drop_state(self, state):
        states = self._states.get(state) or ()
        direct = self._holders_now()
        if any(_kept_by(s, direct) for s in states if isinstance(s, HeldState)):
            direct.drop_states(state)
        super().drop_state(state)

    # deadline rounds ----------------------------------------------------------------
    def _placement(self, indices):
        """Submit options that place a task on the worker holding partition ``indices[0]``.

        A loose restriction: Dask may still run the task elsewhere if that worker is gone,
        and its work stealing may hand a straggler's queued task to an idle worker (which
        copies the partition; the memory manager may then keep only that copy).  Without
        it, Dask spreads the tasks of a round whose duration it does not know yet over
        idle workers, moving small partitions (and making a state land on the wrong
        worker).
        """
        holders = self.client.who_has([self.parts[i] for i in indices])
        places = []
        for i in indices:
            worker = holders.get(self.parts[i].key) or ()
            places.append({"workers": [worker[0]], "allow_other_workers": True} if worker
                          else {})
        return places

    def _partition_futures(self, fn, sent, probe, each=None):
        """One task per partition, where it lives: ``run_group(fn, [part], items, sent)``
        with ``items`` None or ``[each[i]]``."""
        n = self.n_partitions
        keys = probe.keys(n)
        places = self._placement(range(n))
        return [self.client.submit(_run_task, fn, [part], None if each is None else [each[i]],
                                   sent, (), key=keys[i], pure=False, **places[i])
                for i, part in enumerate(self.parts)]

    def _execute_deadline(self, fn, args, probe, cutoff, each=None):
        """The partitions' tasks, and backup tasks of those with a replica
        (:meth:`_deadline_copies`); per partition the copy that finishes first counts
        (:meth:`_await_arrivals`) and the others are cancelled.  Partitions that missed
        the round get a replica for the next ones (:meth:`_plan_backups`)."""
        from distributed import wait

        def wait_first(pending, timeout):
            try:
                return wait(list(pending), timeout=timeout, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                return set()

        created = []
        try:
            sent = self._broadcast(args, created)
            if self.cache == "memory":
                primaries, backups, where = self._deadline_copies(fn, sent, probe, each)
            else:  # read from their source every round, partitions live nowhere: no copies
                primaries = dict(enumerate(self._partition_futures(fn, sent, probe, each)))
                backups, where = {}, {}
            created.extend(primaries.values())
            created.extend(backups.values())
            copies = [[c[i] for c in (primaries, backups) if i in c]
                      for i in range(self.n_partitions)]
            first = self._await_arrivals(copies, cutoff, wait_first, covered=set(backups))
            late = [future for i, futures in enumerate(copies) for future in futures
                    if first.get(i) is not future]
            if late:
                cancel_futures(self.client, late, "past the round's deadline")
            arrived = sorted(first)
            gathered = self.client.gather([first[i] for i in arrived])
            results = {i: group_results[0] for i, group_results in zip(arrived, gathered)}
            copied, bytes_copied = self._plan_backups(copies, first, primaries, where)
            return Arrivals(results, tuple(sorted(backups)),
                            tuple(sorted(set(backups) - set(primaries))), copied, bytes_copied)
        finally:
            for future in created:
                future.release()

    def _deadline_copies(self, fn, sent, probe, each):
        """Submit the round's copies of each partition: ``(primaries, backups, where)``.

        A partition's own task (its *primary*) runs on a worker that holds it, other than
        its replica's worker: making the replica left a copy of the partition there too,
        for a while.  When that worker is the only one left holding it (Dask's memory
        manager dropped the other copy), the partition has moved there and runs as its
        backup task only.  A partition with a live replica (:meth:`_live_backups`) runs
        a backup task on the replica's worker, pinned there at a lower priority than
        that worker's own tasks.

        Returns
        -------
        primaries, backups : dict
            ``{index: future}`` of the partitions' own tasks and of the backup tasks.
        where : dict
            ``{future: worker}`` of every copy placed on a worker.
        """
        n = self.n_partitions
        replicas = self._live_backups()
        holders = self.client.who_has(self.parts)
        keys = probe.keys(n + len(replicas))  # named for the round: measured with it
        primaries, backups, where = {}, {}, {}
        for i, part in enumerate(self.parts):
            held = list(holders.get(part.key) or ())
            if i in replicas and replicas[i].worker in held:
                held.remove(replicas[i].worker)
                if not held:
                    continue
            place = {"workers": held[:1], "allow_other_workers": True} if held else {}
            primaries[i] = self.client.submit(
                _run_task, fn, [part], None if each is None else [each[i]], sent, (),
                key=keys[i], pure=False, **place)
            if held:
                where[primaries[i]] = held[0]
        for key, (i, backup) in zip(keys[n:], sorted(replicas.items())):
            backups[i] = self.client.submit(
                _run_task, fn, [backup.replica], None if each is None else [each[i]], sent,
                (), key=key, pure=False, workers=[backup.worker], allow_other_workers=False,
                priority=-1)
            where[backups[i]] = backup.worker
        return primaries, backups, where

    def _live_backups(self):
        """The backups whose replica is in memory, or being copied to a running worker;
        the others (lost with their worker) are dropped."""
        for i, backup in list(self._backups.items()):
            if backup.replica.status in ("lost", "cancelled", "error"):
                self._drop_backup(i)
        if any(backup.replica.status == "pending" for backup in self._backups.values()):
            running = self.client.nthreads()
            for i, backup in list(self._backups.items()):
                if backup.worker not in running:
                    self._drop_backup(i)
        return dict(self._backups)

    def _plan_backups(self, copies, first, primaries, where):
        """After a round: copy each partition that every one of its copies missed to a
        worker that met the round, for backup tasks from the next round on.

        A worker met the round when a copy it ran arrived first and none of its copies
        missed the round, nor was a partition's own task beaten by a backup.  Each
        partition goes to the one with the fewest partitions' tasks and replicas (then by
        address), never where a copy of it ran this round; the copy starts now (a task
        pinned to that worker whose future the engine keeps), and the replica it makes
        stays until the engine closes, the partitions change, or the worker is lost.
        A partition that had a replica moves it there.

        Returns
        -------
        copied : tuple of int
            The partitions being copied.
        bytes_copied : int
            Their bytes, as Dask sizes them.
        """
        dropped = [i for i in range(self.n_partitions) if i not in first]
        if not dropped or self.cache != "memory":
            return (), 0
        late = {where.get(future) for i in dropped for future in copies[i]}
        late |= {where.get(primaries[i]) for i in first
                 if i in primaries and first[i] is not primaries[i]}
        met = {where.get(future) for future in first.values()}
        candidates = sorted(worker for worker in met - late if worker is not None)
        load = Counter(where.values())
        copied = []
        for i in dropped:
            ran = {where.get(future) for future in copies[i]}
            options = [worker for worker in candidates if worker not in ran]
            if not options:
                continue
            worker = min(options, key=lambda w: (load[w], w))
            self._drop_backup(i)
            replica = self.client.submit(_identity, self.parts[i], workers=[worker],
                                         allow_other_workers=False, pure=False,
                                         key=f"{REPLICA_PREFIX}{uuid.uuid4().hex}")
            self._backups[i] = Backup(worker, replica)
            load[worker] += 1
            copied.append(i)
        if not copied:
            return (), 0
        keys = [self.parts[i].key for i in copied]
        sizes = self.client.nbytes(keys, summary=False)
        return tuple(copied), int(sum(sizes.get(key, 0) for key in keys))

    def _drop_backup(self, index):
        backup = self._backups.pop(index, None)
        if backup is not None:
            backup.replica.release()

    def _drop_backups(self):
        """Release every replica (the partitions changed, or the engine closes)."""
        for index in list(self._backups):
            self._drop_backup(index)

    # asynchronous work --------------------------------------------------------------
    def _submit_as_completed(self, fn, args, probe):
        from distributed import as_completed

        created = []
        try:
            sent = self._broadcast(args, created)
            futures = self._partition_futures(fn, sent, probe)
        except BaseException:
            for future in created:
                future.release()
            raise
        created.extend(futures)
        index = {future.key: i for i, future in enumerate(futures)}
        pending = dict(index)
        completed = as_completed(futures)
        client = self.client

        def stream():
            for future in completed:
                i = pending.pop(future.key, None)
                if i is None:
                    continue
                if future.status == "finished":
                    try:
                        value = future.result()[0]
                    except Exception as exc:  # lost between finishing and the gather
                        if not is_worker_loss(exc):
                            raise
                        yield i, False, None
                        continue
                    future.release()
                    yield i, True, value
                elif future.status == "error" and not is_worker_loss(future.exception()):
                    future.result()  # raises the kernel's error
                else:  # cancelled, lost, or killed with its worker
                    yield i, False, None

        def cancel():
            completed.clear()
            left = [futures[i] for i in pending.values()]
            if left:
                cancel_futures(client, left, "not consumed")
            for future in created:
                future.release()

        return stream(), cancel

    def _make_holder(self, params):
        import uuid

        from .parameter_holders import ActorHolder, ParameterHolder

        # the worker holding the fewest partitions (then the first by address)
        holders = self.client.who_has(self.parts) if self.cache == "memory" else {}
        load = {address: 0 for address in cluster_workers(self.client)}
        for workers in holders.values():
            for address in workers[:1]:
                load[address] = load.get(address, 0) + 1
        worker = min(sorted(load), key=load.get)
        # pinned to its worker: Dask must never recreate it, empty, elsewhere
        future = self.client.submit(ParameterHolder, params, actor=True, workers=[worker],
                                    allow_other_workers=False, pure=False,
                                    key=f"daskglm-holder-{uuid.uuid4().hex}")
        handle = ActorHolder(future.result(), worker)
        self._holder_futures[id(handle)] = future
        return handle

    def _release_holder(self, handle):
        future = self._holder_futures.pop(id(handle), None)
        if future is not None:
            future.release()

    def _lost(self, exc):
        if isinstance(exc, HeldStatesLost):  # run again, with the lost states reset
            return True
        return isinstance(exc, cancellation_errors()) and (
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
            # a partition whose making raised (bad data, say) says why
            errors = [self.parts[i].exception() for i in lost if self.parts[i].status == "error"]
            if errors:
                raise errors[0]
            raise RuntimeError(
                f"Partitions {lost} were lost with a worker and cannot be recomputed."
            )
        parts = []
        for i in lost:
            part = self.sources[i]
            for fn, arg in self._transforms:
                part = fn(part, arg)
            parts.append(part)
        for i, future in zip(lost, scatter_partitions(self.client, parts)):
            self.parts[i] = future
        self._drop_direct()
        self._drop_backups()
        self._regroup()

    def _replace_parts(self, fn, arg, probe):
        new = self.client.map(fn, self.parts, [arg] * self.n_partitions,
                              key=probe.keys(self.n_partitions), pure=False)
        self._drop_direct()
        self._drop_backups()
        for future in self.parts:
            future.release()
        self.parts = new
        self._transforms.append((fn, arg))
        if len(self.groups) < self.n_partitions:
            # partitions lost before or during the map are made again with the transform
            self._recovering(self._regroup)

    def close(self):
        self._close_holders()
        self._drop_direct()
        self._drop_backups()
        self.collect_measurements()
        for states in self._states.values():
            self._release_states(states)
        self._states = {}
        # release, not cancel: another engine may hold futures of the same keys
        for future in self.parts:
            future.release()
        self.parts = []
        self.sources = None


class HeldStatesLost(Exception):
    """States kept by partition holders were lost with them: the round runs again, with
    those states reset (:meth:`DistributedEngine._unrecoverable_states`)."""


def _kept_by(state, direct):
    """Whether ``state`` (a :class:`HeldState`) is kept by the holders ``direct``."""
    return direct is not None and state.generation == direct.generation


def cancellation_errors():
    """``distributed``'s errors for cancelled futures: one future's, and several futures'
    (raised by ``wait``, and by a submission whose arguments hold cancelled futures)."""
    from distributed import client

    names = ("FutureCancelledError", "FuturesCancelledError")
    return tuple(getattr(client, name) for name in names if hasattr(client, name))


def is_worker_loss(exc):
    """Whether a task's error says it was lost with a worker (not the kernel's own)."""
    from distributed import KilledWorker

    return isinstance(exc, (KilledWorker, *cancellation_errors()))


def _groups_by_thread(client, parts):
    """Partition indices grouped by the worker thread that will run them, and the worker
    of each group: ``(groups, workers)``, sorted by the groups' first index.

    Each worker's partitions (in index order) are split into as many contiguous groups as
    it has threads.  Partitions whose holder is unknown get a group of their own, with
    worker None.
    """
    from distributed import wait

    wait(parts)
    holders = client.who_has(parts)
    nthreads = client.nthreads()
    by_worker, placed = {}, []
    for index, future in enumerate(parts):
        workers = holders.get(future.key) or ()
        if workers:
            by_worker.setdefault(workers[0], []).append(index)
        else:
            placed.append(([index], None))
    for worker, indices in by_worker.items():
        slots = max(1, min(nthreads.get(worker, 1), len(indices)))
        placed.extend((chunk.tolist(), worker)
                      for chunk in np.array_split(np.array(indices), slots))
    placed.sort(key=lambda item: item[0])
    return [group for group, _ in placed], [worker for _, worker in placed]
