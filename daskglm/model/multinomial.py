"""The multinomial (softmax) model of ``K > 2`` classes: its family and its problem.

The targets are class indices ``0 ... K-1`` (stored as floats, as every target is).  Each
class ``k`` has coefficients ``W[k]`` and, with an intercept, ``b[k]``; the linear
predictors of a row are ``eta = x @ W.T + b`` (one per class) and its loss is the
negative log-likelihood of the softmax, ``logsumexp(eta) - eta[y]``.  This is
scikit-learn's multinomial ``LogisticRegression``: all ``K`` classes have coefficients
(the model is over-parametrised and the penalty picks one solution), the intercepts are
not penalised.

The parameter vector is ``W`` flattened row by row (class by class, ``K * d`` entries),
then the ``K`` intercepts: the penalised part comes first, as for every problem, so that
penalties, line searches and Newton steps work on it unchanged.  Products with ``X`` live
in :mod:`daskglm.compute.multinomial`; this module never sees ``X``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..backend import namespace
from .numerics import softmax
from .problem import Feature, Problem

__all__ = ["Multinomial", "MultinomialProblem", "softmax_loss_and_residual"]


class Multinomial:
    """The softmax family of ``n_classes`` classes, in the linear predictors ``eta``.

    Parameters
    ----------
    n_classes : int
        Number of classes, at least 3 (two classes are the binomial family).
    """

    name = "multinomial"
    canonical = True
    quadratic = False
    #: The kernels of the softmax take no offset.
    takes_offset = False
    #: Each row has one linear predictor per class (the columns of ``eta``): the problem is
    #: a :class:`MultinomialProblem` of ``n_classes`` coefficient vectors.
    predictor_per_class = True

    def __init__(self, n_classes):
        if not (isinstance(n_classes, (int, np.integer)) and n_classes >= 3):
            raise ValueError(f"n_classes must be an integer >= 3; got {n_classes!r}.")
        self.n_classes = int(n_classes)

    def __eq__(self, other):
        return type(other) is type(self) and other.n_classes == self.n_classes

    def __hash__(self):
        return hash((type(self).__name__, self.n_classes))

    def __repr__(self):
        return f"Multinomial(n_classes={self.n_classes})"

    def check_target(self, y):
        """Raise ValueError unless every target is a class index ``0 ... n_classes - 1``."""
        xp = namespace(y)
        y = xp.asarray(y)
        if y.size and not (bool(xp.all(y == xp.floor(y))) and float(xp.min(y)) >= 0
                           and float(xp.max(y)) < self.n_classes):
            raise ValueError(
                f"Multinomial targets must be class indices 0 ... {self.n_classes - 1}."
            )

    def start_intercept(self):
        """The intercepts' starting value (all classes equally likely)."""
        return 0.0

    def probabilities(self, eta):
        """Class probabilities, the softmax of each row of ``eta`` (shape (n, K))."""
        return softmax(eta, axis=1)


def softmax_loss_and_residual(y, eta, weight):
    """Loss sum and its derivative in ``eta`` for one block of rows.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Class indices (floats).
    eta : ndarray of shape (n, K)
        Linear predictors.
    weight : ndarray of shape (n,) or None

    Returns
    -------
    loss : float
        ``sum_i w_i (logsumexp(eta_i) - eta_i[y_i])``.
    residual : ndarray of shape (n, K)
        ``w_i (softmax(eta_i) - onehot(y_i))``.
    probabilities : ndarray of shape (n, K)
        ``softmax(eta_i)``.
    """
    xp = namespace(eta)
    classes = xp.arange(eta.shape[1], dtype=y.dtype)
    onehot = xp.astype(y[:, None] == classes[None, :], eta.dtype)
    # logsumexp with the row's largest predictor taken out, its exponentials kept for the
    # probabilities (scipy's logsumexp costs more per call than the sums of a block)
    top = xp.max(eta, axis=1)
    shifted = xp.exp(eta - top[:, None])
    total = xp.sum(shifted, axis=1)
    per_row = top + xp.log(total) - xp.sum(eta * onehot, axis=1)
    prob = shifted / total[:, None]
    residual = prob - onehot
    if weight is not None:
        per_row = per_row * weight
        residual = residual * weight[:, None]
    return float(xp.sum(per_row)), residual, prob


@dataclass
class MultinomialProblem(Problem):
    """``min mean_weighted_softmax_loss + penalty(W)`` over ``W`` (and unpenalised intercepts).

    ``n_features`` is the number of columns of ``X``; the parameter vector holds
    ``n_classes * n_features`` coefficients (class by class) and then, with
    ``fit_intercept``, ``n_classes`` intercepts.
    """

    n_classes: int = 3

    @property
    def n_coef(self):
        """Number of penalised parameters, ``n_classes * n_features``."""
        return self.n_classes * self.n_features

    @property
    def n_params(self):
        return (self.n_features + int(self.fit_intercept)) * self.n_classes

    def coef(self, params):
        return params[: self.n_coef]

    def features(self) -> frozenset:
        """The problem's :class:`~daskglm.model.problem.Feature` s, the multinomial model
        among them."""
        return super().features() | {Feature.MULTINOMIAL}

    def curvature_at(self, params):
        """The softmax's curvature ``p (1 - p)`` at the probabilities the intercepts
        predict with zero features, averaged over the classes (1 if not positive)."""
        intercepts = (np.asarray(params[self.n_coef:], dtype=float) if self.fit_intercept
                      else np.zeros(self.n_classes))
        prob = softmax(intercepts, axis=0)
        curvature = float(np.mean(prob * (1.0 - prob)))
        return curvature if math.isfinite(curvature) and curvature > 0 else 1.0

    def class_curvature_at(self, params):
        """The softmax's curvature across the classes, ``diag(p) - p p^T``, at the
        probabilities the intercepts predict with zero features."""
        intercepts = (np.asarray(params[self.n_coef:], dtype=float) if self.fit_intercept
                      else np.zeros(self.n_classes))
        prob = softmax(intercepts, axis=0)
        return np.diag(prob) - np.outer(prob, prob)

    def intercept_only_start(self, params, value, grad, column_means):
        """The intercepts ``log(share_k)`` (centred), which minimise the objective with
        every coefficient zero, and the objective's value and gradient there.

        At ``params`` with zero coefficients and no offset every row's probabilities are
        ``q = softmax(intercepts)``: the mean loss is ``-sum_k share_k log q_k``, the
        gradient of intercept ``k`` is ``q_k - share_k`` (which gives the classes' shares
        of the weight) and that of ``W[k]`` is ``q_k m - M_k``, with ``m`` the weighted
        ``column_means`` and ``M_k`` the class's weighted column sums over the weight.  So
        the value and gradient at the new intercepts follow without reading ``X``.  None
        where ``params`` has a non-zero coefficient, there is an offset or no intercept,
        a class has no weight, or ``value`` is not the loss these shares give.
        """
        params = np.asarray(params, dtype=float)
        grad = np.asarray(grad, dtype=float)
        if column_means is None or not self.fit_intercept or self.has_offset \
                or np.any(params[: self.n_coef]):
            return None
        before = softmax(params[self.n_coef:], axis=0)
        shares = before - grad[self.n_coef:]
        if not (np.all(np.isfinite(shares)) and np.all(shares > 0)):
            return None
        shares /= shares.sum()
        smooth = float(self.penalty.smooth_value(np.zeros(self.n_coef)))
        loss = -float(shares @ np.log(before))
        if not abs(value - smooth - loss) <= 1e-9 * max(1.0, abs(loss)):
            return None
        intercepts = np.log(shares)
        intercepts -= intercepts.mean()
        moved = params.copy()
        moved[self.n_coef:] = intercepts
        moved_grad = grad.copy()
        moved_grad[: self.n_coef] += np.outer(shares - before, column_means).ravel()
        moved_grad[self.n_coef:] = 0.0
        moved_value = value + float(shares @ (np.log(before) - np.log(shares)))
        return moved, moved_value, moved_grad

    def split(self, params):
        """``(coef, intercept)`` of shapes (n_classes, n_features) and (n_classes,)."""
        params = np.asarray(params, dtype=float)
        coef = params[: self.n_coef].reshape(self.n_classes, self.n_features).copy()
        intercept = (params[self.n_coef:].copy() if self.fit_intercept
                     else np.zeros(self.n_classes))
        return coef, intercept

    def join(self, coef, intercept):
        """The parameter vector of ``coef`` (n_classes, n_features) and ``intercept``."""
        flat = np.asarray(coef, dtype=float).reshape(-1)
        if self.fit_intercept:
            return np.concatenate([flat, np.asarray(intercept, dtype=float).reshape(-1)])
        return flat.copy()
