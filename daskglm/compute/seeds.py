"""Seeds: one integer root for every random stream, from scikit-learn-style ``random_state``."""

from __future__ import annotations

import numpy as np

__all__ = ["root_seed"]


def root_seed(random_state):
    """A non-negative integer seed from None, an int, a RandomState or a Generator.

    The root of every random stream of a run (SGD draws, synthetic data chunks).
    """
    if random_state is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be >= 0; got {random_state!r}.")
        return int(random_state)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int64).max))
    raise ValueError(
        f"random_state must be None, an int, a RandomState or a Generator; got {random_state!r}."
    )
