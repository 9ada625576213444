"""Per-partition pieces of cross-validation: folds as row weights, per-fold statistics.

Cross-validation never copies ``X``: every row carries the index of the fold it is held
out in (``fold_ids``, one small integer per row, sent with the round to its partition),
and a fit on the other folds is a fit whose held-out rows weigh zero
(:func:`run_on_training_rows`).  The ridge path needs one read of ``X`` in all:
:func:`fold_grams` returns the centred Gram statistics of every fold from one pass, and
every training set's statistics are sums of them; exact leave-one-out errors of every
alpha take one more (:func:`leave_one_out_errors`).  Held-out scores of many coefficient
vectors come from one pass per fold (:func:`held_out_errors`).  Nothing here imports Dask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_expit, logsumexp

from .kernels import GramStats, gram, kernel_matrix, loss_grad, loss_grads
from .loss_codes import loss_code

__all__ = [
    "training_weight", "run_on_training_rows", "fold_grams", "FoldGrams", "held_out_errors",
    "HeldOut", "LeaveOneOut", "leave_one_out_errors", "SharedResults",
    "run_shared_requests", "held_out_errors_of_splits",
]


def training_weight(part, fold_ids, fold):
    """The partition's row weights with the rows of ``fold`` set to zero (a new array);
    with ``fold_ids`` None (every row trains), the weights as they are (None: unit)."""
    weight = part[2]
    if fold_ids is None:
        return weight
    keep = (np.asarray(fold_ids) != fold).astype(np.float64)
    return keep if weight is None else weight * keep


def run_on_training_rows(part, fold_ids, fold, kernel, *args):
    """``kernel`` on the partition with the rows held out in ``fold`` weighing zero (and its
    offset, when it has one); on the partition as it is when ``fold_ids`` is None."""
    if fold_ids is None:
        return kernel(part, *args)
    return kernel((part[0], part[1], training_weight(part, fold_ids, fold), *part[3:]), *args)


@dataclass
class SharedResults:
    """The results of several requests of one shared round, each summed on its own."""

    results: list

    def __add__(self, other):
        return SharedResults([a + b for a, b in zip(self.results, other.results)])


def run_shared_requests(part, fold_ids, requests):
    """Several folds' requests on one partition.

    ``fold_ids`` holds the partition's fold assignments (one array per distinct
    assignment, None for every row); each request is ``(assignment, fold, kernel, args)`` and runs
    ``kernel`` on the training rows of ``fold`` (:func:`run_on_training_rows`).  The
    requests for the loss and gradient of one family (:func:`~.kernels.loss_grad`) are
    computed together, in one read of ``X`` (:func:`~.kernels.loss_grads`), unless the
    partition has an offset.
    """
    results = [None] * len(requests)
    together = {}
    for index, (assignment, fold, kernel, args) in enumerate(requests):
        if kernel is loss_grad and len(part) == 3:
            _, family, fit_intercept = args
            code = loss_code(family)  # the same compiled loop, or the same family object
            key = (id(family) if code is None else code, bool(fit_intercept))
            together.setdefault(key, []).append(index)
        else:
            results[index] = run_on_training_rows(part, fold_ids[assignment], fold, kernel,
                                                  *args)
    X, y = part[:2]
    for indices in together.values():
        weights = [training_weight(part, fold_ids[requests[i][0]], requests[i][1])
                   for i in indices]
        _, family, fit_intercept = requests[indices[0]][3]
        stats = loss_grads(X, y, weights, [requests[i][3][0] for i in indices], family,
                           fit_intercept)
        for index, value in zip(indices, stats):
            results[index] = value
    return SharedResults(results)


@dataclass
class FoldGrams:
    """Centred Gram statistics of each fold's rows (``folds[f]``), summed over partitions."""

    folds: list

    def __add__(self, other):
        return FoldGrams([a + b for a, b in zip(self.folds, other.folds)])


def fold_grams(part, fold_ids, n_folds):
    """The centred Gram statistics of each fold's rows of one partition: one read of ``X``
    per fold's rows (each row is read once)."""
    X, y, weight = part
    X = kernel_matrix(X)
    fold_ids = np.asarray(fold_ids)
    stats = []
    for fold in range(n_folds):
        rows = np.flatnonzero(fold_ids == fold)
        if rows.size == 0:
            stats.append(GramStats.empty(X.shape[1]))
            continue
        sub_weight = None if weight is None else weight[rows]
        stats.append(gram((X[rows], y[rows], sub_weight)))
    return FoldGrams(stats)


@dataclass
class HeldOut:
    """Sums over held-out rows for each of several coefficient vectors.

    ``weight`` is the held-out weight; ``loss`` the weighted sum of squared errors
    (regression) or of log-losses (classification) per vector; ``correct`` the weight of
    correctly classified rows per vector (classification); ``y_sum``, ``y_squares`` the
    weighted sums of ``y`` and ``y^2`` (regression, for R^2).
    """

    weight: float
    loss: np.ndarray
    correct: np.ndarray
    y_sum: float
    y_squares: float

    def __add__(self, other):
        return HeldOut(self.weight + other.weight, self.loss + other.loss,
                       self.correct + other.correct, self.y_sum + other.y_sum,
                       self.y_squares + other.y_squares)


def held_out_errors(part, fold_ids, fold, coefs, intercepts, task):
    """Losses of several models on the rows of one partition held out in ``fold``.

    Parameters
    ----------
    part : tuple
        ``(X, y, weight[, offset])``; ``y`` as fitted (0/1 for two classes, class indices
        for more); the offset is added to every model's predictors.
    fold_ids : ndarray of int
        The fold of each row of the partition.
    fold : int
    coefs : ndarray
        ``(n_models, d)`` for regression and two classes, ``(n_models, K, d)`` for more.
    intercepts : ndarray
        ``(n_models,)`` or ``(n_models, K)``.
    task : {"regression", "binary", "multinomial"} or Family
        A family: its unit loss (``pointwise_loss``) at each model's predictors.

    Returns
    -------
    HeldOut
    """
    X, y, weight = part[:3]
    X = kernel_matrix(X)
    rows = np.flatnonzero(np.asarray(fold_ids) == fold)
    n_models = coefs.shape[0]
    if rows.size == 0:
        return HeldOut(0.0, np.zeros(n_models), np.zeros(n_models), 0.0, 0.0)
    X_t, y_t = X[rows], y[rows]
    w_t = np.ones(rows.size) if weight is None else weight[rows]
    offset = part[3][rows][:, None] if len(part) > 3 else 0.0
    if task == "multinomial":
        K, d = coefs.shape[1], coefs.shape[2]
        eta = np.asarray(X_t @ coefs.reshape(n_models * K, d).T).reshape(rows.size, n_models, K)
        eta = eta + intercepts[None, :, :] + np.expand_dims(offset, -1)
        labels = y_t.astype(np.intp)
        chosen = np.take_along_axis(eta, labels[:, None, None], axis=2)[:, :, 0]
        losses = logsumexp(eta, axis=2) - chosen
        correct = np.argmax(eta, axis=2) == labels[:, None]
    else:
        eta = np.asarray(X_t @ coefs.T) + intercepts[None, :] + offset
        if not isinstance(task, str):
            losses = task.pointwise_loss(y_t[:, None], eta)
            correct = np.zeros_like(losses, dtype=bool)
        elif task == "binary":
            positive = y_t[:, None] == 1.0
            losses = -np.where(positive, log_expit(eta), log_expit(-eta))
            correct = (eta > 0) == positive
        else:
            losses = (y_t[:, None] - eta) ** 2
            correct = np.zeros_like(losses, dtype=bool)
    return HeldOut(float(w_t.sum()), w_t @ losses, w_t @ correct.astype(np.float64),
                   float(w_t @ y_t), float(w_t @ y_t**2))



def held_out_errors_of_splits(part, fold_ids, splits, task):
    """:func:`held_out_errors` of several splits' models in one read of the partition.

    ``fold_ids`` holds the partition's fold assignments (one array per distinct
    assignment); each split is ``(assignment, fold, coefs, intercepts)``.
    """
    return SharedResults([held_out_errors(part, fold_ids[assignment], fold, coefs, intercepts,
                                          task)
                          for assignment, fold, coefs, intercepts in splits])


@dataclass
class LeaveOneOut:
    """Sums over rows of leave-one-out errors ``e_i = r_i / (1 - h_ii)`` of ridge, one entry
    per alpha: ``weighted = sum w e^2``; the row count, the total weight and the weighted
    sums of ``y`` and ``y^2`` (for R^2).  ``per_row``: the ``(rows, n_alphas)`` errors when
    kept."""

    weighted: np.ndarray
    rows: int
    weight: float
    y_sum: float
    y_squares: float
    per_row: np.ndarray | None = None

    def __add__(self, other):
        return LeaveOneOut(self.weighted + other.weighted, self.rows + other.rows,
                           self.weight + other.weight, self.y_sum + other.y_sum,
                           self.y_squares + other.y_squares)


def leave_one_out_errors(part, basis, eigenvalues, means, alphas, coefs, intercepts,
                         total_weight, keep_rows=False):
    """Exact leave-one-out errors of ridge for every alpha on one partition: one read of ``X``.

    With ``A = X_c^T W X_c + alpha I = V diag(lambda + alpha) V^T`` (``X_c`` centred on the
    weighted means ``means`` when an intercept is fitted, else None and ``X`` itself), the
    leverage of row ``i`` is ``h_ii = w_i (|((x_i - means) V)|^2_{1/(lambda + alpha)} +
    1 / total_weight)`` (the last term only with an intercept), and its leave-one-out error
    is ``(y_i - x_i coef - intercept) / (1 - h_ii)``.

    Parameters
    ----------
    part : tuple
        ``(X, y, weight)``.
    basis, eigenvalues : ndarray
        ``V`` (d x d) and ``lambda`` (d,) of the Gram matrix.
    means : ndarray or None
        Weighted column means (None without an intercept).
    alphas : ndarray of shape (n_alphas,)
    coefs : ndarray of shape (n_alphas, d)
    intercepts : ndarray of shape (n_alphas,)
    total_weight : float
    keep_rows : bool
        Also return every row's errors (``per_row``).
    """
    X, y, weight = part
    X = kernel_matrix(X)
    w = np.ones(X.shape[0]) if weight is None else weight
    projected = np.asarray(X @ basis)
    if means is not None:
        projected = projected - means @ basis
    inverse = 1.0 / (eigenvalues[:, None] + alphas[None, :])
    leverage = (projected**2) @ inverse
    if means is not None:
        leverage = leverage + 1.0 / total_weight
    leverage *= w[:, None]
    residual = y[:, None] - np.asarray(X @ coefs.T) - intercepts[None, :]
    errors = residual / (1.0 - leverage)
    return LeaveOneOut(w @ errors**2, int(X.shape[0]), float(w.sum()), float(w @ y),
                       float(w @ y**2), errors if keep_rows else None)
