"""Folds on the rows for the cross-validated estimators: which fold holds out each row,
and the checks of penalty grids."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.model_selection import check_cv

from ..engine import is_dask

__all__ = ["_assign_folds", "_positive_grid"]


def _assign_folds(cv, y, n_samples, classifier):
    """The fold holding out each row, and the number of folds.

    ``cv`` is anything :func:`sklearn.model_selection.check_cv` takes (None: 5 folds; an
    int: (stratified for classifiers) k folds; a splitter).  The test sets must be
    disjoint, cover every row and have the other rows as training sets (k-fold splitters).
    """
    if is_dask(y):
        if not classifier and (cv is None or isinstance(cv, numbers.Integral)):
            y = None  # KFold splits on row positions alone: no need to read y
        else:
            # The splitter is scikit-learn's (stratified k-fold, or the caller's own),
            # running on the driver over every label, before the engine exists: the one
            # read of Dask ``y`` outside the engine's rounds, for the folds alone (the
            # classes and their counts come from the engine's validation round).
            y = y.compute()
    splitter = check_cv(cv, y, classifier=classifier)
    fold_ids = np.full(n_samples, -1, dtype=np.int16)
    n_folds = 0
    for fold, (train, test) in enumerate(splitter.split(np.zeros((n_samples, 1)), y)):
        if np.any(fold_ids[test] >= 0) or len(train) + len(test) != n_samples:
            raise ValueError(
                "cv must hold out every row exactly once, training on all the others "
                "(KFold, StratifiedKFold and the like); got overlapping or partial folds."
            )
        fold_ids[test] = fold
        n_folds += 1
    if n_folds < 2 or np.any(fold_ids < 0):
        raise ValueError("cv must hold out every row exactly once, in at least 2 folds.")
    return (fold_ids.astype(np.int8) if n_folds < 128 else fold_ids), n_folds


def _positive_grid(values, name):
    values = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(f"{name} must be a non-empty list of positive numbers; got {values!r}.")
    return values
