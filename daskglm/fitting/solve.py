"""A solver run on an engine: :func:`solve`, and :func:`solve_on_kept_part`, the start a
fit on partly kept data takes from its kept partitions."""

from __future__ import annotations

import numpy as np

from ..solvers.base import SolverResult

__all__ = ["solve", "solve_on_kept_part"]


def solve(solver, problem, engine, params0, judged=False):
    """``solver.solve`` (``solve_to_optimum`` when ``judged``: ``converged`` then means the
    optimum), except that ``max_iter=0`` returns the start point unconverged without
    reading the data (scikit-learn's ``max_iter=0``)."""
    if solver.max_iter == 0:
        return SolverResult(np.asarray(params0, dtype=float), 0, False, [],
                            "max_iter=0: no iteration, the start point")
    if judged:
        return solver.solve_to_optimum(problem, engine, params0)
    return solver.solve(problem, engine, params0)


def solve_on_kept_part(solver, problem, engine, params0, name):
    """The parameters ``solver`` (named ``name``) finds from ``params0`` on the partitions
    ``engine`` keeps in memory alone, or None when it keeps none.  Its rounds go to the
    ledger (no bytes read from the source) and the start to its choices."""
    kept = engine.kept_part(problem.family)
    if kept is None:
        return None
    try:
        found = solve(solver, problem, kept, params0)
    finally:
        kept.close()
    engine.ledger.note_choice(
        "start", "kept part",
        f"{name!r} solved on the {kept.n_samples} rows kept in memory first "
        f"({found.n_iter} iterations, no read of the source), then on all "
        f"{engine.n_samples} rows from that solution")
    return np.asarray(found.params, dtype=float)
