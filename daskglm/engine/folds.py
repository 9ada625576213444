"""A cross-validation fold as an engine: the same partitions, the held-out rows weighing zero.

:class:`TrainingView` offers the verbs the batch solvers use (``reduce``, ``map``,
``column_moments``, ``sum_weight``, ``ledger``) on the training rows of one fold.  Each
verb is one round of the underlying engine (``reduce_each``/``map_each``, recorded in
its ledger under the kind asked for), whose per-partition item is that partition's fold
index of every row: the data are never copied or moved.
"""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..compute.folds import run_on_training_rows, training_moments
from ..compute.sampling import partition_size

__all__ = ["TrainingView", "fold_ids_by_partition"]


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
    """

    #: A fold's path fit: solvers keep their own stopping rules on it (the proximal
    #: solver's duality-gap rule is for a whole fit; see ``solvers/proximal.py``).
    is_fold = True

    def __init__(self, engine, each, fold):
        self.engine = engine
        self.each = each
        self.fold = int(fold)
        self.n_features = engine.n_features
        self.n_partitions = engine.n_partitions
        self.column_scale = None
        moments = engine.reduce_each(training_moments, each, self.fold, kind=Kind.FOLD_MOMENTS)
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
        return self.engine.reduce_each(run_on_training_rows, self.each, self.fold, kernel,
                                       *args, kind=kind)

    def map(self, fn, *args, kind):
        """One round: ``fn`` on each partition, held-out rows weighing zero."""
        return self.engine.map_each(run_on_training_rows, self.each, self.fold, fn, *args,
                                    kind=kind)
