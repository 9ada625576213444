"""Kernels of class labels: the distinct labels of a partition with their weighted counts
(gathered in the validation round), and the labels encoded and the rows weighted by their
class where the partitions live.

With ``per_class_moments`` the counts also carry the weighted column sums and sums of
squares of ``X`` of each class, so that after the rows are weighted by class
(``class_weight``) the engine's column moments follow exactly, without another read of
``X``; and so does a solver's first loss and gradient at zero coefficients
(:func:`loss_grad_by_class`, :func:`softmax_loss_grad_by_class`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..backend import array_module, to_host
from .categorical_matrix import categorical_moments, is_categorical_matrix

__all__ = ["LabelCounts", "count_labels", "encode_and_weigh", "loss_grad_by_class",
           "softmax_loss_grad_by_class", "MAX_MOMENT_CLASSES"]

#: Per-class column moments are kept for at most this many classes (``2 p`` floats per
#: class and task); with more, the engine recomputes the moments in a round of their own.
MAX_MOMENT_CLASSES = 64


@dataclass
class LabelCounts:
    """Sorted distinct labels, the total sample weight and the number of rows of each,
    and optionally the weighted column sums and sums of squares of ``X`` of each
    (``(n_labels, p)``)."""

    labels: np.ndarray
    weights: np.ndarray
    rows: np.ndarray
    sums: np.ndarray | None = None
    squares: np.ndarray | None = None
    #: at most this many labels are kept (enough to tell that there are too many)
    limit: int = 1001

    def __add__(self, other):
        labels = np.union1d(self.labels, other.labels)
        mine, theirs = np.searchsorted(labels, self.labels), np.searchsorted(labels, other.labels)
        weights, rows = np.zeros(labels.size), np.zeros(labels.size, dtype=np.int64)
        weights[mine] += self.weights
        weights[theirs] += other.weights
        rows[mine] += self.rows
        rows[theirs] += other.rows
        sums = squares = None
        if self.sums is not None and other.sums is not None and labels.size <= MAX_MOMENT_CLASSES:
            sums = _merge_rows(labels, self.labels, self.sums, other.labels, other.sums)
            squares = _merge_rows(labels, self.labels, self.squares, other.labels, other.squares)
        keep = min(labels.size, self.limit)
        return LabelCounts(labels[:keep], weights[:keep], rows[:keep], sums, squares, self.limit)

    def has_moments(self):
        """Whether the per-class column moments are here (asked for, and few classes)."""
        return self.sums is not None


def _merge_rows(labels, left_labels, left, right_labels, right):
    rows = np.zeros((labels.size, left.shape[1]))
    rows[np.searchsorted(labels, left_labels)] += left
    rows[np.searchsorted(labels, right_labels)] += right
    return rows


def count_labels(part, per_class_moments=False, limit=1001):
    """The distinct labels of one partition's ``y``, sorted, with the sum of the sample
    weights (1 per row when unweighted) and the number of rows of each; with
    ``per_class_moments`` also the weighted column sums and squares of ``X`` per label
    (up to :data:`MAX_MOMENT_CLASSES` labels)."""
    X, y, weight = part[:3]
    xp = array_module(y)
    labels, index = _distinct(xp, y)
    weights = to_host(xp.bincount(index, weights=weight, minlength=labels.size)).astype(
        np.float64)
    rows = to_host(xp.bincount(index, minlength=labels.size)).astype(np.int64)
    sums = squares = None
    if per_class_moments and labels.size <= MAX_MOMENT_CLASSES:
        sums, squares = _class_moments(X, to_host(index), to_host(weight), labels.size)
    keep = min(labels.size, limit)
    return LabelCounts(labels[:keep], weights[:keep], rows[:keep], sums, squares, limit)


def _distinct(xp, y):
    """The sorted distinct values of ``y`` (numpy) and the index of each row's value among
    them (where ``y`` lives; one comparison when there are at most two)."""
    if y.size == 0:
        return np.empty(0), xp.empty(0, dtype=xp.intp)
    low, high = float(y.min()), float(y.max())
    is_high = y == high
    if low == high:
        return np.array([low]), xp.zeros(y.size, dtype=xp.intp)
    if bool(xp.all(is_high | (y == low))):
        return np.array([low, high]), is_high.astype(xp.intp)
    labels, index = xp.unique(y, return_inverse=True)
    return to_host(labels).astype(np.float64), index.ravel()


def _class_moments(X, index, weight, n_labels):
    """``(n_labels, p)`` weighted column sums and sums of squares of ``X`` by label: one
    compiled read of a dense numpy or scipy CSR ``X`` (a categorical block's in
    :func:`~.categorical_matrix.categorical_moments`, without its CSR matrix)."""
    n = X.shape[0]
    if type(X) is np.ndarray and X.dtype in (np.float32, np.float64):
        from .moment_loops import weighted_moments  # numba, on first use

        sums, squares = np.zeros((n_labels, X.shape[1])), np.zeros((n_labels, X.shape[1]))
        row_weight = np.empty(0) if weight is None else np.ascontiguousarray(weight,
                                                                             dtype=np.float64)
        with np.errstate(over="ignore"):
            weighted_moments(X, row_weight, index, sums, squares)
        return sums, squares
    if is_categorical_matrix(X):
        return categorical_moments(X, weight, index, n_labels)
    if sp.issparse(X) and X.format == "csr" and X.dtype in (np.float32, np.float64):
        from .moment_loops import csr_weighted_moments  # numba, on first use

        sums, squares = np.zeros((n_labels, X.shape[1])), np.zeros((n_labels, X.shape[1]))
        row_weight = np.empty(0) if weight is None else np.ascontiguousarray(weight,
                                                                             dtype=np.float64)
        with np.errstate(over="ignore"):
            csr_weighted_moments(X.data, X.indices, X.indptr, row_weight, index, sums, squares)
        return sums, squares
    values = np.ones(n) if weight is None else weight
    by_class = sp.csr_matrix((values, (index, np.arange(n))), shape=(n_labels, n))
    X = to_host(X)
    if sp.issparse(X):
        squared = X.multiply(X)
        return (np.asarray((by_class @ X).todense()), np.asarray((by_class @ squared).todense()))
    return np.asarray(by_class @ X, dtype=np.float64), np.asarray(
        by_class @ np.square(X, dtype=np.float64))


def encode_and_weigh(part, encoding):
    """The partition with ``y`` replaced by its code and the weight of each row multiplied
    by its class's weight.

    ``encoding`` is ``(classes, codes, class_weights)``: ``y == classes[k]`` becomes
    ``codes[k]``; ``class_weights`` is None to keep the weights as they are.
    """
    classes, codes, class_weights = encoding
    X, y, weight = part[:3]
    xp = array_module(y)
    index = xp.clip(xp.searchsorted(xp.asarray(classes), y), 0, classes.size - 1)
    y = xp.asarray(np.asarray(codes, dtype=np.float64))[index]
    if class_weights is not None:
        row_weight = xp.asarray(np.asarray(class_weights, dtype=np.float64))[index]
        weight = row_weight if weight is None else weight * row_weight
    return (X, y, weight, *part[3:])


def loss_grad_by_class(counts, codes, class_weights, params, family, fit_intercept):
    """The loss and gradient sums at ``params`` with zero coefficients, as
    :func:`~daskglm.compute.kernels.loss_grad` would sum them over the encoded partitions,
    from the labels' weighted counts and per-class column sums (``counts``, with moments).

    Every row's linear predictor is then the intercept (0 without one), so the rows of a
    class share one loss and one derivative ``r_k``, and the gradient of the coefficients
    is ``sum_k r_k sums_k``.

    Parameters
    ----------
    counts : LabelCounts
        With per-class moments (:meth:`LabelCounts.has_moments`).
    codes : ndarray
        Each label's encoded target, in the order of ``counts.labels``.
    class_weights : ndarray or None
        Each label's row weight (``class_weight``), in the same order.
    params : ndarray
        Coefficients (all zero), then the intercept when ``fit_intercept``.
    family : Family
    fit_intercept : bool

    Returns
    -------
    Stats
    """
    from .kernels import Stats

    weights, sums = _weighted_by_class(counts, class_weights)
    codes = np.asarray(codes, dtype=np.float64)
    eta = np.full(codes.size, float(params[-1]) if fit_intercept else 0.0)
    loss = float(weights @ family.pointwise_loss(codes, eta))
    derivative = family.dloss(codes, eta)
    grad = derivative @ sums
    if fit_intercept:
        grad = np.append(grad, derivative @ weights)
    return Stats(float(weights.sum()), loss, grad)


def softmax_loss_grad_by_class(counts, class_weights, params, n_classes, fit_intercept):
    """The softmax loss and gradient sums at ``params`` with zero coefficients, as
    :func:`~daskglm.compute.multinomial.multinomial_loss_grad` would sum them over the
    partitions with labels encoded as class indices, from the per-class column sums.

    Every row's predictors are then the intercepts ``b`` (0 without them), with
    probabilities ``p = softmax(b)``: a row of class ``k`` has loss
    ``logsumexp(b) - b_k`` and residual ``p - e_k``, so the gradient of class ``c``'s
    coefficients is ``p_c sum_k sums_k - sums_c``.

    Parameters
    ----------
    counts : LabelCounts
        With per-class moments, one label per class (in class-index order).
    class_weights : ndarray or None
        Each class's row weight.
    params : ndarray
        Coefficients (all zero) class by class, then the ``n_classes`` intercepts when
        ``fit_intercept``.
    n_classes : int
    fit_intercept : bool

    Returns
    -------
    Stats
    """
    from .kernels import Stats

    weights, sums = _weighted_by_class(counts, class_weights)
    intercepts = (np.asarray(params[-n_classes:], dtype=np.float64) if fit_intercept
                  else np.zeros(n_classes))
    top = intercepts.max()
    log_norm = top + np.log(np.sum(np.exp(intercepts - top)))
    prob = np.exp(intercepts - log_norm)
    loss = float(weights @ (log_norm - intercepts))
    grad = (np.outer(prob, sums.sum(axis=0)) - sums).ravel()
    if fit_intercept:
        grad = np.concatenate([grad, prob * weights.sum() - weights])
    return Stats(float(weights.sum()), loss, grad)


def _weighted_by_class(counts, class_weights):
    """The labels' weighted counts and per-class column sums, times ``class_weights``."""
    if class_weights is None:
        return counts.weights, counts.sums
    class_weights = np.asarray(class_weights, dtype=np.float64)
    return counts.weights * class_weights, counts.sums * class_weights[:, None]
