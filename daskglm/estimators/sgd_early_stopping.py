"""SGD's early stopping, as scikit-learn's: :class:`EarlyStoppingMixin`.

With ``early_stopping=True`` a fit holds out ``validation_fraction`` of the rows
(scikit-learn's shuffled split, stratified for a classifier), fits on the others, and
scores the held-out rows after every epoch (their engine writes to the fit's ledger; the
round is :func:`daskglm.fitting.early_stopping.held_out_score`); the fit stops after
``n_iter_no_change`` epochs whose score is below the best so far plus ``tol``.  Dask
DataFrames are split as Dask arrays of their rows (:func:`frames_as_rows`), their column
names recorded after the fit (:func:`with_frame_names`).
"""

from __future__ import annotations

import copy

import numpy as np
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
from sklearn.utils import _safe_indexing

from ..engine import is_dask, make_engine
from ..fitting.early_stopping import held_out_score
from .plan import FitEngines
from .validation import dask_frame_to_array

__all__ = ["EarlyStoppingMixin", "frames_as_rows", "with_frame_names"]


class EarlyStoppingMixin:
    """The held-out rows of the SGD estimators' early stopping: their split, their engine
    and their score.

    Used by :class:`~daskglm.estimators.sgd._SGDBase`; it reads the estimator's
    ``validation_fraction``, ``random_state``, ``cache`` and ``_classifier``.
    """

    def _split_held_out(self, X, y, sample_weight):
        """The training rows of ``(X, y, sample_weight)`` and the held-out rows, two
        tuples.

        scikit-learn's split: :class:`~sklearn.model_selection.ShuffleSplit` (stratified
        for a classifier) with ``test_size=validation_fraction`` and ``random_state`` (a
        ``RandomState`` is copied, so that the split leaves the draws of the fit as they
        are).  It needs the labels but not ``X``: a Dask ``X`` (and regression targets)
        are cut lazily by a boolean mask, the engines then reading their partitions.
        """
        if self._classifier and is_dask(y):
            raise NotImplementedError(
                "early_stopping with Dask class labels is not supported: the stratified "
                "split needs the labels on the driver; pass y as a NumPy array."
            )
        if hasattr(X, "tocsr"):
            X = X.tocsr()
        n_samples = int(X.shape[0]) if hasattr(X, "shape") else len(X)
        labels = None if is_dask(y) else np.asarray(y)
        if labels is not None:
            y = labels
        random_state = self.random_state
        if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
            random_state = copy.deepcopy(random_state)
        splitter = (StratifiedShuffleSplit if self._classifier else ShuffleSplit)(
            test_size=self.validation_fraction, random_state=random_state)
        train, held_out = next(splitter.split(np.zeros((n_samples, 1)), labels))
        if sample_weight is not None and not is_dask(sample_weight):
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if not np.any(sample_weight[held_out] > 0):
                raise ValueError("The sample weights for validation set are all zero, consider "
                                 "using a different random state.")
        if train.shape[0] == 0 or held_out.shape[0] == 0:
            raise ValueError(
                f"Splitting {n_samples} samples into a train set and a validation set with "
                f"validation_fraction={self.validation_fraction!r} led to an empty set "
                f"({train.shape[0]} and {held_out.shape[0]} samples). Please either change "
                "validation_fraction, increase number of samples, or disable early_stopping."
            )
        mask = np.zeros(n_samples, dtype=bool)
        mask[held_out] = True  # the training rows keep their order
        parts = (X, y, sample_weight)
        return (tuple(_rows_of(part, ~mask) for part in parts),
                tuple(_rows_of(part, mask) for part in parts))

    def _held_out_target(self, y):
        """The held-out targets as the engine holds the training ones."""
        return y

    def _open_engines(self, data, plan):
        """The engine of the training rows and, with early stopping, one of the held-out
        rows writing its rounds to the same ledger."""
        engines = super()._open_engines(data, plan)
        if data.held_out is None:
            return engines
        try:
            X_val, y_val, weight_val = data.held_out
            scorer = make_engine(X_val, self._held_out_target(y_val), weight_val,
                                 family=data.family, cache=self.cache)
        except BaseException:
            engines.training.close()
            raise
        ledger = engines.training.ledger
        ledger.records.extend(scorer.ledger.records)
        scorer.ledger = ledger
        return FitEngines(engines.training, scorer)

    def _validation_score(self, problem, engine):
        """``score(params)``: the held-out rows' accuracy or R^2, one round of their
        ``engine`` (``validation_score``)."""
        fit_intercept, classification = bool(problem.fit_intercept), bool(self._classifier)

        def score(params):
            return held_out_score(engine, params, fit_intercept, classification)

        return score


def _rows_of(part, mask):
    """The rows of ``part`` (a matrix, vector, Dask array or None) where ``mask`` holds."""
    if part is None:
        return None
    if is_dask(part):
        return part[mask]
    return _safe_indexing(part, np.flatnonzero(mask))


def frames_as_rows(X, y, sample_weight):
    """``((X, y, sample_weight), names)``: Dask DataFrames and Series among them as Dask
    arrays of their rows, and the column names of a Dask DataFrame ``X`` (else None), so
    that early stopping can split the rows (:meth:`EarlyStoppingMixin._split_held_out`)."""
    names = None
    converted = []
    for k, part in enumerate((X, y, sample_weight)):
        if is_dask(part) and hasattr(part, "dtypes"):
            part, found = dask_frame_to_array(part)
            names = found if k == 0 else names
        converted.append(part)
    return tuple(converted), names


def with_frame_names(estimator, names):
    """``estimator``, with the column names of the Dask DataFrame it was fitted on as
    ``feature_names_in_`` (as a fit without early stopping records them)."""
    if names is not None and all(isinstance(name, str) for name in names):
        estimator.feature_names_in_ = names
    return estimator
