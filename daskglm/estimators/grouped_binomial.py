"""Grouped binomial targets: R's ``cbind(successes, failures)`` as a two-column ``y``.

A binomial GLM takes each row's proportion of successes as its target and its number
of trials as its weight; :class:`GroupedBinomialMixin` (a base of
:class:`~daskglm.estimators.linear.GLM`) turns a two-column target of counts into those
two (:func:`successes_and_failures`), lazily for Dask, checked before the fit reads the
data (for Dask, in the partitions the validation round reads): counts must be finite,
non-negative whole numbers, and every row must have a trial.  The weights are then
binomial trials (``weights_kind="trials"``) unless the fit says otherwise.
"""

from __future__ import annotations

import numpy as np

from ..engine import is_dask
from .validation import dask_frame_to_array

__all__ = ["successes_and_failures", "GroupedBinomialMixin"]


def _is_two_columns(y):
    shape = getattr(y, "shape", None)
    if shape is None:
        shape = np.shape(y)
    return len(shape) == 2 and shape[1] == 2


def successes_and_failures(y, sample_weight):
    """``(proportions, trials)`` of a target of two columns of counts, successes then
    failures: ``successes / (successes + failures)`` and ``successes + failures``, Dask
    arrays for a Dask ``y`` (the checks then run in its blocks)."""
    if sample_weight is not None:
        raise ValueError("A two-column target (successes, failures) gives the numbers of "
                         "trials as the weights; pass sample_weight with a target of "
                         "proportions instead.")
    if is_dask(y):
        y = dask_frame_to_array(y)[0]
        if not np.issubdtype(y.dtype, np.number):
            raise TypeError(f"A two-column target must hold counts; got dtype {y.dtype}.")
        if y.numblocks[1] != 1:
            y = y.rechunk({1: -1})
        proportions = y.map_blocks(_proportions_block, drop_axis=1, dtype=np.float64)
        trials = y.map_blocks(_trials_block, drop_axis=1, dtype=np.float64)
        return proportions, trials
    counts = np.asarray(y)
    if not np.issubdtype(counts.dtype, np.number) or np.iscomplexobj(counts):
        raise TypeError(f"A two-column target must hold counts; got dtype {counts.dtype}.")
    counts = _checked_counts(counts.astype(np.float64))
    trials = counts.sum(axis=1)
    return counts[:, 0] / trials, trials


def _checked_counts(counts):
    """``counts`` (rows of successes and failures), after a ValueError for anything that
    is not a count or a row without trials."""
    if not np.isfinite(counts).all():
        raise ValueError("The two-column target (successes, failures) contains NaN or "
                         "infinity.")
    if (counts < 0).any() or (counts != np.round(counts)).any():
        raise ValueError("The two-column target (successes, failures) must hold "
                         "non-negative whole numbers of successes and failures.")
    if counts.size and not (counts.sum(axis=1) > 0).all():
        raise ValueError("A row of the two-column target (successes, failures) has no "
                         "trials (0 successes and 0 failures); drop it.")
    return counts


def _proportions_block(block):
    counts = _checked_counts(np.asarray(block, dtype=np.float64))
    return counts[:, 0] / counts.sum(axis=1)


def _trials_block(block):
    return _checked_counts(np.asarray(block, dtype=np.float64)).sum(axis=1)


class GroupedBinomialMixin:
    """``fit`` of a binomial GLM takes a two-column target (successes, failures)."""

    def fit(self, X, y, sample_weight=None, offset=None, exposure=None, *, weights_kind=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,), or (n_samples, 2) for the binomial
            The targets.  For the binomial family they lie in [0, 1]: labels 0 and 1, or
            proportions of successes with the numbers of trials as ``sample_weight``; or
            two columns of counts, successes then failures (R's ``cbind(successes,
            failures)``), which become the proportions with the trials as weights
            (``weights_kind="trials"`` unless given).
        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Non-negative row weights (none with a two-column target).
        offset, exposure, weights_kind
            As in :meth:`daskglm.estimators.base._GLMBase.fit`.

        Returns
        -------
        self
        """
        if self._family().distribution.counts_trials and _is_two_columns(y):
            y, sample_weight = successes_and_failures(y, sample_weight)
            weights_kind = "trials" if weights_kind is None else weights_kind
        return super().fit(X, y, sample_weight, offset, exposure, weights_kind=weights_kind)
