"""The options that cut communication, shared by the solvers that take them (``gd``, ``sgd``).

``compression`` (with ``bits`` and ``k``) names a codec of
:mod:`daskglm.compute.compression`; ``deadline`` and ``min_fraction`` make rounds take the
partitions that arrive in time.  Both are checked when the solver is made, before any
work.
"""

from __future__ import annotations

import math

import numpy as np

from ..compute.compression import get_codec

__all__ = ["COMMUNICATION_OPTIONS", "codec_of", "check_waits"]

#: The options and their defaults (none of them set).
COMMUNICATION_OPTIONS = {"compression": None, "bits": None, "k": None, "deadline": None,
                         "min_fraction": None}


def _is_number(value):
    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, bool) and math.isfinite(value))


def codec_of(opts, solver):
    """The codec the options ``compression``, ``bits`` and ``k`` describe (None: none)."""
    spec, bits, k = opts["compression"], opts["bits"], opts["k"]
    if spec is None:
        if bits is not None or k is not None:
            raise ValueError(f"Options 'bits' and 'k' of solver {solver!r} need 'compression'.")
        return None
    if bits is not None or k is not None:
        if not isinstance(spec, str):
            raise ValueError(f"Give 'bits' and 'k' of solver {solver!r} inside the "
                             f"'compression' dict, or name the codec as a string.")
        spec = {"name": spec, **({} if bits is None else {"bits": bits}),
                **({} if k is None else {"k": k})}
    try:
        return get_codec(spec)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"Option 'compression' of solver {solver!r}: {exc}") from None


def check_waits(opts, solver):
    """Check ``deadline`` and ``min_fraction``; True when either is set.

    Raises
    ------
    ValueError
        For a deadline that is not a number of seconds > 0, a fraction outside (0, 1], or
        either combined with ``compression``.
    """
    deadline, min_fraction = opts["deadline"], opts["min_fraction"]
    if deadline is not None and not (_is_number(deadline) and deadline > 0):
        raise ValueError(f"Option 'deadline' of solver {solver!r} must be a number of "
                         f"seconds > 0; got {deadline!r}.")
    if min_fraction is not None and not (_is_number(min_fraction) and 0 < min_fraction <= 1):
        raise ValueError(f"Option 'min_fraction' of solver {solver!r} must be in (0, 1]; "
                         f"got {min_fraction!r}.")
    if deadline is None and min_fraction is None:
        return False
    if opts["compression"] is not None:
        raise ValueError(f"Options 'deadline' and 'min_fraction' of solver {solver!r} cannot "
                         f"be combined with 'compression' yet.")
    return True
