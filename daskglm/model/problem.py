"""The problem a solver minimises: data family, penalty and the intercept convention.

Parameters are one vector ``params``: the coefficients, followed by the intercept when
``fit_intercept`` is set.  The intercept is never penalised.

A problem lists the :class:`Feature` s that set it apart from the simplest one (least
squares with at most an L2 penalty); every solver declares the features it handles
(``Solver.handles``), so that a new family or penalty works with every solver that can
take it, and the others say why not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .families import Family
from .penalties import Penalty

__all__ = ["Problem", "Feature"]


class Feature:
    """What a problem may need from a solver beyond least squares with an L2 penalty."""

    NON_QUADRATIC_LOSS = "a loss other than squared error (a non-Gaussian family or link)"
    NON_QUADRATIC_PENALTY = "a penalty other than none or l2"
    NONSMOOTH_PENALTY = "a non-smooth penalty (l1, elastic net)"
    NONNEGATIVE = "non-negative coefficients (positive=True)"
    MULTINOMIAL = "the multinomial model (more than two classes)"
    OFFSET = "an offset added to the linear predictor"


@dataclass
class Problem:
    """``min mean_weighted_loss(family) + penalty(coef)`` over coef (and an unpenalised intercept).

    The parameter vector is the coefficients followed by the intercept when
    ``fit_intercept``.
    """

    family: Family
    penalty: Penalty
    fit_intercept: bool
    n_features: int
    #: Whether the partitions carry an offset (``(X, y, weight, offset)``), which only the
    #: solvers built on the loss kernels that add it can take.
    has_offset: bool = False

    @property
    def n_params(self):
        return self.n_features + int(self.fit_intercept)

    def coef(self, params):
        """The penalised part of ``params``."""
        return params[: self.n_features]

    def curvature_at(self, params):
        """The family's curvature (its ``d2loss`` per unit weight: the variance function
        for a canonical link, the Fisher weight for another) at the mean ``params``
        predict with zero features: the scale of the loss's Hessian in standardised
        coordinates (1 when that is not finite and positive)."""
        intercept = float(params[-1]) if self.fit_intercept else 0.0
        curvature = float(self.family.variance(np.array([intercept]))[0])
        return curvature if math.isfinite(curvature) and curvature > 0 else 1.0

    def class_curvature_at(self, params):
        """The curvature across several outputs' predictors at ``params`` (a matrix), or
        None for one output."""
        return None

    def intercept_only_start(self, params, value, grad, column_means):
        """For several outputs: the intercepts that minimise the objective with every
        coefficient zero, and the objective's value and gradient there, from those
        (``value``, ``grad``) at ``params``; None for one output (whose start intercept
        is already that) or where they cannot be told without a round."""
        return None

    def features(self) -> frozenset:
        """The :class:`Feature` s of this problem."""
        features = set()
        penalty = self.penalty
        if not self.family.quadratic:
            features.add(Feature.NON_QUADRATIC_LOSS)
        if getattr(penalty, "nonnegative", False):
            # on the orthant the L1 part is linear: smooth for a solver that keeps the bounds
            features.add(Feature.NONNEGATIVE)
            penalty = penalty.inner
            if not penalty.quadratic:
                features.add(Feature.NON_QUADRATIC_PENALTY)
        else:
            if not penalty.quadratic:
                features.add(Feature.NON_QUADRATIC_PENALTY)
            if not penalty.smooth:
                features.add(Feature.NONSMOOTH_PENALTY)
        if self.has_offset:
            features.add(Feature.OFFSET)
        return frozenset(features)

    def split(self, params):
        """``(coef, intercept)``; the intercept is 0.0 when none is fitted."""
        intercept = float(params[-1]) if self.fit_intercept else 0.0
        return np.array(params[: self.n_features]), intercept
