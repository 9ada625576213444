"""Dense linear algebra on the driver: the d x d systems of Newton steps and normal equations.

:func:`solve_symmetric` solves them; :func:`solve_nonnegative` minimises the quadratic they
stem from over ``x >= 0`` (non-negative least squares from the Gram matrix).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

__all__ = ["solve_symmetric", "solve_nonnegative"]


def solve_symmetric(matrix, rhs):
    """Solve ``matrix @ x = rhs`` for symmetric positive semi-definite ``matrix``.

    Rank is decided on the Jacobi-scaled matrix ``D^-1/2 matrix D^-1/2`` (``D`` its
    diagonal), which has a unit diagonal: a coordinate far less curved than the others
    (an unpenalised intercept next to a strong penalty) is no smaller an eigenvalue there,
    and is kept.  Cholesky of the scaled matrix when it is well conditioned; otherwise its
    eigenvalues below ``1e3 * d * eps * max`` are treated as zero and the solution is the
    minimum-norm one (in the original coordinates, as numpy's ``lstsq``) among those of
    the system with the null space so found.

    Returns
    -------
    x : ndarray
    rank_deficient : bool
    """
    d = matrix.shape[0]
    if d == 0:
        return np.zeros(0), False
    # relative size below which an eigenvalue (or a squared Cholesky pivot) is round-off
    cutoff = 1e3 * d * np.finfo(float).eps
    diag = np.diag(matrix).copy()
    diag[~(diag > 0)] = 1.0
    scale = 1.0 / np.sqrt(diag)
    scaled = matrix * scale[:, None] * scale[None, :]
    scaled_rhs = rhs * scale
    try:
        factor = scipy.linalg.cho_factor(scaled, lower=True, check_finite=False)
        pivots = np.abs(np.diag(factor[0]))
        if pivots.min() ** 2 > cutoff * pivots.max() ** 2:
            return scale * scipy.linalg.cho_solve(factor, scaled_rhs, check_finite=False), False
    except np.linalg.LinAlgError:
        pass
    values, vectors = scipy.linalg.eigh(scaled, check_finite=False)
    keep = values > cutoff * max(values.max(), 0.0)
    particular = scale * (vectors[:, keep] @ ((vectors[:, keep].T @ scaled_rhs) / values[keep]))
    if keep.all():
        return particular, True
    # the null space of ``matrix`` is D^-1/2 times that of the scaled matrix
    null_basis, _ = np.linalg.qr(scale[:, None] * vectors[:, ~keep])
    return particular - null_basis @ (null_basis.T @ particular), True


def solve_nonnegative(matrix, rhs):
    """Minimise ``x.matrix.x / 2 - rhs.x`` over ``x >= 0``, for positive semi-definite ``matrix``.

    Non-negative least squares from the Gram matrix (``matrix = X^T W X``, ``rhs = X^T W
    y``) by Lawson and Hanson's active-set method: coordinates enter the free set where
    the negative gradient ``rhs - matrix x`` is largest, the free system is solved by
    :func:`solve_symmetric`, and the step is cut short where a free coordinate would turn
    negative.  The result satisfies the optimality conditions (zero gradient on the free
    coordinates, non-negative at the others) up to round-off relative to ``rhs``.

    Returns
    -------
    x : ndarray
    rank_deficient : bool
        Whether a free system was singular.
    """
    d = matrix.shape[0]
    x = np.zeros(d)
    free = np.zeros(d, dtype=bool)
    rank_deficient = False
    if d == 0:
        return x, rank_deficient
    # a negative gradient this small is round-off of the products that form it
    cutoff = 1e3 * d * np.finfo(float).eps * max(float(np.abs(rhs).max()), np.finfo(float).tiny)
    for _ in range(3 * d):
        slope = rhs - matrix @ x
        entering = ~free & (slope > cutoff)
        if not entering.any():
            break
        free[np.argmax(np.where(entering, slope, -np.inf))] = True
        for _ in range(3 * d):
            trial = np.zeros(d)
            trial[free], singular = solve_symmetric(matrix[np.ix_(free, free)], rhs[free])
            rank_deficient |= singular
            if np.all(trial[free] > 0):
                x = trial
                break
            blocking = free & (trial <= 0)
            step = np.min(x[blocking] / (x[blocking] - trial[blocking]))
            x = x + step * (trial - x)
            free &= x > 0
            x[~free] = 0.0
    return x, rank_deficient
