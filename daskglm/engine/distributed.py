"""The cluster backend: partitions persisted on the workers of a ``distributed`` cluster."""

from __future__ import annotations

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
from .direct import DirectRoundFailed, DirectRounds
from .distributed_deadline import DistributedDeadlineRounds
from .distributed_state import DistributedStateRounds, HeldStatesLost
from .measure import DaskMeter
from .partitions import scatter_partitions
from .tasks import complete_node_keys, run_task
from .topologies import RING_KINDS, ring_sum, server_sum

#: Failed direct rounds after which an engine runs every round as tasks.
MAX_DIRECT_FAILURES = 2

#: Broadcast arguments larger than this are scattered to the workers once per round
#: instead of being embedded in every task.
SCATTER_BYTES = 1 << 20


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


class DistributedEngine(DistributedStateRounds, DistributedDeadlineRounds, Engine):
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
    Those rounds (:mod:`.distributed_deadline`) and the partition states
    (:mod:`.distributed_state`) are mixed in.

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
                run_task,
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
            ((future, complete_node_keys(group, n))
             for group, future in zip(self.groups if groups is None else groups, group_futures)),
            key=lambda item: node_start(item[1][0]),
        )
        combines, partials = 0, sum(len(nodes) for _, nodes in level)
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
            partials += sum(len(nodes) for _, nodes in level)
        probe.partials, probe.gathered = partials, sum(len(nodes) for _, nodes in level)
        tops = self.client.gather([future for future, _ in level])
        return combine_nodes(n, *tops)[tree_root(n)], combines

    def collect_measurements(self):
        """Fetch Dask's counters for the rounds not measured yet into their records."""
        try:
            self.meter.collect()
        except Exception:  # measuring never breaks a fit: those rounds stay unmeasured
            pass

    # task placement -----------------------------------------------------------------
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
        return [self.client.submit(run_task, fn, [part], None if each is None else [each[i]],
                                   sent, (), key=keys[i], pure=False, **places[i])
                for i, part in enumerate(self.parts)]

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
