"""Backtracking (Armijo) line search, shared by every solver that takes steps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LineSearchResult", "backtracking"]

#: Relative difference of function values below which they are treated as unresolved.
_RESOLVED = 1e-10


@dataclass
class LineSearchResult:
    step: float
    params: np.ndarray
    value: float
    grad: np.ndarray
    evaluations: int
    success: bool


def backtracking(value_and_grad, params, value, grad, direction, step, *, shrink=0.5,
                 sufficient_decrease=1e-4, max_evaluations=40, resolve_round_off=False,
                 slope=None, evaluated=None):
    """Find a step along ``direction`` that satisfies the Armijo condition.

    Every trial point costs one call of ``value_and_grad`` (one engine round), whose
    gradient is kept so that the accepted point needs no further round.

    Parameters
    ----------
    value_and_grad : callable
        ``params -> (value, grad)``.
    params, value, grad : current point, its value and gradient.
    direction : ndarray
        A descent direction (``grad @ direction < 0``).
    step : float
        First step tried.
    shrink : float
        Factor applied to the step after each failed trial.
    sufficient_decrease : float
        Armijo constant ``c1``.
    max_evaluations : int
        Trials before giving up.
    resolve_round_off : bool
        Where the two function values differ by less than ``1e-10`` relative (near the
        optimum, where their difference is mostly round-off), test the decrease estimated
        from the gradients by the trapezoid rule, ``(g(trial) + g).(trial - params) / 2``
        (exact for quadratics), instead of the difference of the values.
    slope : float, optional
        The decrease predicted per unit step, negative: ``grad @ direction`` by default;
        a proximal method gives its model's (the smooth part's slope plus the change of
        the non-smooth part over the full step).
    evaluated : callable, optional
        ``trial -> point``: the point ``value_and_grad`` actually evaluated for ``trial``
        (compressed gradient descent evaluates at the partitions' replica of the
        coefficients).  The point is then the trial point, and its decrease is tested
        against the one predicted along ``point - params``.

    Returns
    -------
    LineSearchResult
        ``success`` is False when no trial decreased the objective enough; the point
        returned is then the starting point.
    """
    slope = float(grad @ direction) if slope is None else float(slope)
    for evaluation in range(1, max_evaluations + 1):
        trial = params + step * direction
        trial_value, trial_grad = value_and_grad(trial)
        predicted, moved_downhill = step * slope, True
        if evaluated is not None:
            trial = evaluated(trial)
            predicted = float(grad @ (trial - params))
            moved_downhill = predicted < 0
        decrease = trial_value - value
        if resolve_round_off and abs(decrease) <= _RESOLVED * max(1.0, abs(value)):
            decrease = 0.5 * float((trial_grad + grad) @ (trial - params))
        if (np.isfinite(trial_value) and moved_downhill
                and decrease <= sufficient_decrease * predicted):
            return LineSearchResult(step, trial, trial_value, trial_grad, evaluation, True)
        step *= shrink
    return LineSearchResult(0.0, params, value, grad, max_evaluations, False)
