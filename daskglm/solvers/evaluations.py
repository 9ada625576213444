"""In which coordinates a problem's coefficients lie while a solver iterates."""

from __future__ import annotations

import numpy as np

from ..compute.coordinates import Standardised, Whitened
from ..compute.losses import loss_of

__all__ = ["preconditioned_coordinates"]


def preconditioned_coordinates(problem, column_moments, curvature, standardize=True,
                               covariance=None):
    """Standardised coordinates (:class:`~daskglm.compute.coordinates.Standardised`) in
    which the objective's Hessian has a diagonal close to ``curvature`` (the family's, at
    the start point): columns centred and scaled to unit variance from the validation
    round's ``column_moments`` (means, mean squares), each scale widened by the penalty's
    curvature relative to the loss's, ``sqrt(var_j + alpha_j / curvature)``; the same map
    for every class of a multinomial ``problem``.  Without ``standardize`` (or without
    moments) only the penalty's widening.  With the columns' ``covariance`` as well,
    whitened coordinates (:class:`~daskglm.compute.coordinates.Whitened`), in which the
    Hessian is close to ``curvature`` times the identity, where it is positive
    definite."""
    n_features = problem.n_features
    penalty_curvature = problem.penalty.hess_diag(np.zeros(n_features))
    if standardize and column_moments is not None and covariance is not None:
        whitened = Whitened.from_moments(column_moments[0], covariance, problem.fit_intercept,
                                         penalty_curvature / curvature)
        if whitened is not None:
            return loss_of(problem).per_class(whitened)
    coordinates = Standardised()
    if standardize and column_moments is not None:
        coordinates = Standardised.from_moments(*column_moments, problem.fit_intercept)
    if np.any(penalty_curvature > 0):
        scales = np.ones(n_features) if coordinates.scales is None else coordinates.scales
        coordinates = Standardised(np.sqrt(scales**2 + penalty_curvature / curvature),
                                   coordinates.means)
    return loss_of(problem).per_class(coordinates)
