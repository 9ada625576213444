"""The cluster backend's partition states: stateful rounds, and states put, fetched and
dropped, as futures on the partitions' workers or kept by partition holders."""

from __future__ import annotations

from .direct import DirectRoundFailed, HeldState
from .tasks import identity, pick_output, pick_state, run_stateful_task

__all__ = ["DistributedStateRounds", "HeldStatesLost"]


class DistributedStateRounds:
    """The partition-state methods of :class:`~daskglm.engine.distributed.DistributedEngine`
    (a mixin: it uses the engine's client, partitions, groups and partition holders)."""

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
                run_stateful_task, fn, [self.parts[i] for i in group],
                [states[i] for i in group], sent, (group, n) if tree else (),
                key=keys[g], pure=False, **place,
            )
            created.append(output)
            results.append(self.client.submit(pick_output, output, key=probe.pick_key(f"out{g}"),
                                              pure=False, **place))
            created.append(results[-1])
            for j, index in enumerate(group):
                new_states[index] = self.client.submit(
                    pick_state, output, j, key=probe.pick_key(f"state{index}"), pure=False,
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
            copies.append(self.client.submit(identity, states[i], key=key, pure=False, **place))
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

    def _compute_states(self, items, summarise, probe):
        """Each item computed on its partition's worker, kept there as a future; one
        task per partition, named for the round, summarises it there."""
        places = self._placement(range(self.n_partitions))
        placed = [self.client.compute(item, **place) for item, place in zip(items, places)]
        keys = probe.keys(len(placed))
        summaries = [self.client.submit(summarise, future, key=key, pure=False, **place)
                     for future, key, place in zip(placed, keys, places)]
        try:
            return placed, self.client.gather(summaries), 2 * len(placed)
        except BaseException:
            for future in placed:
                future.release()
            raise
        finally:
            for future in summaries:
                future.release()

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


class HeldStatesLost(Exception):
    """States kept by partition holders were lost with them: the round runs again, with
    those states reset (:meth:`~.distributed.DistributedEngine._unrecoverable_states`)."""


def _kept_by(state, direct):
    """Whether ``state`` (a :class:`HeldState`) is kept by the holders ``direct``."""
    return direct is not None and state.generation == direct.generation
