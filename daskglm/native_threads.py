"""This process's native thread pools (BLAS, OpenMP), held to one thread where more only
contend.

A BLAS call with several threads leaves its threads spinning for a while after it
returns.  On the driver, between rounds, the small products of an iteration on the
parameters (L-BFGS's two-loop recursion, a triangular solve) gain nothing from them,
and the spinning threads take the cores the next round's tasks run on (in this process,
or on the workers of a cluster on the same machine): measured on two cores, L-BFGS's
rounds took 51 ms against 40 ms with one BLAS thread (``docs/guide/methods.md``).
"""

from __future__ import annotations

import functools

from threadpoolctl import ThreadpoolController

__all__ = ["native_pools", "one_thread"]


@functools.cache
def native_pools():
    """The native thread pools of this process, inspected once (inspecting reads the
    process's memory map, too slow to repeat every round)."""
    return ThreadpoolController()


def one_thread():
    """A context in which every native pool (BLAS, OpenMP) runs one thread."""
    return native_pools().limit(limits=1)
