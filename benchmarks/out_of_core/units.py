"""Small numeric helpers shared by the modules: rates, scaling and medians that pass
None through.
"""

from __future__ import annotations

import statistics


def rate(nbytes, seconds):
    """Gigabytes per second, or None without a positive duration."""
    return nbytes / seconds / 1e9 if nbytes is not None and seconds else None


def scaled(value, factor):
    """``value * factor``, or None for a None value."""
    return None if value is None else value * factor


def median(values):
    """The median of the values that are not None, or None when there are none."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
