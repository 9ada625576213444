"""Solvers: one module per method, each using only the engine's verbs.

:func:`get_solver` builds a solver by name and checks that it handles the problem,
naming the solvers that do when it does not.
"""

from __future__ import annotations

from ..model.problem import Problem
from .admm import ADMM
from .asynchronous import AsyncSGD
from .averaging import Averaging
from .base import Objective, Solver, SolverResult
from .gossip import Gossip
from .gradient import GradientDescent
from .lbfgs import LBFGS
from .newton import Newton
from .normal import NormalEquations
from .proximal import ProximalGradient
from .sgd import SGD

__all__ = ["SOLVERS", "get_solver", "Problem", "Objective", "Solver", "SolverResult"]

#: Every solver by its ``solver=`` name.
SOLVERS: dict[str, type[Solver]] = {
    cls.name: cls
    for cls in (NormalEquations, GradientDescent, LBFGS, Newton, ProximalGradient, ADMM,
                Averaging, SGD, AsyncSGD, Gossip)
}


def get_solver(name, problem, *, tol, max_iter, options=None):
    """The solver called ``name``, configured, after checking it can solve ``problem``.

    Raises
    ------
    ValueError
        For an unknown name, unknown options, or a problem the solver cannot handle; the
        message names the solvers that can.
    """
    if name not in SOLVERS:
        raise ValueError(f"Unknown solver {name!r}; choose one of {sorted(SOLVERS)}.")
    cls = SOLVERS[name]
    reason = cls.unsupported(problem)
    if reason is not None:
        able = [n for n, c in SOLVERS.items() if c.unsupported(problem) is None]
        hint = f"solvers that can: {able}" if able else "no solver handles it yet"
        raise ValueError(
            f"{reason}; this problem has the {problem.family.name} family and the "
            f"{problem.penalty.name} penalty ({hint})."
        )
    return cls(tol=tol, max_iter=max_iter, **(options or {}))
