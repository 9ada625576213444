"""Partition state: values a kernel leaves next to its partition for the next round.

A stateful round passes each partition its own state (``None`` the first time) and keeps
the new state the kernel returns where it was made: on the worker that holds the
partition, shipped to the driver only by :meth:`StateVerbs.fetch_state`.  Used by error
feedback, local models, ADMM's duals and gossip.
"""

from __future__ import annotations

from typing import NamedTuple

from ..accounting.bytemodel import nbytes
from ..accounting.kinds import Kind
from .measure import Timer, tree_partials


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


class StateVerbs:
    """The partition-state verbs of :class:`~daskglm.engine.base.Engine`."""

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

    def keep_states_in_holders(self, state):
        """Keep the states named ``state`` in the partition holders, where an engine has
        them (:mod:`daskglm.engine.direct`): its stateful rounds then go straight to the
        workers, as direct rounds do, instead of as scheduler tasks.

        For states that only the kernels of stateful rounds read (compressed SGD's
        senders): states so kept have no lineage, so a worker lost loses them (the next
        round reports them in :attr:`StateRound.reset`), and when the holders are dropped
        (a holder that could not be reached, the partitions transformed or regrouped) every
        state they kept is reset.  A no-op for engines without holders.
        """
        self._held_names.add(state)

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
            placed, tasks = self._put(states, probe, state)
        old = self._states.get(state)
        self._states[state] = placed
        if old is not None:
            self._release_states(old)
        self.ledger.record(kind, tasks, nbytes(states), 0, timer.seconds,
                           partitions=self.n_partitions, groups=tasks or self.n_partitions,
                           probe=probe)

    def _put(self, states, probe, name=None):
        """``(the states where the partitions live, tasks run to put them there)``."""
        return list(states), 0

    def compute_state(self, state, items, summarise, *, kind=Kind.COMPUTE_STATE):
        """One round: compute one state per partition from ``items`` (Dask delayed
        objects, one per partition in the partitions' order) where the partitions live,
        keep each under ``state`` next to its partition (replacing what was there), and
        return ``summarise(state_i)`` of each: only the summaries reach the driver.

        For data that come as Dask collections beside the rows (a fit's cluster ids): on
        a cluster each item is computed on its partition's worker (loosely: Dask may run
        it elsewhere) and keeps its lineage, so a state lost with a worker is computed
        again; in this process Dask's threads compute them.  Engines that read their
        partitions again in every round hold no state (:attr:`keeps_states`).
        """
        self._states_of(state)  # checks the name
        items = self._check_each(items)
        with Timer() as timer, self._probe(kind) as probe:
            placed, summaries, tasks = self._compute_states(items, summarise, probe)
        old = self._states.get(state)
        self._states[state] = placed
        if old is not None:
            self._release_states(old)
        self.ledger.record(kind, tasks, 0, nbytes(summaries), timer.seconds,
                           partitions=self.n_partitions, groups=tasks or self.n_partitions,
                           probe=probe)
        return summaries

    #: Whether the engine keeps partition states (stateful rounds, :meth:`compute_state`).
    keeps_states = True

    def _compute_states(self, items, summarise, probe):
        """``(the states, their summaries, tasks run)``: computed in this process."""
        import dask

        placed = list(dask.compute(*items, scheduler="threads"))
        return placed, [summarise(item) for item in placed], 0

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
            return self._execute_stateful(fn, states, args, tree, probe, state)

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
        partials, gathered = (tree_partials(probe, groups + combine_tasks) if tree
                              else (0, 0))
        returned = partials * nbytes(result) if tree else nbytes(result)
        record = self.ledger.record(
            kind, tasks, sent, returned, timer.seconds, partitions=self.n_partitions,
            groups=groups, split_every=self.split_every if tree else None, probe=probe,
            partials=partials, gathered=gathered,
        )
        record.state_reset = tuple(sorted(reset))
        record.bytes_read = self.round_bytes_read()
        return StateRound(result, tuple(sorted(reset)))

    def _execute_stateful(self, fn, states, args, tree, probe, name=None):
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
