"""How many steps amortise a fixed cost: the arithmetic behind every ``"auto"`` round size."""

from __future__ import annotations

import math

__all__ = ["amortising_steps"]


def amortising_steps(fixed_seconds, seconds_per_step, ratio):
    """The smallest power of two ``k`` with ``k * seconds_per_step >= ratio * fixed_seconds``.

    A power of two, so that small changes in the timings rarely change the choice; 1 when
    a step alone outweighs the fixed cost that much.  ``seconds_per_step <= 0`` (nothing
    measured) gives 1.
    """
    if seconds_per_step <= 0:
        return 1
    wanted = ratio * fixed_seconds / seconds_per_step
    return 1 << max(0, math.ceil(math.log2(max(wanted, 1.0))))
