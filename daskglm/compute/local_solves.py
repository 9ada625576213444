"""Pure local solves: optimisation problems on ONE partition's data, run where it lives.

Methods that optimise on the workers (divide-and-conquer averaging, consensus ADMM) map
these functions over the partitions.  Each minimises a problem built from the partition's
loss with scipy's L-BFGS-B, evaluating the loss and its gradient with
:func:`daskglm.compute.kernels.loss_grad` on the partition's in-memory arrays.  Like the kernels,
they are functions of ``(partition, arguments)`` only; nothing here imports dask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..optim.restarted_lbfgs import EVALUATIONS_PER_ITERATION, minimize_to_tol
from .coordinates import Standardised
from .kernels import loss_grad

__all__ = ["LocalFit", "partition_weight", "fit_partition", "proximal_point"]

@dataclass
class LocalFit:
    """The result of one partition's solve.

    Attributes
    ----------
    params : ndarray
        The local solution (coefficients, then the intercept when fitted).
    weight : float
        Total sample weight of the partition.
    converged : bool
        Whether the largest entry of the local problem's (projected) gradient at ``params``
        is at most the solve's ``tol``.
    n_iter : int
    loss : float
        Sum of the partition's weighted losses at ``center`` (:func:`proximal_point`) or
        at ``params`` (:func:`fit_partition`).
    grad : ndarray or None
        Sum of the partition's loss gradients at ``center`` (:func:`proximal_point` only).
    """

    params: np.ndarray
    weight: float
    converged: bool
    n_iter: int
    loss: float = 0.0
    grad: np.ndarray | None = None


def partition_weight(part):
    """Total sample weight of a partition (its row count when unweighted)."""
    _, y, weight = part
    return float(y.shape[0]) if weight is None else float(weight.sum())


def _local_fit(params, weight, n_iter, grad_max, tol, loss, grad=None):
    # converged means the gradient criterion held, whatever made scipy stop
    return LocalFit(params, weight, bool(grad_max <= tol), int(n_iter), loss, grad)


def fit_partition(part, params0, family, penalty, fit_intercept, tol, max_iter):
    """Minimise the partition's weighted MEAN loss plus ``penalty`` (intercept unpenalised).

    Smooth penalties are handled directly.  The L1 part of a non-smooth penalty is made
    smooth by splitting the coefficients into non-negative parts, ``coef = plus - minus``,
    with ``l1 * sum(plus + minus)`` and bounds ``plus, minus >= 0`` (exact at the optimum).

    Parameters
    ----------
    part : tuple
        ``(X, y, weight)`` of one partition.
    params0 : ndarray
        Starting point.
    family : Family
    penalty : Penalty
        On the mean-loss scale, acting on the coefficients.
    fit_intercept : bool
    tol : float
        Stop when the largest entry of the (projected) gradient is at most ``tol``.
    max_iter : int
        Most L-BFGS-B iterations.

    Returns
    -------
    LocalFit
        ``weight`` 0 (and ``params0`` returned) for a partition without weight.
    """
    weight = partition_weight(part)
    params0 = np.asarray(params0, dtype=float)
    if weight <= 0:
        return LocalFit(params0.copy(), 0.0, True, 0)
    n_coef = params0.shape[0] - int(fit_intercept)

    def mean_loss(params):
        stats = loss_grad(part, params, family, fit_intercept)
        return stats.loss / weight, stats.grad / weight

    if penalty.smooth:
        def fun(params):
            loss, grad = mean_loss(params)
            coef = params[:n_coef]
            grad[:n_coef] += penalty.grad(coef)
            return loss + penalty.value(coef), grad

        found = minimize_to_tol(fun, params0, tol=tol, max_iter=max_iter,
                                max_evaluations=EVALUATIONS_PER_ITERATION * max_iter)
        params = found.x
    else:
        l1 = penalty.alpha * penalty.l1_ratio

        def fun(z):
            plus, minus = z[:n_coef], z[n_coef : 2 * n_coef]
            params = np.concatenate([plus - minus, z[2 * n_coef :]])
            loss, grad = mean_loss(params)
            coef = params[:n_coef]
            coef_grad = grad[:n_coef] + penalty.grad(coef)
            value = loss + penalty.smooth_value(coef) + l1 * float(plus.sum() + minus.sum())
            return value, np.concatenate([coef_grad + l1, l1 - coef_grad, grad[n_coef:]])

        coef0 = params0[:n_coef]
        z0 = np.concatenate([np.maximum(coef0, 0), np.maximum(-coef0, 0), params0[n_coef:]])
        bounds = [(0.0, None)] * (2 * n_coef) + [(None, None)] * int(fit_intercept)
        found = minimize_to_tol(fun, z0, tol=tol, max_iter=max_iter,
                                max_evaluations=EVALUATIONS_PER_ITERATION * max_iter, bounds=bounds)
        z = found.x
        params = np.concatenate([z[:n_coef] - z[n_coef : 2 * n_coef], z[2 * n_coef :]])
    loss = loss_grad(part, params, family, fit_intercept).loss
    return _local_fit(params, weight, found.n_iter, found.optimality, tol, loss)


def proximal_point(part, start_and_dual, center, rho, family, fit_intercept, scale, tol, max_iter,
                   coordinates=None):
    """ADMM's local step: ``argmin_x scale * loss(x) + rho / 2 * |x - center + dual|^2``.

    Warm-started from the partition's previous solution.  The loss and gradient sums at
    ``center`` are returned too, so the driver can follow the objective of the consensus
    point without another round (they cost no extra pass when the solve starts there).
    With ``coordinates``, ``x``, ``dual`` and ``center`` are in those coordinates
    (:mod:`daskglm.compute.coordinates`).

    Parameters
    ----------
    part : tuple
        ``(X, y, weight)`` of one partition.
    start_and_dual : tuple of ndarray
        ``(x, dual)``: the partition's previous solution and its scaled dual variable.
    center : ndarray
        The consensus point ``z``.
    rho : float
        Augmented-Lagrangian parameter.
    family : Family
    fit_intercept : bool
    scale : float
        Factor on the loss sum (``1 / total weight`` of the whole data set).
    tol : float
        Stop when the largest gradient entry is at most ``tol``.
    max_iter : int
        Most L-BFGS-B iterations.
    coordinates : Standardised, optional
        The change of variables the consensus runs in (identity when None).

    Returns
    -------
    LocalFit
        With ``loss`` and ``grad`` the sums at ``center``, the gradient with respect to
        the parameters ``(coef, intercept)``.
    """
    coordinates = Standardised() if coordinates is None else coordinates
    start, dual = start_and_dual
    target = center - dual
    at_center = loss_grad(part, coordinates.to_params(center), family, fit_intercept)

    def fun(theta):
        if np.array_equal(theta, center):  # a start at the consensus point: no second pass
            stats = at_center
        else:
            stats = loss_grad(part, coordinates.to_params(theta), family, fit_intercept)
        diff = theta - target
        return (scale * stats.loss + 0.5 * rho * float(diff @ diff),
                scale * coordinates.grad_to_theta(stats.grad) + rho * diff)

    found = minimize_to_tol(fun, np.asarray(start, dtype=float), tol=tol, max_iter=max_iter,
                            max_evaluations=EVALUATIONS_PER_ITERATION * max_iter)
    return _local_fit(found.x, at_center.weight, found.n_iter, found.optimality, tol,
                      at_center.loss, at_center.grad)
