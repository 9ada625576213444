"""Losses of scikit-learn's SGD estimators that are not GLM families.

Hinge, squared hinge, perceptron and modified Huber for classification; Huber, epsilon-
insensitive and squared epsilon-insensitive for regression, and these with the squared
error on the -1/+1 signs of class labels (:class:`OnSigns`, scikit-learn's classifier
with a regression loss).  Each is a per-row loss of the
target ``y`` and the linear predictor ``eta`` with its derivative in ``eta``, exactly
scikit-learn's (``sklearn.linear_model._sgd_fast``), and offers the part of the
:class:`~daskglm.model.families.Family` interface that the SGD kernels and the fit template
use (``loss``, ``loss_and_dloss``, ``check_target``, ``start_intercept``), so that the
stochastic kernels (:mod:`daskglm.compute.stochastic`) run them unchanged.  The logistic
loss and the squared error stay the :class:`~daskglm.model.families.Binomial` and
:class:`~daskglm.model.families.Gaussian` families.

Classification losses take the engine's 0/1 encoding of the labels (1 for ``classes_[1]``)
and use the sign ``s = 2 y - 1`` as scikit-learn does.  Losses are frozen dataclasses:
cheap to send to workers, equal when their parameters are.  Nothing here imports dask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.numerics import float64_array, scale_by_weight, weighted_sum
from .loss_codes import SIGNS_SUFFIX

__all__ = [
    "SGDLoss", "Hinge", "SquaredHinge", "ModifiedHuber", "Huber", "EpsilonInsensitive",
    "SquaredEpsilonInsensitive", "SquaredError", "OnSigns", "CLASSIFICATION_LOSSES",
    "REGRESSION_LOSSES",
]


#: scikit-learn's bound on a row's loss derivative (``MAX_DLOSS`` of ``_sgd_fast``).
MAX_DLOSS = 1e12


class SGDLoss:
    """A per-row loss ``loss(y, eta)`` and its derivative in ``eta``."""

    name = "sgd loss"
    #: not squared error (see :meth:`daskglm.model.problem.Problem.features`)
    quadratic = False
    #: Whether the targets are 0/1 class labels.
    classification = False

    def pointwise_loss(self, y, eta):
        raise NotImplementedError

    def pointwise_dloss(self, y, eta):
        raise NotImplementedError

    def loss(self, y, eta, weight=None):
        """Weighted SUM of the per-row losses (inf where they overflow, as scikit-learn's
        sum, without a floating-point error under ``np.errstate(all="raise")``)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return weighted_sum(self.pointwise_loss(y, eta), weight)

    def dloss(self, y, eta, weight=None):
        """Per-row derivative of the weighted loss in ``eta``, clipped to
        ``[-MAX_DLOSS, MAX_DLOSS]`` as scikit-learn's SGD clips it."""
        with np.errstate(over="ignore", invalid="ignore"):
            dloss = np.clip(self.pointwise_dloss(y, eta), -MAX_DLOSS, MAX_DLOSS)
        return scale_by_weight(dloss, weight)

    def loss_and_dloss(self, y, eta, weight=None):
        return self.loss(y, eta, weight), self.dloss(y, eta, weight)

    def check_target(self, y):
        """Raise ValueError for targets outside the loss's domain (0/1 for classifiers)."""
        if self.classification and not np.all((y == 0) | (y == 1)):
            raise ValueError(f"The {self.name} loss needs 0/1 encoded class labels.")

    def start_intercept(self):
        """The intercept of a first iterate: 0."""
        return 0.0

    def compiled_loss(self):
        """``(name, parameter)`` of this loss in the compiled row loops
        (:mod:`daskglm.compute.family_formulas`, where each has the derivative of
        :meth:`dloss`), or None (the loops then take the path over :meth:`dloss`)."""
        return None


def _sign(y):
    """Labels 0/1 as scikit-learn's -1/+1."""
    return 2.0 * float64_array(y) - 1.0


@dataclass(frozen=True)
class Hinge(SGDLoss):
    """``max(0, threshold - s eta)``: the SVM's hinge (threshold 1) or the perceptron's (0).

    As scikit-learn, the derivative is ``-s`` wherever ``s eta <= threshold``, so the
    perceptron moves at ``eta = 0``.
    """

    threshold: float = 1.0
    classification = True

    @property
    def name(self):
        return "hinge" if self.threshold == 1.0 else "perceptron"

    def pointwise_loss(self, y, eta):
        return np.maximum(self.threshold - _sign(y) * eta, 0.0)

    def pointwise_dloss(self, y, eta):
        s = _sign(y)
        return np.where(s * eta <= self.threshold, -s, 0.0)

    def compiled_loss(self):
        return "hinge", float(self.threshold)


@dataclass(frozen=True)
class SquaredHinge(SGDLoss):
    """``max(0, threshold - s eta)^2``."""

    threshold: float = 1.0
    name = "squared_hinge"
    classification = True

    def pointwise_loss(self, y, eta):
        return np.maximum(self.threshold - _sign(y) * eta, 0.0) ** 2

    def pointwise_dloss(self, y, eta):
        s = _sign(y)
        margin = self.threshold - s * eta
        return np.where(margin > 0, -2.0 * s * margin, 0.0)

    def compiled_loss(self):
        return "squared_hinge", float(self.threshold)


@dataclass(frozen=True)
class ModifiedHuber(SGDLoss):
    """Quadratically smoothed hinge: ``0`` for ``z = s eta >= 1``, ``(1 - z)^2`` for
    ``-1 <= z < 1`` and ``-4 z`` below (Zhang, 2004)."""

    name = "modified_huber"
    classification = True

    def pointwise_loss(self, y, eta):
        z = _sign(y) * eta
        return np.where(z >= 1.0, 0.0, np.where(z >= -1.0, (1.0 - z) ** 2, -4.0 * z))

    def pointwise_dloss(self, y, eta):
        s = _sign(y)
        z = s * eta
        return np.where(z >= 1.0, 0.0, np.where(z >= -1.0, -2.0 * s * (1.0 - z), -4.0 * s))

    def compiled_loss(self):
        return "modified_huber", 0.0


@dataclass(frozen=True)
class Huber(SGDLoss):
    """``r^2 / 2`` for residuals ``r = eta - y`` up to ``epsilon``, linear beyond."""

    epsilon: float = 0.1
    name = "huber"

    def pointwise_loss(self, y, eta):
        r = np.abs(eta - y)
        c = self.epsilon
        return np.where(r <= c, 0.5 * r * r, c * r - 0.5 * c * c)

    def pointwise_dloss(self, y, eta):
        r = eta - y
        return np.where(np.abs(r) <= self.epsilon, r, self.epsilon * np.sign(r))

    def compiled_loss(self):
        return "huber", float(self.epsilon)


@dataclass(frozen=True)
class EpsilonInsensitive(SGDLoss):
    """``max(0, |y - eta| - epsilon)``, the loss of support vector regression."""

    epsilon: float = 0.1
    name = "epsilon_insensitive"

    def pointwise_loss(self, y, eta):
        return np.maximum(np.abs(y - eta) - self.epsilon, 0.0)

    def pointwise_dloss(self, y, eta):
        z = y - eta
        return np.where(z > self.epsilon, -1.0, np.where(-z > self.epsilon, 1.0, 0.0))

    def compiled_loss(self):
        return "epsilon_insensitive", float(self.epsilon)


@dataclass(frozen=True)
class SquaredEpsilonInsensitive(SGDLoss):
    """``max(0, |y - eta| - epsilon)^2``."""

    epsilon: float = 0.1
    name = "squared_epsilon_insensitive"

    def pointwise_loss(self, y, eta):
        return np.maximum(np.abs(y - eta) - self.epsilon, 0.0) ** 2

    def pointwise_dloss(self, y, eta):
        z = y - eta
        c = self.epsilon
        return np.where(z > c, -2.0 * (z - c), np.where(z < -c, 2.0 * (-z - c), 0.0))

    def compiled_loss(self):
        return "squared_epsilon_insensitive", float(self.epsilon)


@dataclass(frozen=True)
class SquaredError(SGDLoss):
    """``(y - eta)^2 / 2``, for :class:`OnSigns` (the regressor's is the Gaussian family)."""

    name = "squared_error"

    def pointwise_loss(self, y, eta):
        r = eta - y
        return 0.5 * r * r

    def pointwise_dloss(self, y, eta):
        return eta - y

    def compiled_loss(self):
        return "gaussian", 0.0


@dataclass(frozen=True)
class OnSigns(SGDLoss):
    """A regression loss on the signs ``s = 2 y - 1`` of 0/1 labels: scikit-learn's
    classifier with ``loss="squared_error"``, ``"huber"``, ``"epsilon_insensitive"`` or
    ``"squared_epsilon_insensitive"`` regresses the -1/+1 labels."""

    inner: SGDLoss
    classification = True

    @property
    def name(self):
        return self.inner.name

    def pointwise_loss(self, y, eta):
        return self.inner.pointwise_loss(_sign(y), eta)

    def pointwise_dloss(self, y, eta):
        return self.inner.pointwise_dloss(_sign(y), eta)

    def compiled_loss(self):
        inner = self.inner.compiled_loss()
        return None if inner is None else (inner[0] + SIGNS_SUFFIX, inner[1])


#: ``loss=`` names of ``SGDClassifier`` (besides ``"log_loss"``) and how to build them.
CLASSIFICATION_LOSSES = {
    "hinge": lambda epsilon: Hinge(1.0),
    "perceptron": lambda epsilon: Hinge(0.0),
    "squared_hinge": lambda epsilon: SquaredHinge(1.0),
    "modified_huber": lambda epsilon: ModifiedHuber(),
    "squared_error": lambda epsilon: OnSigns(SquaredError()),
    "huber": lambda epsilon: OnSigns(Huber(epsilon)),
    "epsilon_insensitive": lambda epsilon: OnSigns(EpsilonInsensitive(epsilon)),
    "squared_epsilon_insensitive": lambda epsilon: OnSigns(SquaredEpsilonInsensitive(epsilon)),
}

#: ``loss=`` names of ``SGDRegressor`` (besides ``"squared_error"``) and how to build them.
REGRESSION_LOSSES = {
    "huber": Huber,
    "epsilon_insensitive": EpsilonInsensitive,
    "squared_epsilon_insensitive": SquaredEpsilonInsensitive,
}
