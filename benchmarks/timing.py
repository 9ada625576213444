"""Wall-clock measurement: repeated calls, each timed on its own."""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass

__all__ = ["Timing", "measure"]


@dataclass
class Timing:
    """Seconds of each repeat.

    Attributes
    ----------
    times : list of float
    """

    times: list

    @property
    def median(self):
        """Median seconds; the figure every comparison uses."""
        return statistics.median(self.times)

    @property
    def best(self):
        """Fastest repeat."""
        return min(self.times)

    def to_dict(self):
        """Median, best and every repeat."""
        return {"median_s": self.median, "min_s": self.best, "times_s": list(self.times)}


def measure(function, repeats):
    """Call ``function()`` ``repeats`` times and time each call.

    Garbage is collected before each call, outside the timed region.

    Parameters
    ----------
    function : callable
        Called with no arguments.
    repeats : int

    Returns
    -------
    timing : Timing
    results : list
        What each call returned.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1; got {repeats}.")
    times, results = [], []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        results.append(function())
        times.append(time.perf_counter() - start)
    return Timing(times), results
