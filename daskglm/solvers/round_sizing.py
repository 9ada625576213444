"""Steps per round, chosen from what a round costs on the cluster at hand.

Stochastic solvers take many small steps.  On a cluster every round pays a fixed cost
(messages, scheduling, a task's set-up: milliseconds) that does not shrink with the work
in it, so one round per step of a few rows spends nearly all of its time on that cost.
The solvers that can take several steps per round (local SGD's ``sync_every``, gossip's
``local_steps``) time rounds of :data:`FIRST_PROBE_STEPS` steps, then twice as many, and so
on (:class:`StepTimer`), until a round's wall time is :data:`PROBE_WALL_RATIO` times that of
a round computing almost nothing and of the shortest timing round, and fit
``wall = fixed + steps * per_step`` (at least three rounds: the first also sets up what a partition's first
steps of an epoch need, such as its order of the rows).  A round then takes the smallest
power of two of steps whose compute is at least :data:`COMPUTE_TO_FIXED` times the fixed
cost, at most one epoch.  The step's time is the least slope between consecutive timing
rounds (the first left out), so that one round slowed by the machine does not size the
rounds for a step hundreds of times dearer than it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..compute.amortise import amortising_steps

__all__ = ["COMPUTE_TO_FIXED", "RoundSizing", "StepTimer", "size_rounds"]

#: A round's compute is made at least this many times its fixed cost.
COMPUTE_TO_FIXED = 10.0
#: Steps of the first round that times a step.
FIRST_PROBE_STEPS = 64
#: Timing rounds double their steps until their wall time is this many times an empty
#: round's and the shortest timing round's (the first left out), so that the steps' compute stands above the noise of the fixed cost.
PROBE_WALL_RATIO = 3.0
#: Timing rounds at the least (the first warms up).
MIN_PROBES = 3


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


class StepTimer:
    """Rounds of doubling steps that time a step and a round's fixed cost.

    Parameters
    ----------
    empty_seconds : float
        Wall time of a round that computes almost nothing: the least fixed cost, and the
        yardstick of when a round's compute is large enough to be timed.
    most : int
        Steps in one epoch: the most a round takes.

    Attributes
    ----------
    steps : int
        Steps of the next timing round.
    """

    def __init__(self, empty_seconds, most):
        self.empty_seconds = float(empty_seconds)
        self.most = max(1, int(most))
        self.steps = min(FIRST_PROBE_STEPS, self.most)
        self.walls = []

    def add(self, wall_seconds, steps=None):
        """Record the wall time of a round of :attr:`steps` steps (``steps`` where the
        round took fewer, at an epoch's end); the :class:`RoundSizing` once the timing is
        done, else None (and :attr:`steps` is the next round's)."""
        self.walls.append((self.steps if steps is None else int(steps), float(wall_seconds)))
        warm = [wall for _, wall in self.walls[1:]]
        done = (len(self.walls) >= MIN_PROBES
                and wall_seconds >= PROBE_WALL_RATIO * max(self.empty_seconds, min(warm)))
        if not done and self.steps < self.most:
            self.steps = min(2 * self.steps, self.most)
            return None
        return self._sizing()

    def _sizing(self):
        if len(self.walls) < 2:
            (steps, wall), = self.walls
            return size_rounds(max(self.empty_seconds, 0.0), wall / steps, self.most)
        (k1, w1), (k2, w2) = self.walls[-2:]
        # the least slope between consecutive warm rounds: one round slowed by the machine
        # (a spike of milliseconds over a few microseconds of steps) inflates the slope
        # that ends on it and deflates the next, and a low estimate errs towards fewer,
        # longer rounds, never towards a flood of them
        warm = self.walls[1:] if len(self.walls) > 2 else self.walls
        slopes = [(b - a) / (kb - ka) for (ka, a), (kb, b) in zip(warm, warm[1:])
                  if kb != ka and b > a]
        per_step = min(slopes) if slopes else 0.0
        if per_step <= 0:  # noise: the last round's wall time bounds the step from above
            per_step = w2 / k2
        return size_rounds(max(w1 - per_step * k1, self.empty_seconds), per_step, self.most)
