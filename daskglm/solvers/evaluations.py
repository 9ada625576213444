"""Which kernels evaluate a problem's loss, and in which coordinates its coefficients lie:
the one place solvers tell a single-output problem from a multinomial one.
"""

from __future__ import annotations

from ..accounting.kinds import Kind
from ..compute.kernels import loss_grad, loss_grad_hess
from ..compute.multinomial import (
    PerClassCoordinates,
    multinomial_loss_grad,
    multinomial_loss_grad_hess,
)
from ..model.multinomial import MultinomialProblem

__all__ = ["loss_kernel", "per_class", "is_multinomial"]


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
