"""Steps per round, chosen from what a round costs on the cluster at hand.

Stochastic solvers take many small steps.  On a cluster every round pays a fixed cost
(messages, scheduling, a task's set-up: milliseconds) that does not shrink with the work
in it, so one round per step of a few rows spends nearly all of its time on that cost.
The solvers that can take several steps per round (local SGD's ``sync_every``, gossip's
``local_steps``) time rounds of :data:`PROBE_STEPS` steps and fit a line through the wall
times of the last two, ``wall = fixed + steps * per_step`` (the first warms what a
partition's first steps of an epoch set up, such as its order of the rows).  A round then
takes the smallest power of two of steps whose compute is at least
:data:`COMPUTE_TO_FIXED` times the fixed cost, at most one epoch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..compute.amortise import amortising_steps

__all__ = ["COMPUTE_TO_FIXED", "PROBE_STEPS", "RoundSizing", "size_rounds", "size_from_probes"]

#: A round's compute is made at least this many times its fixed cost.
COMPUTE_TO_FIXED = 10.0
#: Steps of the rounds that time a step.
PROBE_STEPS = (64, 64, 256)


@dataclass(frozen=True)
class RoundSizing:
    """Steps per round and the measurements behind them.

    Attributes
    ----------
    steps : int
    fixed_seconds : float
        Wall time of a round beyond its steps.
    step_seconds : float
        Wall time of one step of every partition (the partitions of a worker one after
        the other, the workers at once).
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
        ratio = (self.steps * self.step_seconds / self.fixed_seconds if self.fixed_seconds
                 else math.inf)
        why = (f"a round's fixed cost is {1e3 * self.fixed_seconds:.2f} ms and a step's compute "
               f"{1e6 * self.step_seconds:.1f} us, so {self.steps} steps make a round's compute "
               f"{ratio:.0f}x its fixed cost")
        if self.steps == self.most:
            why += " (at most one epoch per round)"
        return why


def size_rounds(fixed_seconds, seconds_per_step, most):
    """The :class:`RoundSizing` for a fixed cost and a step's compute, capped at ``most``."""
    most = max(1, int(most))
    steps = (most if seconds_per_step <= 0
             else amortising_steps(fixed_seconds, seconds_per_step, COMPUTE_TO_FIXED))
    return RoundSizing(min(steps, most), float(fixed_seconds), float(seconds_per_step), most)


def size_from_probes(walls, most, least_fixed=0.0):
    """The :class:`RoundSizing` from the wall times of rounds of :data:`PROBE_STEPS` steps.

    The last two give the line ``wall = fixed + steps * per_step``; the fixed cost is at
    least ``least_fixed`` (a round that computes almost nothing, measured apart).  Where
    noise makes the slope not positive, the last round's wall time over its steps bounds
    the step from above.
    """
    (k1, w1), (k2, w2) = list(zip(PROBE_STEPS, walls))[-2:]
    per_step = (w2 - w1) / (k2 - k1)
    if per_step <= 0:
        per_step = w2 / k2
    return size_rounds(max(w1 - per_step * k1, least_fixed), per_step, most)
