"""Tolerance calibration: the loosest tolerance at which a method reaches a target gap.

Solvers stop on different criteria, in different units, so one nominal tolerance means
different accuracies.  Each method is instead run at the tolerances of its ladder, loosest
first, until the relative objective gap of its solution is at most the target; that
tolerance is then used for the timed repeats.  The accepted run doubles as the warm-up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["Trial", "Calibration", "calibrate"]


@dataclass
class Trial:
    """One run during calibration."""

    tol: float
    gap: float
    seconds: float


@dataclass
class Calibration:
    """The tolerance chosen for a method and how it was found.

    Attributes
    ----------
    tol : float
        The loosest tolerance of the ladder that reached the target (the tightest tried
        when none did).
    met : bool
        Whether the target gap was reached.
    trials : list of Trial
    """

    tol: float
    met: bool
    trials: list = field(default_factory=list)

    def to_dict(self):
        """The chosen tolerance, whether it met the target, and every trial."""
        return {"tol": self.tol, "met": self.met,
                "trials": [vars(trial).copy() for trial in self.trials]}


def calibrate(run, gap_of, tolerances, target, stop_after_s=None):
    """Run ``run(tol)`` at each tolerance, loosest first, until ``gap_of(result) <= target``.

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
        Give up (``met=False``) once one run takes longer than this.

    Returns
    -------
    Calibration
    """
    if not tolerances:
        raise ValueError("Nothing to calibrate: the ladder of tolerances is empty.")
    trials = []
    for tol in tolerances:
        start = time.perf_counter()
        result = run(tol)
        seconds = time.perf_counter() - start
        gap = float(gap_of(result))
        trials.append(Trial(tol, gap, seconds))
        if gap <= target:
            return Calibration(tol, True, trials)
        if stop_after_s is not None and seconds > stop_after_s:
            break
    return Calibration(trials[-1].tol, False, trials)
