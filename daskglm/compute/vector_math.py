"""``exp`` and ``log1p`` in plain arithmetic, for loops the compiler can vectorise (numba).

numba compiles ``math.exp`` and ``math.log1p`` to calls of the C library, one element at a
time: in the binomial gradient those two calls cost more than reading the row (issue 19).
Here both are written with multiplications, additions, one division and integer bit
operations only, so that LLVM turns a loop over a buffer of values into vector
instructions (four float64 lanes with AVX2), whatever the CPU's vendor and without a
vector math library.

* :func:`exp_into` -- ``exp`` of a buffer, in place: Cody and Waite's reduction
  ``x = k ln 2 + r`` with ``|r| <= ln 2 / 2``, the Taylor polynomial of degree 13 of
  ``exp(r)`` (truncation below ``2e-17`` relative), and ``2^k`` built from its bits.
  Within 1 ulp of the C library for ``-708 <= x <= 709``; 0 below -708 (where the C
  library returns a number below ``3.4e-308`` or 0), NaN for NaN.
* :func:`log1p_unit` -- ``log1p(e)`` for ``0 <= e <= 1`` (the range of ``exp(-|eta|)``),
  fdlibm's ``log1p``: ``1 + e = 2^k (1 + f)``, ``k`` 0 or 1, and fdlibm's minimax
  polynomial in ``s = f / (2 + f)``.  Within 1 ulp of the C library.

The functions are compiled with ``fastmath={"contract"}`` only: reassociation would let
the compiler rewrite ``(t - 1.5 * 2^52) * ln2_hi`` into a difference of two products of
size ``2^52``, which loses the reduction (it did, by a factor of ``exp(-1/4)``).  The
loops that call them may be compiled with more freedom: numba sets the flags per
instruction, so inlining keeps these.

numba's on-disk cache keys each function on its own file only: the cached loops of
:mod:`.family_formulas` (and of the loops that contain them: :mod:`.fused_loops`,
:mod:`.fused_sparse_loops`, :mod:`.sgd_loops`) contain these functions compiled in, and are
not rebuilt when this file alone changes.  A change here must touch those files too (or
clear their ``__pycache__``).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["EXP_FLOOR", "exp_into", "log1p_unit"]

#: Exact IEEE arithmetic except fused multiply-adds (which only round less).
_CONTRACT = {"contract"}

#: ``exp(x)`` is 0 below this; above it ``2^k`` is a normal number.
EXP_FLOOR = -708.0

#: ``1.5 * 2^52``: adding it to ``|t| < 2^51`` rounds ``t`` to an integer and leaves that
#: integer in the low bits of the sum.
_SHIFTER = 6755399441055744.0
_SHIFTER_BITS = int(np.array([_SHIFTER]).view(np.int64)[0])
_INV_LN2 = 1.4426950408889634
# ln 2 in two parts (fdlibm): the first has 32 significant bits, so k * _LN2_HI is exact.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SQRT2_M1 = 0.41421356237309503
# fdlibm's coefficients of log((1 + s) / (1 - s)) = 2s + s * R(s^2) for |s| <= 0.1716.
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy")
def exp_into(x, count, rounded, scale_bits):
    """Replace ``x[:count]`` by its ``exp``, for ``x <= 709``.

    ``rounded`` (float64) and ``scale_bits`` (int64) are scratch buffers of at least
    ``count`` elements.  Three loops, each of which vectorises: ``k = round(x / ln 2)``
    (kept as a float whose low bits are ``k``), the bits of ``2^k``, and ``2^k exp(r)``.
    """
    for i in range(count):
        value = x[i]
        value = EXP_FLOOR if value < EXP_FLOOR else value
        rounded[i] = value * _INV_LN2 + _SHIFTER
    rounded_bits = rounded.view(np.int64)
    for i in range(count):
        scale_bits[i] = (rounded_bits[i] - _SHIFTER_BITS + 1023) << 52
    scale = scale_bits.view(np.float64)
    for i in range(count):
        original = x[i]
        value = EXP_FLOOR if original < EXP_FLOOR else original
        k = rounded[i] - _SHIFTER
        r = (value - k * _LN2_HI) - k * _LN2_LO
        p = 1.0 / 6227020800.0
        p = p * r + 1.0 / 479001600.0
        p = p * r + 1.0 / 39916800.0
        p = p * r + 1.0 / 3628800.0
        p = p * r + 1.0 / 362880.0
        p = p * r + 1.0 / 40320.0
        p = p * r + 1.0 / 5040.0
        p = p * r + 1.0 / 720.0
        p = p * r + 1.0 / 120.0
        p = p * r + 1.0 / 24.0
        p = p * r + 1.0 / 6.0
        p = p * r + 0.5
        p = p * r + 1.0
        p = p * r + 1.0
        # NaN passes: it is not below the floor, and NaN * scale is NaN
        x[i] = 0.0 if original < EXP_FLOOR else p * scale[i]


@numba.njit(cache=True, nogil=True, fastmath=_CONTRACT, error_model="numpy", inline="always")
def log1p_unit(e):
    """``log1p(e)`` for ``0 <= e <= 1`` (NaN for NaN), without a branch."""
    big = e > _SQRT2_M1
    # big: 1 + e = 2 (1 + f) with f = (e - 1) / 2, and c the rounding error of e - 1
    e_minus_1 = e - 1.0
    f = 0.5 * e_minus_1 if big else e
    c = 0.5 * (e - (e_minus_1 + 1.0)) if big else 0.0
    k = 1.0 if big else 0.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    half_f2 = 0.5 * f * f
    # log(1 + f + c) = log(1 + f) + c / (1 + f); c <= 2^-55 and |f| < 0.3, so c (1 - f)
    # is that to far below an ulp of the result
    return k * _LN2_HI - ((half_f2 - (s * (half_f2 + r) + (k * _LN2_LO + c * (1.0 - f)))) - f)
