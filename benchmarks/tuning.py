"""Calibration: the loosest setting at which a method reaches a target gap.

Solvers stop on different criteria, in different units, so one nominal tolerance means
different accuracies.  Each method is instead run at the settings of its ladder (its
tolerance, loosest first, or its number of epochs, fewest first) until the relative
objective gap of its solution is at most the target; that setting is then used for the
timed repeats.  The accepted run doubles as the warm-up (and, for runs too long to
repeat within the suite's budget, as the timed run itself).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

__all__ = ["Trial", "Calibration", "calibrate", "thin"]


@dataclass
class Trial:
    """One run during calibration."""

    tol: float
    gap: float
    seconds: float


@dataclass
class Calibration:
    """The setting chosen for a method and how it was found.

    Attributes
    ----------
    tol : float
        The loosest setting of the ladder that reached the target (the last one tried
        when none did).
    met : bool
        Whether the target gap was reached.
    trials : list of Trial
    capped : bool
        Whether calibration stopped early because one run exceeded the time cap.
    result : object
        What the accepted (or last) run returned.
    """

    tol: float
    met: bool
    trials: list = field(default_factory=list)
    capped: bool = False
    result: object = None

    def to_dict(self):
        """The chosen setting, whether it met the target, and every trial."""
        return {"tol": self.tol, "met": self.met, "capped": self.capped,
                "trials": [vars(trial).copy() for trial in self.trials]}


def thin(ladder, stride):
    """Every ``stride``-th value of ``ladder`` from its first, always keeping its last.

    Parameters
    ----------
    ladder : sequence
    stride : int

    Returns
    -------
    tuple
    """
    if stride <= 1 or len(ladder) <= 2:
        return tuple(ladder)
    kept = list(ladder[::stride])
    if kept[-1] != ladder[-1]:
        kept.append(ladder[-1])
    return tuple(kept)


def _nearest(ladder, value):
    """Index of the ladder value closest to ``value`` (on a log scale for tolerances)."""
    def distance(item):
        if item > 0 and value > 0:
            return abs(math.log(item / value))
        return abs(item - value)

    return min(range(len(ladder)), key=lambda i: distance(ladder[i]))


def calibrate(run, gap_of, tolerances, target, stop_after_s=None, start=None,
              trust_start=False):
    """The loosest setting of ``tolerances`` at which ``gap_of(run(tol)) <= target``.

    Without ``start`` the ladder is walked from its loosest setting towards tighter ones
    until the target is met.  With ``start`` (the setting known to be accepted, e.g. from
    an earlier run on the same data) the walk begins there: towards tighter settings
    while the target is missed, towards looser ones while it is still met, so that the
    setting found is the same as from the loose end whenever the gap falls as the
    setting tightens.

    Parameters
    ----------
    run : callable
        ``tol -> result``.
    gap_of : callable
        ``result -> relative objective gap``.
    tolerances : sequence of float
        Loosest first.
    target : float
    stop_after_s : float, optional
        The time cap: stop tightening (``met=False, capped=True``) when one more run, if it
        took as long as the last, would bring the runs' total beyond this many seconds.
    start : float, optional
        Where to begin the walk (the nearest setting of the ladder).
    trust_start : bool
        Accept ``start`` when it meets the target without trying looser settings: for a
        start found by a walk from the loose end on the same data, with a method whose
        iterates do not depend on timing, the looser settings are known to miss.

    Returns
    -------
    Calibration
    """
    if not tolerances:
        raise ValueError("Nothing to calibrate: the ladder of tolerances is empty.")
    trials, results = [], {}

    def attempt(index):
        begin = time.perf_counter()
        results[index] = run(tolerances[index])
        seconds = time.perf_counter() - begin
        gap = float(gap_of(results[index]))
        trials.append(Trial(tolerances[index], gap, seconds))
        return gap <= target, seconds

    index = 0 if start is None else _nearest(tolerances, start)
    met, seconds = attempt(index)
    if met:
        best = index
        while best > 0 and not (trust_start and start is not None):  # a looser one may do
            looser_met, _ = attempt(best - 1)
            if not looser_met:
                break
            best -= 1
        return Calibration(tolerances[best], True, trials, result=results[best])
    while index + 1 < len(tolerances):
        spent = sum(trial.seconds for trial in trials)
        if stop_after_s is not None and spent + seconds > stop_after_s:
            return Calibration(tolerances[index], False, trials, capped=True,
                               result=results[index])
        index += 1
        met, seconds = attempt(index)
        if met:
            return Calibration(tolerances[index], True, trials, result=results[index])
    return Calibration(tolerances[index], False, trials, result=results[index])
