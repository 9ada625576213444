"""A cross-validation fold as an engine: the same partitions, the held-out rows weighing zero.

:class:`TrainingView` offers the verbs the batch solvers use (``reduce``, ``map``,
``column_moments``, ``sum_weight``, ``ledger``) on the training rows of one fold.  Each
verb is one round of the underlying engine (``reduce_each``/``map_each``, recorded in
its ledger under the kind asked for), whose per-partition item is that partition's fold
index of every row: the data are never copied or moved.

:class:`SharedRounds` runs several folds' fits side by side, their rounds shared: k
folds take the rounds of the slowest fold instead of the sum of all of theirs.
"""

from __future__ import annotations

import contextvars
import threading

import numpy as np

from ..accounting.kinds import Kind
from ..compute.folds import run_on_training_rows, run_shared_requests
from ..compute.sampling import partition_size
from ..compute.summaries import column_moments

__all__ = ["TrainingView", "AllRows", "SharedRounds", "fold_ids_by_partition", "shared_assignments"]

#: The kind a shared round is recorded under when its requests' kinds differ: the first
#: of these among them (the costliest), else the first request's.
_SHARED_KIND_ORDER = (Kind.HESSIAN, Kind.GRADIENT)

#: Most bytes of results one partition task of a shared round returns: past it the
#: waiting requests go out in several rounds (a Hessian request returns ``8 (d + 1)^2``
#: bytes, the others about ``8 (d + 1)``).
SHARED_RESULT_BYTES = 64 << 20


def fold_ids_by_partition(engine, fold_ids):
    """``fold_ids`` (one per row, in row order) cut into one array per partition.

    One ``sizes`` round gives the partitions' row counts.
    """
    fold_ids = np.asarray(fold_ids)
    if engine.n_partitions == 1:
        return [fold_ids]
    rows = [size[0] for size in engine.map(partition_size, kind=Kind.SIZES)]
    bounds = np.cumsum([0] + rows)
    if bounds[-1] != fold_ids.shape[0]:
        raise ValueError(
            f"Got fold indices for {fold_ids.shape[0]} rows; the data have {bounds[-1]}."
        )
    return [fold_ids[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])]


class TrainingView:
    """The training rows of fold ``fold`` of ``engine``, for a solver.

    Building it is one ``fold_moments`` round: the training rows' total weight and
    weighted column moments, which the standardising solvers use.

    Parameters
    ----------
    engine : Engine
        A validated engine.
    each : list of ndarray
        Per partition, the fold of each row (:func:`fold_ids_by_partition`).
    fold : int
        The fold held out.
    rounds : SharedRounds, optional
        Where the view's ``reduce`` rounds go when the fold's fit runs beside others'
        (:meth:`SharedRounds.run`); the view's first round, its moments, too.
    """

    #: A fold's path fit: solvers keep their own stopping rules on it (the proximal
    #: solver's duality-gap rule is for a whole fit; see ``solvers/proximal.py``).
    is_fold = True

    def __init__(self, engine, each, fold, rounds=None):
        self.engine = engine
        self.each = each
        self.fold = int(fold)
        self.rounds = rounds
        self.n_features = engine.n_features
        self.n_partitions = engine.n_partitions
        self.column_scale = None
        self.sample_rows = engine.sample_rows
        moments = self.reduce(column_moments, self.sample_rows, kind=Kind.FOLD_MOMENTS)
        self.column_moments = moments
        self.sum_weight = float(moments.weight)
        if not self.sum_weight > 0:
            raise ValueError(f"The training rows of fold {fold} have no weight.")

    @property
    def ledger(self):
        return self.engine.ledger

    @property
    def n_samples(self):
        return self.engine.n_samples

    def reduce(self, kernel, *args, kind):
        """One round: ``kernel`` summed over the partitions, held-out rows weighing zero."""
        if self.rounds is not None and self.rounds.active:
            return self.rounds.reduce(self, kernel, args, kind)
        return self.engine.reduce_each(run_on_training_rows, self.each, self.fold, kernel,
                                       *args, kind=kind)

    def map(self, fn, *args, kind):
        """One round: ``fn`` on each partition, held-out rows weighing zero."""
        return self.engine.map_each(run_on_training_rows, self.each, self.fold, fn, *args,
                                    kind=kind)


class AllRows:
    """Every row of ``engine``, for a fit whose ``reduce`` rounds are shared with other
    fits' (:class:`SharedRounds`); its other verbs and attributes are the engine's, and
    closing it leaves the engine open (its owner closes it).

    Parameters
    ----------
    engine : Engine
        A validated engine.
    rounds : SharedRounds
        Where the view's ``reduce`` rounds go while its fits run.
    """

    each = None
    fold = None

    def __init__(self, engine, rounds):
        self.engine = engine
        self.rounds = rounds

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def reduce(self, kernel, *args, kind):
        """One round: ``kernel`` summed over the partitions, shared while fits run."""
        if self.rounds.active:
            return self.rounds.reduce(self, kernel, args, kind)
        return self.engine.reduce(kernel, *args, kind=kind)

    def close(self):
        """Nothing: the engine stays open for the other fits."""


def shared_assignments(engine, assignments):
    """Several fold assignments (each one array per partition, or None: every row
    trains) as one round's
    per-partition items: ``(each, indices)``, ``each[p]`` the tuple of the distinct
    assignments' arrays of partition ``p`` (one assignment shared by several requests is
    sent once) and ``indices[i]`` the place of ``assignments[i]`` in it."""
    distinct, indices = [], []
    for assignment in assignments:
        index = next((i for i, seen in enumerate(distinct) if seen is assignment), None)
        if index is None:
            index = len(distinct)
            distinct.append(assignment)
        indices.append(index)
    each = [tuple(None if assignment is None else assignment[p] for assignment in distinct)
            for p in range(engine.n_partitions)]
    return each, indices


class _Stopped(Exception):
    """Raised in a fit waiting for a shared round when another fit has failed."""


class SharedRounds:
    """Several folds' fits run side by side, their rounds shared.

    :meth:`run` runs each fit in a thread of its own, and only one runs at a time: a fit
    holds the turn while its driver-side code runs, and gives it up only while it waits
    for a round, so the solvers' code never runs concurrently.  When every fit still
    running waits for a round, their requests go to the partitions as one round
    (:func:`~daskglm.compute.folds.run_shared_requests`: one task per group of
    partitions, each request's result summed on its own in the engine's tree).  Each fit
    gets the numbers that a round of its own would have given it, to the bit; k folds take
    the rounds of their slowest fit instead of the sum of all of theirs.  A shared round
    is one record of the ledger, under its requests' kind (Hessian, then gradient, when
    they differ).  Rounds that a fit's solver asks with ``map`` run on their own.  When
    the waiting requests' results would pass :data:`SHARED_RESULT_BYTES` per task (many
    fits' Hessians of many columns), they go out in as many rounds as keep them under it.

    Parameters
    ----------
    engine : Engine
        The validated engine the folds' :class:`TrainingView` s share.
    """

    def __init__(self, engine):
        self.engine = engine
        self._turn = threading.Condition()
        self._waiting = {}
        self._results = {}
        self._running = 0
        self._error = None

    def run(self, fits):
        """Run ``fits`` (callables of no argument) side by side; their results, in order.

        The first error a fit raises is raised here, once every fit has stopped.
        """
        results = [None] * len(fits)
        with self._turn:
            self._running = len(fits)
            self._error = None
            self._waiting, self._results = {}, {}

        def body(index, fit):
            with self._turn:
                try:
                    results[index] = fit()
                except _Stopped:
                    pass
                except BaseException as exc:
                    if self._error is None:
                        self._error = exc
                finally:
                    self._running -= 1
                    self._advance()

        threads = [threading.Thread(target=contextvars.copy_context().run, args=(body, i, fit),
                                    name=f"daskglm-fold-{i}", daemon=True)
                   for i, fit in enumerate(fits)]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        except BaseException as exc:  # an interrupt: the fits stop at their next round
            with self._turn:
                if self._error is None:
                    self._error = exc
                self._turn.notify_all()
            raise
        if self._error is not None:
            raise self._error
        return results

    @property
    def active(self):
        """Whether fits of :meth:`run` are running (their views' rounds are shared)."""
        return self._running > 0

    def reduce(self, view, kernel, args, kind):
        """``view.reduce(kernel, *args)``, in the next shared round; called by a fit of
        :meth:`run`, which holds the turn."""
        token = object()
        self._waiting[token] = (view.each, view.fold, kernel, args, kind)
        self._advance()
        while token not in self._results:
            if self._error is not None:
                self._waiting.pop(token, None)
                raise _Stopped
            self._turn.wait()
        return self._results.pop(token)

    def _advance(self):
        """Run the waiting requests' round when every running fit waits for one; wake the
        waiting fits to stop after an error."""
        if self._error is None and self._waiting and len(self._waiting) >= self._running:
            waiting, self._waiting = self._waiting, {}
            requests = list(waiting.values())
            try:
                outputs = []
                for start in range(0, len(requests), self._per_round(requests)):
                    outputs += self._round(requests[start:start + self._per_round(requests)])
            except BaseException as exc:
                self._error = exc
            else:
                self._results.update(zip(waiting, outputs))
        self._turn.notify_all()

    def _per_round(self, requests):
        """Requests per round that keep a task's results under :data:`SHARED_RESULT_BYTES`."""
        params = self.engine.n_features + 1
        hessian = any(request[-1] in (Kind.HESSIAN, Kind.VALIDATE_HESSIAN)
                      for request in requests)
        each = 8 * params * (params if hessian else 1)
        return max(1, SHARED_RESULT_BYTES // each)

    def _round(self, requests):
        each, indices = shared_assignments(self.engine, [request[0] for request in requests])
        requests_sent = [(index, fold, kernel, args)
                         for index, (_, fold, kernel, args, _) in zip(indices, requests)]
        kinds = [request[-1] for request in requests]
        kind = next((k for k in _SHARED_KIND_ORDER if k in kinds and len(set(kinds)) > 1),
                    kinds[0])
        shared = self.engine.reduce_each(run_shared_requests, each, tuple(requests_sent),
                                         kind=kind)
        return shared.results
