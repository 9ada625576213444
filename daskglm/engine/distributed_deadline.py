"""The cluster backend's deadline rounds: each partition's task and a backup task on a
replica, the first copy to finish counting; replicas made for the partitions that missed
a deadline."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import NamedTuple

from .dask_compat import cancel as cancel_futures
from .deadline import Arrivals
from .tasks import identity, run_task

__all__ = ["DistributedDeadlineRounds", "Backup", "REPLICA_PREFIX"]

#: Prefix of the keys of the replicas that backup tasks of deadline rounds read (not a
#: round's key: the measurements of rounds do not look at them).
REPLICA_PREFIX = "daskglm-replica-"


class Backup(NamedTuple):
    """A partition's replica on another worker, read by its backup tasks."""

    worker: str
    replica: object  # the future of the copy, pinned to ``worker``


class DistributedDeadlineRounds:
    """The deadline rounds of :class:`~daskglm.engine.distributed.DistributedEngine` (a
    mixin: it uses the engine's client, partitions and task placement)."""

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
                run_task, fn, [part], None if each is None else [each[i]], sent, (),
                key=keys[i], pure=False, **place)
            if held:
                where[primaries[i]] = held[0]
        for key, (i, backup) in zip(keys[n:], sorted(replicas.items())):
            backups[i] = self.client.submit(
                run_task, fn, [backup.replica], None if each is None else [each[i]], sent,
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
            replica = self.client.submit(identity, self.parts[i], workers=[worker],
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
