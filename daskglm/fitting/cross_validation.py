"""The rounds of cross-validation beyond the folds' fits: the held-out errors of several
splits' models in one round, every fold's Gram statistics in one round, and the
leave-one-out errors of ridge models (:mod:`daskglm.compute.folds`)."""

from __future__ import annotations

from ..accounting.kinds import Kind
from ..compute.folds import fold_grams, held_out_errors_of_splits, leave_one_out_errors
from ..compute.kernels import gram
from ..engine.folds import fold_ids_by_partition, shared_assignments

__all__ = ["fold_gram_statistics", "gram_statistics_by_fold_ids", "gram_statistics",
           "held_out_errors", "leave_one_out_errors_by_partition",
           "leave_one_out_errors_summed"]


def held_out_errors(engine, splits, models, task):
    """The held-out errors of every split's models on its test rows, one result per split:
    one ``Kind.HELD_OUT`` round for all of them.  ``splits[s]`` is ``(_, _, test codes
    by partition, test fold)``, ``models[s] = (coefs, intercepts)``; ``task`` the
    kind of errors (:func:`daskglm.compute.folds.held_out_errors_of_splits`)."""
    each, indices = shared_assignments(engine, [test_codes for _, _, test_codes, _ in splits])
    requests = tuple((index, test_fold, coefs, intercepts) for index, (_, _, _, test_fold),
                     (coefs, intercepts) in zip(indices, splits, models))
    held = engine.reduce_each(held_out_errors_of_splits, each, requests, task,
                              kind=Kind.HELD_OUT)
    return held.results


def fold_gram_statistics(engine, fold_ids, n_folds):
    """Each of ``n_folds`` folds' Gram statistics (``fold_ids`` one per row, in row order):
    a ``sizes`` round to cut the ids by partition, then one ``Kind.FOLD_GRAM`` round."""
    return gram_statistics_by_fold_ids(engine, fold_ids_by_partition(engine, fold_ids),
                                       n_folds)


def gram_statistics_by_fold_ids(engine, each, n_folds):
    """Each of ``n_folds`` folds' Gram statistics, ``each[i]`` the fold ids of partition
    ``i``'s rows (0 to ``n_folds - 1``; a row of another id is in none): one
    ``Kind.FOLD_GRAM`` round."""
    return engine.reduce_each(fold_grams, each, n_folds, kind=Kind.FOLD_GRAM).folds


def gram_statistics(engine):
    """The weighted Gram statistics of all rows: one ``Kind.GRAM`` round."""
    return engine.reduce(gram, kind=Kind.GRAM)


def leave_one_out_errors_by_partition(engine, *args):
    """:func:`daskglm.compute.folds.leave_one_out_errors` of each partition, its rows'
    errors kept: one ``Kind.LEAVE_ONE_OUT`` round."""
    return engine.map(leave_one_out_errors, *args, True, kind=Kind.LEAVE_ONE_OUT)


def leave_one_out_errors_summed(engine, *args):
    """:func:`daskglm.compute.folds.leave_one_out_errors` summed over the partitions: one
    ``Kind.LEAVE_ONE_OUT`` round."""
    return engine.reduce(leave_one_out_errors, *args, kind=Kind.LEAVE_ONE_OUT)
