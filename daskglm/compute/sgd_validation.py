"""The score of held-out rows for SGD's early stopping, as sums over a partition.

scikit-learn's ``early_stopping=True`` scores the held-out rows after every epoch with the
estimator's ``score``: the accuracy for a classifier, R^2 for a regressor, both weighted
by the sample weights.  :func:`validation_sums` gives the sums of one partition that add
up over partitions to either; :func:`score_of_sums` turns the total into the score.
Nothing here imports dask.
"""

from __future__ import annotations

import numpy as np

from ..backend import namespace
from .kernels import kernel_matrix, linear_predictor

__all__ = ["validation_sums", "score_of_sums"]


def validation_sums(part, params, fit_intercept, classification):
    """Weighted sums of one partition's rows ``(X, y, weight)`` at ``params``.

    Returns
    -------
    ndarray of shape (4,)
        ``[sum w, sum w * correct, 0, 0]`` for a classifier (``y`` the 0/1 encoding, a
        row correct when its decision function is > 0 exactly when ``y`` is 1), ``[sum w,
        sum w y, sum w y^2, sum w (y - prediction)^2]`` for a regressor.
    """
    X, y, weight = part[:3]
    X = kernel_matrix(X)
    if X.shape[0] == 0:
        return np.zeros(4)
    eta = linear_predictor(X, params, fit_intercept)
    xp = namespace(eta)
    w = xp.ones(X.shape[0], dtype=xp.float64) if weight is None else xp.astype(weight, xp.float64)
    if classification:
        correct = xp.astype((eta > 0) == (y > 0.5), xp.float64)
        sums = (xp.sum(w), w @ correct, 0.0, 0.0)
    else:
        y = xp.astype(y, xp.float64)
        residual = y - eta
        sums = (xp.sum(w), w @ y, w @ (y * y), w @ (residual * residual))
    return np.array([float(value) for value in sums])


def score_of_sums(sums, classification):
    """The accuracy or R^2 from the sums of :func:`validation_sums` over all partitions.

    R^2 is ``1 - SSE / SST`` with ``SST = sum w y^2 - (sum w y)^2 / sum w``; for constant
    targets (``SST == 0``) it is 1 for a perfect fit and 0 otherwise, as
    :func:`sklearn.metrics.r2_score`.
    """
    total, first, second, squared_error = (float(v) for v in sums)
    if classification:
        return first / total
    total_squares = max(second - first * first / total, 0.0)
    if total_squares == 0.0:
        return 1.0 if squared_error == 0.0 else 0.0
    return 1.0 - squared_error / total_squares
