"""Penalties on the coefficients, evaluated on the driver.

A penalty acts on the feature coefficients only; the intercept is never penalised (the
solvers pass ``coef`` without it).  Each penalty declares what it is (``smooth``, ``quadratic``,
``nonnegative``, the strengths ``l2_strength`` and ``l1_strength`` of a uniform ridge and
lasso part) so that a solver or kernel asks for what it needs rather than for a class:
smooth solvers use :meth:`Penalty.grad` (and :meth:`Penalty.hess_diag`), proximal solvers
use :meth:`Penalty.prox`, and the compiled SGD loops take a penalty of the elastic-net
form (:attr:`Penalty.elastic_net_strengths`).  A new penalty is one subclass that declares
these; no solver or kernel names its class.

The strength convention is glmnet's, applied to the weighted MEAN loss::

    objective = mean_loss + alpha * (l1_ratio * ||coef||_1 + (1 - l1_ratio) / 2 * ||coef||_2^2)

:class:`NonNegative` adds the constraint ``coef >= 0`` (scikit-learn's ``positive=True``) to
any of them, as the indicator function of the non-negative orthant: its proximal operator
is the inner penalty's, clipped at zero.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Penalty", "NoPenalty", "L2", "L1", "ElasticNet", "NonNegative", "make_penalty"]


class Penalty:
    """Base class of penalties on the coefficient vector."""

    #: whether the penalty has a gradient everywhere (solvers without a proximal step
    #: need one)
    smooth = True
    #: whether the penalty is a quadratic form (none, l2: normal equations can take it)
    quadratic = False
    #: whether the penalty adds the constraint ``coef >= 0`` (then ``inner`` is the penalty
    #: on the feasible set)
    nonnegative = False
    #: ``a`` when the smooth part is exactly ``a / 2 * ||coef||^2`` (0: none), else None
    l2_strength: float | None = None
    #: ``b`` when the non-smooth part is exactly ``b * ||coef||_1`` (0: none), else None
    l1_strength: float | None = None
    name = "penalty"
    #: the penalty on the feasible set, on penalties that are ``nonnegative`` only
    inner: Penalty

    @property
    def elastic_net_strengths(self):
        """``(l2, l1)`` when the penalty is exactly ``l1 * ||coef||_1 + l2 / 2 * ||coef||^2``
        with no constraint (no penalty, L2, L1, the elastic net), else None."""
        if self.nonnegative or self.l2_strength is None or self.l1_strength is None:
            return None
        return self.l2_strength, self.l1_strength

    @property
    def ridge_strength(self):
        """``a`` when the penalty is smooth and exactly ``a / 2 * ||coef||^2`` (0: no
        penalty), else None: what kernels with a built-in L2 decay (Hogwild, the lazy
        sparse update) can take."""
        strengths = self.elastic_net_strengths
        return strengths[0] if self.smooth and strengths is not None else None

    @property
    def bounds_optimum(self):
        """Whether the penalty keeps every loss's optimum finite: an L2 penalty with a
        positive strength (strongly convex), or an elastic net with a positive L1 part."""
        strengths = self.elastic_net_strengths
        if strengths is None:
            return False
        l2, l1 = strengths
        return (l2 if self.smooth else l1) > 0

    def value(self, coef) -> float:
        raise NotImplementedError

    def smooth_value(self, coef) -> float:
        """Value of the smooth part (the whole penalty when ``smooth``)."""
        return self.value(coef)

    def grad(self, coef):
        """Gradient of the smooth part."""
        raise NotImplementedError

    def hess_diag(self, coef):
        """Diagonal of the Hessian of the smooth part."""
        raise NotImplementedError

    def prox(self, coef, step):
        """``argmin_z penalty(z) + ||z - coef||^2 / (2 * step)``."""
        raise NotImplementedError

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash((type(self), tuple(sorted(vars(self).items()))))


class NoPenalty(Penalty):
    """No penalty."""

    name = "none"
    quadratic = True
    l2_strength = 0.0
    l1_strength = 0.0

    def value(self, coef):
        return 0.0

    def grad(self, coef):
        return np.zeros_like(coef)

    def hess_diag(self, coef):
        return np.zeros_like(coef)

    def prox(self, coef, step):
        return np.array(coef, dtype=float, copy=True)


class L2(Penalty):
    """Ridge penalty ``alpha / 2 * ||coef||^2``."""

    name = "l2"
    quadratic = True

    def __init__(self, alpha):
        self.alpha = float(alpha)

    @property
    def l2_strength(self):
        return self.alpha

    l1_strength = 0.0

    def value(self, coef):
        return 0.5 * self.alpha * float(np.dot(coef, coef))

    def grad(self, coef):
        return self.alpha * coef

    def hess_diag(self, coef):
        return np.full_like(coef, self.alpha, dtype=float)

    def prox(self, coef, step):
        return coef / (1.0 + step * self.alpha)


class ElasticNet(Penalty):
    """Elastic net ``alpha * (l1_ratio * ||coef||_1 + (1 - l1_ratio) / 2 * ||coef||^2)``."""

    name = "elasticnet"
    smooth = False

    def __init__(self, alpha, l1_ratio):
        self.alpha = float(alpha)
        self.l1_ratio = float(l1_ratio)

    @property
    def _l1(self):
        return self.alpha * self.l1_ratio

    @property
    def _l2(self):
        return self.alpha * (1.0 - self.l1_ratio)

    @property
    def l1_strength(self):
        return self._l1

    @property
    def l2_strength(self):
        return self._l2

    def value(self, coef):
        return self._l1 * float(np.abs(coef).sum()) + 0.5 * self._l2 * float(np.dot(coef, coef))

    def smooth_value(self, coef):
        return 0.5 * self._l2 * float(np.dot(coef, coef))

    def grad(self, coef):
        """Gradient of the smooth (L2) part only."""
        return self._l2 * coef

    def hess_diag(self, coef):
        return np.full_like(coef, self._l2, dtype=float)

    def prox(self, coef, step):
        shrunk = np.sign(coef) * np.maximum(np.abs(coef) - step * self._l1, 0.0)
        return shrunk / (1.0 + step * self._l2)

    def subgradient_distance(self, coef, smooth_grad):
        """Per-coordinate distance of ``-smooth_grad`` to the subdifferential at ``coef``.

        Zero everywhere exactly at an optimum; ``smooth_grad`` is the gradient of the loss
        plus the smooth part of the penalty.
        """
        at_zero = np.maximum(np.abs(smooth_grad) - self._l1, 0.0)
        away = np.abs(smooth_grad + self._l1 * np.sign(coef))
        return np.where(coef == 0, at_zero, away)


class L1(ElasticNet):
    """Lasso penalty ``alpha * ||coef||_1``."""

    name = "l1"

    def __init__(self, alpha):
        super().__init__(alpha, 1.0)

    def __repr__(self):
        return f"L1(alpha={self.alpha!r})"


class NonNegative(Penalty):
    """``inner`` plus the constraint ``coef >= 0`` (the indicator of the orthant).

    Non-smooth (a solver must project or bound the coefficients), but on the feasible set
    the L1 part of ``inner`` is the linear function ``l1 * sum(coef)``, so a bounded
    quasi-Newton method (L-BFGS-B) minimises it as a smooth problem.  ``value`` is that of
    ``inner`` (the solvers keep their iterates feasible); ``smooth_value``, ``grad`` and
    ``hess_diag`` are those of its smooth part; ``prox`` is ``inner``'s clipped at zero,
    exact for these separable penalties whose prox is monotone and keeps signs.
    """

    smooth = False
    nonnegative = True

    def __init__(self, inner):
        if isinstance(inner, NonNegative):
            inner = inner.inner
        self.inner = inner
        self.name = f"non-negative {inner.name}"

    @property
    def alpha(self):
        """The inner penalty's strength (0 without one)."""
        return getattr(self.inner, "alpha", 0.0)

    @property
    def l1_strength(self):
        """Strength of the inner penalty's L1 part: ``alpha * l1_ratio`` (0 if it has none)."""
        return self.alpha * getattr(self.inner, "l1_ratio", 0.0)

    @property
    def l2_strength(self):
        """The inner penalty's :attr:`Penalty.l2_strength`."""
        return self.inner.l2_strength

    def value(self, coef):
        return self.inner.value(coef)

    def smooth_value(self, coef):
        return self.inner.smooth_value(coef)

    def grad(self, coef):
        return self.inner.grad(coef)

    def hess_diag(self, coef):
        return self.inner.hess_diag(coef)

    def prox(self, coef, step):
        return np.maximum(self.inner.prox(coef, step), 0.0)

    def subgradient_distance(self, coef, smooth_grad):
        """Per-coordinate violation of the optimality conditions under ``coef >= 0``.

        With ``g = smooth_grad + l1`` (the gradient on the feasible set), ``|g|`` where
        ``coef > 0`` and ``max(-g, 0)`` at zero.
        """
        grad = smooth_grad + self.l1_strength
        return np.where(coef > 0, np.abs(grad), np.maximum(-grad, 0.0))


def make_penalty(penalty, alpha=1.0, l1_ratio=0.5):
    """Build a :class:`Penalty` from a name and strength.

    Parameters
    ----------
    penalty : {"none", "l2", "l1", "elasticnet"} or None or Penalty
    alpha : float
        Strength on the mean-loss scale, >= 0.
    l1_ratio : float
        Mixing in [0, 1], used by ``"elasticnet"``.
    """
    if isinstance(penalty, Penalty):
        return penalty
    if penalty is None or penalty == "none" or alpha == 0:
        return NoPenalty()
    if not np.isfinite(alpha) or alpha < 0:
        raise ValueError(f"Penalty strength must be a finite number >= 0; got {alpha!r}.")
    if penalty == "l2":
        return L2(alpha)
    if penalty == "l1":
        return L1(alpha)
    if penalty == "elasticnet":
        if l1_ratio is None or not 0.0 <= l1_ratio <= 1.0:
            raise ValueError(f"l1_ratio must be in [0, 1] for the elastic net; got {l1_ratio!r}.")
        if l1_ratio == 0.0:
            return L2(alpha)
        if l1_ratio == 1.0:
            return L1(alpha)
        return ElasticNet(alpha, l1_ratio)
    raise ValueError(
        f"Unknown penalty {penalty!r}; choose one of 'none', 'l2', 'l1', 'elasticnet'."
    )
