"""Which kernels evaluate a problem's loss, and in which coordinates its coefficients lie:
the one place solvers tell a single-output problem from a multinomial one.
"""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..compute.coordinates import Standardised
from ..compute.kernels import loss_grad, loss_grad_hess
from ..compute.multinomial import (
    PerClassCoordinates,
    multinomial_loss_grad,
    multinomial_loss_grad_hess,
)
from ..model.multinomial import MultinomialProblem

__all__ = ["loss_kernel", "per_class", "is_multinomial", "preconditioned_coordinates"]


def is_multinomial(problem) -> bool:
    """Whether ``problem`` has one coefficient vector per class (the softmax model)."""
    return isinstance(problem, MultinomialProblem)


def loss_kernel(problem, hessian=False):
    """``(kernel, args, kind)``: ``kernel(part, params, *args)`` sums ``problem``'s loss and
    gradient over a partition's rows (and the Hessian with ``hessian``), and the kind of
    round that runs it."""
    kind = Kind.HESSIAN if hessian else Kind.GRADIENT
    if is_multinomial(problem):
        kernel = multinomial_loss_grad_hess if hessian else multinomial_loss_grad
        return kernel, (problem.n_classes, problem.fit_intercept), kind
    kernel = loss_grad_hess if hessian else loss_grad
    return kernel, (problem.family, problem.fit_intercept), kind


def per_class(problem, coordinates):
    """``coordinates`` of one coefficient vector, applied to every class's for a
    multinomial ``problem`` (unchanged otherwise)."""
    if is_multinomial(problem):
        return PerClassCoordinates(coordinates, problem.n_features, problem.n_classes,
                                   problem.fit_intercept)
    return coordinates


def preconditioned_coordinates(problem, column_moments, curvature, standardize=True):
    """Standardised coordinates (:class:`~daskglm.compute.coordinates.Standardised`) in
    which the objective's Hessian has a diagonal close to ``curvature`` (the family's, at
    the start point): columns centred and scaled to unit variance from the validation
    round's ``column_moments`` (means, mean squares), each scale widened by the penalty's
    curvature relative to the loss's, ``sqrt(var_j + alpha_j / curvature)``; the same map
    for every class of a multinomial ``problem``.  Without ``standardize`` (or without
    moments) only the penalty's widening."""
    n_features = problem.n_features
    coordinates = Standardised()
    if standardize and column_moments is not None:
        coordinates = Standardised.from_moments(*column_moments, problem.fit_intercept)
    penalty_curvature = problem.penalty.hess_diag(np.zeros(n_features))
    if np.any(penalty_curvature > 0):
        scales = np.ones(n_features) if coordinates.scales is None else coordinates.scales
        coordinates = Standardised(np.sqrt(scales**2 + penalty_curvature / curvature),
                                   coordinates.means)
    return per_class(problem, coordinates)
