"""Learning-rate rules for stochastic gradient methods, as composable ``(init, update)`` pairs.

A step rule turns a gradient into a learning rate: ``init(params)`` builds its state and
``update(grad, state, step)`` returns ``(rate, new_state)`` for the 0-based step number
``step``.  The rate is a scalar or one rate per parameter; the solver moves by
``-rate * grad``.  Rules are frozen dataclasses holding only numbers, so they are cheap to
send to workers, and they compose: :class:`Chain` multiplies the rates of its rules (and
keeps a tuple of their states).  The named schedules of scikit-learn's SGD estimators are
built from these pieces by :func:`make_step_rule`.

States are None, arrays or tuples of those; :func:`scale_state` and :func:`add_states`
combine them, which is how local SGD averages the states of its partitions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Scale",
    "PolynomialDecay",
    "OptimalDecay",
    "AdagradScaling",
    "AdaptiveScale",
    "Chain",
    "make_step_rule",
    "step_rates",
    "scale_state",
    "add_states",
    "LEARNING_RATES",
]

#: The ``learning_rate`` names :func:`make_step_rule` understands.
LEARNING_RATES = ("constant", "invscaling", "optimal", "adagrad", "adaptive")


@dataclass(frozen=True)
class Scale:
    """A constant rate ``eta0``."""

    eta0: float

    def init(self, params):
        return None

    def update(self, grad, state, step):
        return self.eta0, state

    def rates(self, steps):
        """The rates of :meth:`update` at ``steps`` (its state stays None)."""
        return np.full(len(steps), float(self.eta0))


@dataclass(frozen=True)
class PolynomialDecay:
    """Rate ``1 / (step + 1) ** power_t`` (scikit-learn's ``"invscaling"`` without ``eta0``)."""

    power_t: float

    def init(self, params):
        return None

    def update(self, grad, state, step):
        return 1.0 / (step + 1.0) ** self.power_t, state

    def rates(self, steps):
        """The rates of :meth:`update` at ``steps``, each the same float arithmetic."""
        power = self.power_t
        return np.array([1.0 / (int(step) + 1.0) ** power for step in steps], dtype=np.float64)


@dataclass(frozen=True)
class OptimalDecay:
    """Rate ``1 / (alpha * (t0 + step))``, scikit-learn's ``"optimal"`` schedule.

    ``t0`` is Bottou's heuristic: the first rate is ``alpha ** -0.25``, the scale of a
    typical weight under an L2 penalty of strength ``alpha``.
    """

    alpha: float

    def __post_init__(self):
        if not self.alpha > 0:
            raise ValueError(
                "The 'optimal' learning rate needs a penalty strength alpha > 0; "
                f"got {self.alpha!r}."
            )

    @property
    def t0(self):
        return 1.0 / (self.alpha * self.alpha**-0.25)

    def init(self, params):
        return None

    def update(self, grad, state, step):
        return 1.0 / (self.alpha * (self.t0 + step)), state

    def rates(self, steps):
        """The rates of :meth:`update` at ``steps``."""
        return 1.0 / (self.alpha * (self.t0 + np.asarray(steps, dtype=np.float64)))


@dataclass(frozen=True)
class AdagradScaling:
    """Per-parameter rate ``1 / (sqrt(sum of squared gradients) + eps)`` (Duchi et al., 2011).

    The state is the running sum of squared gradients, this step's included.
    """

    eps: float = 1e-8

    def init(self, params):
        return np.zeros_like(np.asarray(params, dtype=float))

    def update(self, grad, state, step):
        state = state + grad * grad
        return 1.0 / (np.sqrt(state) + self.eps), state


@dataclass(frozen=True)
class AdaptiveScale:
    """scikit-learn's ``"adaptive"`` rate: ``eta0`` while the stopping rule sees progress.

    The state is the current rate (a 0-d array, so that local SGD can average it as any
    other state).  The solver calls :meth:`on_plateau` when its stopping rule fires
    (``n_iter_no_change`` epochs without an improvement of ``tol``): the rate is divided
    by ``factor``, or, once it is at most ``min_rate``, the run stops.
    """

    eta0: float
    factor: float = 5.0
    min_rate: float = 1e-6

    def init(self, params):
        return np.array(self.eta0)

    def update(self, grad, state, step):
        return float(state), state

    def on_plateau(self, state):
        """The state after a plateau, or None when the rate is spent and the run stops."""
        if not float(state) > self.min_rate:
            return None
        return np.array(float(state) / self.factor)


@dataclass(frozen=True)
class Chain:
    """The product of the rates of ``rules``; the state is the tuple of their states."""

    rules: tuple

    def init(self, params):
        return tuple(rule.init(params) for rule in self.rules)

    def update(self, grad, state, step):
        rate = 1.0
        new_state = []
        for rule, rule_state in zip(self.rules, state):
            factor, rule_state = rule.update(grad, rule_state, step)
            rate = rate * factor
            new_state.append(rule_state)
        return rate, tuple(new_state)

    def rates(self, steps):
        """The rates of :meth:`update` at ``steps``, for rules whose states stay None
        (those with a ``rates`` method): the same products, in the same order."""
        rate = np.ones(len(steps))
        for rule in self.rules:
            rate = rate * rule.rates(steps)
        return rate


def make_step_rule(learning_rate, eta0=0.01, power_t=0.25, alpha=0.0):
    """The step rule of a scikit-learn ``learning_rate`` name.

    Parameters
    ----------
    learning_rate : {"constant", "invscaling", "optimal", "adagrad", "adaptive"}
        ``"constant"``: ``eta0``; ``"invscaling"``: ``eta0 / (t + 1) ** power_t``;
        ``"optimal"``: ``1 / (alpha * (t0 + t))``; ``"adagrad"``: ``eta0`` over the root
        of each parameter's sum of squared gradients; ``"adaptive"``: ``eta0``, divided
        by 5 at each plateau of the stopping rule (:class:`AdaptiveScale`).  ``t``
        counts steps from 0.
    eta0 : float
        Initial rate, > 0 (unused by ``"optimal"``).
    power_t : float
        Exponent of ``"invscaling"``.
    alpha : float
        Penalty strength, > 0 for ``"optimal"``.

    Returns
    -------
    Scale, Chain, OptimalDecay or AdaptiveScale
    """
    if learning_rate not in LEARNING_RATES:
        raise ValueError(
            f"Unknown learning_rate {learning_rate!r}; choose one of {list(LEARNING_RATES)}."
        )
    if learning_rate == "optimal":
        return OptimalDecay(float(alpha))
    if not (isinstance(eta0, (int, float, np.number)) and math.isfinite(eta0) and eta0 > 0):
        raise ValueError(
            f"eta0 must be a finite number > 0 for learning_rate={learning_rate!r}; got {eta0!r}."
        )
    if learning_rate == "constant":
        return Scale(float(eta0))
    if learning_rate == "adaptive":
        return AdaptiveScale(float(eta0))
    if learning_rate == "invscaling":
        if not (isinstance(power_t, (int, float, np.number)) and math.isfinite(power_t)):
            raise ValueError(f"power_t must be a finite number; got {power_t!r}.")
        return Chain((Scale(float(eta0)), PolynomialDecay(float(power_t))))
    return Chain((Scale(float(eta0)), AdagradScaling()))


def scale_state(state, factor):
    """``factor * state`` leaf by leaf (None stays None)."""
    if state is None:
        return None
    if isinstance(state, tuple):
        return tuple(scale_state(leaf, factor) for leaf in state)
    return factor * state


def add_states(a, b):
    """``a + b`` leaf by leaf, for two states of the same rule."""
    if a is None:
        return None
    if isinstance(a, tuple):
        return tuple(add_states(x, y) for x, y in zip(a, b))
    return a + b


def step_rates(rule, state, steps):
    """``(rates, last rate, state)``: ``rule``'s rates at ``steps`` (step numbers) and its
    state after them, as :meth:`update` called once per step gives them; in one call
    where every rule has a ``rates`` method (their states stay None), which spares a
    round of thousands of local steps a Python call per step."""
    if _has_rates(rule):
        rates = rule.rates(steps)
        return rates, float(rates[-1]) if len(rates) else 0.0, state
    rates = np.empty(len(steps))
    rate = 0.0
    for k, step in enumerate(steps):
        rate, state = rule.update(None, state, int(step))
        rates[k] = rate
    return rates, rate, state


def _has_rates(rule):
    if isinstance(rule, Chain):
        return all(_has_rates(inner) for inner in rule.rules)
    return hasattr(rule, "rates")
