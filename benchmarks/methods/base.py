"""What every benchmarked method shares: the interface and the result of one run."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Fit", "Method", "TOLERANCE_LADDER"]

#: Default tolerances tried, loosest first, for solvers whose tolerance bounds the
#: largest entry of the gradient of the MEAN objective (scipy's ``gtol`` on that scale).
TOLERANCE_LADDER = tuple(float(t) for t in np.logspace(-4, -9, 21))


@dataclass
class Fit:
    """The outcome of one timed call of a method.

    Attributes
    ----------
    coef : numpy.ndarray or None
        Fitted coefficients; None for kernels, which fit nothing.
    intercept : float
    n_iter : int or None
        Iterations reported by the solver.
    rounds : int or None
        Passes over the distributed data (communication rounds, or function evaluations
        where each is one Dask computation).
    details : dict
        Anything else worth recording (JSON-serialisable).
    """

    coef: np.ndarray | None = None
    intercept: float = 0.0
    n_iter: int | None = None
    rounds: int | None = None
    details: dict = field(default_factory=dict)


class Method:
    """Base class: one way of solving a problem (or one plain kernel) with one library.

    Subclasses set the class attributes and implement :meth:`supports` and :meth:`run`.
    Only :meth:`run` is timed, so it should do the work and nothing else.

    Attributes
    ----------
    name : str
        Registry key, e.g. ``"daskglm-lbfgs"``.
    label : str
        Shown in tables, e.g. ``"daskglm LogisticRegression(solver='lbfgs')"``.
    library : str
        Distribution whose version is recorded with the result.
    kind : {"fit", "kernel"}
        A fit returns coefficients scored against the problem's reference; a kernel is a
        plain computation timed for comparison (no problem, no gap).
    where : {"cluster", "memory"}
        Whether it runs on the persisted Dask arrays or on the in-memory numpy copy.
    threads : int or None
        For in-memory methods, the BLAS/OpenMP threads it may use; None means as many
        as the cluster has in all (the same cores as the distributed methods).
    """

    name = "method"
    label = "method"
    library = ""
    kind = "fit"
    where = "cluster"
    threads = None

    def supports(self, problem) -> bool:
        """Whether the method can solve ``problem`` exactly as stated (same objective).

        Kernels solve nothing and may appear in any case.
        """
        return self.kind == "kernel"

    def tolerances(self, data, problem):
        """Tolerances to try, loosest first, in the method's own units.

        An empty tuple means the method has no tolerance (a direct solve or a kernel) and
        is called with ``tol=None``.
        """
        return ()

    def run(self, data, problem, tol) -> Fit:
        """Solve ``problem`` on ``data`` (a :class:`benchmarks.data.Data`) to ``tol``."""
        raise NotImplementedError

    def describe(self):
        """Name, label, library, kind and where it runs, as a plain dict."""
        return {"name": self.name, "label": self.label, "library": self.library,
                "kind": self.kind, "where": self.where}
