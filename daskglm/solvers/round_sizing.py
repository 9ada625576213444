"""Steps per round, chosen from what a round costs on the cluster at hand.

Stochastic solvers take many small steps.  On a cluster every round pays a fixed cost
(messages, scheduling: milliseconds) that does not shrink with the work in it, so one
round per step of a few rows spends nearly all of its time on that cost.  The solvers that
can take several steps per round (local SGD's ``sync_every``, gossip's ``local_steps``)
size their rounds from two measurements: the wall time of a round that computes almost
nothing (the fixed cost) and the span of a round of :data:`PROBE_STEPS` steps (the compute
of a step).  A round then takes the smallest power of two of steps whose compute is at
least :data:`COMPUTE_TO_FIXED` times the fixed cost, at most one epoch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..compute.amortise import amortising_steps

__all__ = ["COMPUTE_TO_FIXED", "PROBE_STEPS", "RoundSizing", "size_rounds", "step_seconds"]

#: A round's compute is made at least this many times its fixed cost.
COMPUTE_TO_FIXED = 10.0
#: Steps of the round that times a step (its results are dropped).
PROBE_STEPS = 64


@dataclass(frozen=True)
class RoundSizing:
    """Steps per round and the measurements behind them.

    Attributes
    ----------
    steps : int
    fixed_seconds : float
        Wall time of a round that computes almost nothing.
    step_seconds : float
        Compute of one step of every partition (the partitions of a worker one after the
        other, the workers at once).
    most : int
        The cap (steps in one epoch).
    """

    steps: int
    fixed_seconds: float
    step_seconds: float
    most: int

    @property
    def reason(self):
        """One sentence: why this many steps."""
        ratio = self.steps * self.step_seconds / self.fixed_seconds if self.fixed_seconds else math.inf
        why = (f"a round's fixed cost is {1e3 * self.fixed_seconds:.2f} ms and a step's compute "
               f"{1e6 * self.step_seconds:.1f} us, so {self.steps} steps make a round's compute "
               f"{ratio:.0f}x its fixed cost")
        if self.steps == self.most:
            why += " (at most one epoch per round)"
        return why


def step_seconds(record, steps, fixed_seconds):
    """Seconds of compute per step of a round ``record`` that took ``steps`` steps: its
    span (first task's start to last task's end) where that was measured during the fit
    (direct rounds), else its wall time less the fixed cost ``fixed_seconds``."""
    span = record.seconds_span
    if span is None:
        span = max(record.seconds - fixed_seconds, 0.0)
    return span / max(1, steps)


def size_rounds(fixed_seconds, seconds_per_step, most):
    """The :class:`RoundSizing` for a fixed cost and a step's compute, capped at ``most``."""
    most = max(1, int(most))
    steps = (most if seconds_per_step <= 0
             else amortising_steps(fixed_seconds, seconds_per_step, COMPUTE_TO_FIXED))
    return RoundSizing(min(steps, most), float(fixed_seconds), float(seconds_per_step), most)
