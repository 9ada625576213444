"""In which coordinates a problem's coefficients lie while a solver iterates."""

from __future__ import annotations

import numpy as np

from ..compute.coordinates import Standardised, Whitened
from ..compute.losses import loss_of

__all__ = ["preconditioned_coordinates", "start_at_class_shares"]


def preconditioned_coordinates(problem, column_moments, curvature, standardize=True,
                               covariance=None, class_curvature=None):
    """Standardised coordinates (:class:`~daskglm.compute.coordinates.Standardised`) in
    which the objective's Hessian has a diagonal close to ``curvature`` (the family's, at
    the start point): columns centred and scaled to unit variance from the validation
    round's ``column_moments`` (means, mean squares), each scale widened by the penalty's
    curvature relative to the loss's, ``sqrt(var_j + alpha_j / curvature)``; the same map
    for every class of a multinomial ``problem``.  Without ``standardize`` (or without
    moments) only the penalty's widening.  With the columns' ``covariance`` as well,
    whitened coordinates (:class:`~daskglm.compute.coordinates.Whitened`), in which the
    Hessian is close to ``curvature`` times the identity, where it is positive
    definite.  With several outputs' ``class_curvature`` (the problem's
    :meth:`~daskglm.model.problem.Problem.class_curvature_at` the start point), the
    outputs are also mapped so that each direction across them is as curved as the
    average (:func:`~daskglm.compute.class_coordinates.class_mixing`)."""
    n_features = problem.n_features
    penalty_curvature = problem.penalty.hess_diag(np.zeros(n_features))
    moments = column_moments if standardize else None
    per_class = {"class_curvature": class_curvature,
                 "relative_penalty": _relative_penalty(penalty_curvature, moments)}
    if moments is not None and covariance is not None:
        whitened = Whitened.from_moments(column_moments[0], covariance, problem.fit_intercept,
                                         penalty_curvature / curvature)
        if whitened is not None:
            return loss_of(problem).per_class(whitened, **per_class)
    coordinates = Standardised()
    if moments is not None:
        coordinates = Standardised.from_moments(*moments, problem.fit_intercept)
    if np.any(penalty_curvature > 0):
        scales = np.ones(n_features) if coordinates.scales is None else coordinates.scales
        coordinates = Standardised(np.sqrt(scales**2 + penalty_curvature / curvature),
                                   coordinates.means)
    return loss_of(problem).per_class(coordinates, **per_class)


def _relative_penalty(penalty_curvature, column_moments):
    """The median over the penalised columns of the penalty's curvature over the column's
    variance (1 without moments); 0 where no column is penalised."""
    penalised = penalty_curvature > 0
    if not np.any(penalised):
        return 0.0
    variance = np.ones_like(penalty_curvature)
    if column_moments is not None:
        means, mean_squares = column_moments
        variance = np.maximum(np.asarray(mean_squares) - np.asarray(means) ** 2, 0.0)
    penalised &= variance > 0
    if not np.any(penalised):
        return 0.0
    return float(np.median(penalty_curvature[penalised] / variance[penalised]))


def start_at_class_shares(problem, objective, params0, value, grad):
    """``(params0, value, grad)`` moved to the intercepts that minimise the objective of a
    multinomial ``problem`` with zero coefficients (the classes' shares of the weight,
    read from ``grad``; :meth:`~daskglm.model.problem.Problem.intercept_only_start`),
    with the value and gradient there; as given where that cannot be told without a
    round.  The curvature across the classes is then the one the first iterations see,
    so the coordinates built from it fit them."""
    means = None
    if objective.engine.column_moments is not None:
        means = objective.column_moments()[0]
    moved = problem.intercept_only_start(params0, value, grad, means)
    return (params0, value, grad) if moved is None else moved
