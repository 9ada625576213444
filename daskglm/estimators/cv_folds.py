"""Folds on the rows for the cross-validated estimators: which rows each split trains on
and holds out, and the checks of penalty grids."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.model_selection import KFold, ShuffleSplit, check_cv

from ..engine import is_dask
from ..engine.driver_passes import compute_pass
from ..engine.folds import fold_ids_by_partition

__all__ = ["Folds", "assign_folds", "positive_grid"]


class Folds:
    """The splits of a cross-validation, as row codes sent with each round.

    When the test sets partition the rows and each training set is the other rows
    (k-fold splitters), one small integer per row says which fold holds it out
    (``ids``).  Otherwise (ShuffleSplit, GroupShuffleSplit, TimeSeriesSplit...) each
    split has two codes per row: training rows 0 in its training codes, test rows 1 in
    its test codes; the verbs that take ``(codes, fold)`` then see exactly that split.
    """

    def __init__(self, n_samples, splits):
        self.n_folds = len(splits)
        ids = np.full(n_samples, -1, dtype=np.int16)
        partition = True
        for fold, (train, test) in enumerate(splits):
            if np.any(ids[test] >= 0) or len(train) + len(test) != n_samples:
                partition = False
                break
            ids[test] = fold
        if partition and np.all(ids >= 0):
            self.ids = ids.astype(np.int8) if self.n_folds < 128 else ids
            self._codes = None
            return
        self.ids = None
        # column 2k: split k's training codes (0 train, 1 not), column 2k+1: its test codes
        codes = np.zeros((n_samples, 2 * self.n_folds), dtype=np.int8)
        for fold, (train, test) in enumerate(splits):
            codes[:, 2 * fold] = 1
            codes[train, 2 * fold] = 0
            codes[test, 2 * fold + 1] = 1
        self._codes = codes
        self._test = [np.sort(np.asarray(test)) for _, test in splits]

    @property
    def is_partition(self):
        """Whether every row is held out exactly once, training on all the others."""
        return self.ids is not None

    def test_rows(self, fold):
        """The row positions held out in split ``fold``."""
        if self.is_partition:
            return np.flatnonzero(self.ids == fold)
        return self._test[fold]

    def on(self, engine):
        """Per split, ``(training codes, code held out, test codes, code tested)``, the
        codes cut into one array per partition of ``engine`` (one ``sizes`` round)."""
        if self.is_partition:
            each = fold_ids_by_partition(engine, self.ids)
            return [(each, fold, each, fold) for fold in range(self.n_folds)]
        blocks = fold_ids_by_partition(engine, self._codes)
        return [([block[:, 2 * fold].copy() for block in blocks], 1,
                 [block[:, 2 * fold + 1].copy() for block in blocks], 1)
                for fold in range(self.n_folds)]


def assign_folds(cv, y, n_samples, classifier, split_params=None):
    """The splits of ``cv`` on ``n_samples`` rows, as :class:`Folds`.

    Parameters
    ----------
    cv : int, cross-validation splitter, iterable or None
        Anything :func:`sklearn.model_selection.check_cv` takes (None: 5 folds; an int:
        (stratified for classifiers) k folds; a splitter).
    y : array-like or Dask array of shape (n_samples,)
        The targets; Dask ``y`` is read (a driver pass) only when the splitter needs it.
    n_samples : int
    classifier : bool
        Whether an int ``cv`` means stratified folds.
    split_params : dict, optional
        Passed to the splitter's ``split`` (``groups``).

    Returns
    -------
    Folds

    Raises
    ------
    ValueError
        For fewer than 2 splits, or a split without training or test rows.
    """
    if is_dask(y):
        if not classifier and (cv is None or isinstance(cv, numbers.Integral)
                               or type(cv) in (KFold, ShuffleSplit)):
            y = None  # these split on row positions alone: no need to read y
        else:
            # The splitter is scikit-learn's (stratified k-fold, or the caller's own),
            # running on the driver over every label, before the engine exists: the one
            # read of Dask ``y`` outside the engine's rounds, for the folds alone (the
            # classes and their counts come from the engine's validation round), in the
            # ledger as a driver pass.
            y = compute_pass(y)[0]
    splitter = check_cv(cv, y, classifier=classifier)
    splits = [(np.asarray(train), np.asarray(test))
              for train, test in splitter.split(np.zeros((n_samples, 1)), y,
                                                **(split_params or {}))]
    if len(splits) < 2:
        raise ValueError(f"cv must make at least 2 splits; got {len(splits)}.")
    for train, test in splits:
        if len(train) == 0 or len(test) == 0:
            raise ValueError("Every split of cv needs training rows and test rows.")
    return Folds(n_samples, splits)


def positive_grid(values, name):
    """A grid of positive numbers (``Cs`` of :class:`~daskglm.LogisticRegressionCV`) as a
    float64 vector.

    Parameters
    ----------
    values : float or sequence of float
    name : str
        The parameter's name, for the error message.

    Returns
    -------
    ndarray of float64, 1-D

    Raises
    ------
    ValueError
        Unless the values are a non-empty list of finite positive numbers.
    """
    values = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(f"{name} must be a non-empty list of positive numbers; got {values!r}.")
    return values
