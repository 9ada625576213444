"""What every benchmarked method shares: the interface and the result of one run."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Fit", "Method", "Unsupported", "TOLERANCE_LADDER", "EPOCH_LADDER",
           "ITERATION_LADDER", "ladder"]

#: Default tolerances tried, loosest first, for solvers whose tolerance bounds the
#: largest entry of the gradient of the MEAN objective (scipy's ``gtol`` on that scale):
#: four per decade from 1e-3 to 1e-10.
TOLERANCE_LADDER = tuple(float(t) for t in np.logspace(-3, -10, 29))

#: Iterations tried, fewest first, where the knob is the number of iterations.
ITERATION_LADDER = (1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 20, 25, 32, 40, 50)

#: Epochs tried, fewest first, by stochastic methods (their knob is the number of passes).
EPOCH_LADDER = (1, 2, 3, 5, 8, 13, 20)


def ladder(loosest, tightest, per_decade=4):
    """Tolerances from ``loosest`` down to ``tightest``, ``per_decade`` per decade.

    Parameters
    ----------
    loosest, tightest : float
    per_decade : int

    Returns
    -------
    tuple of float
    """
    decades = np.log10(loosest / tightest)
    count = int(round(decades * per_decade)) + 1
    return tuple(float(t) for t in np.logspace(np.log10(loosest), np.log10(tightest), count))


class Unsupported(Exception):
    """Raised by :meth:`Method.run` (or :meth:`Method.check`) when a method cannot run a
    case as stated here (missing library, sparse input it does not take, ...); the runner
    records the reason and goes on."""


@dataclass
class Fit:
    """The outcome of one timed call of a method.

    Attributes
    ----------
    coef : numpy.ndarray or None
        Fitted coefficients; None for kernels, which fit nothing.
    intercept : float
    n_iter : int or None
        Iterations (epochs for stochastic methods) reported by the solver.
    rounds : int or None
        Communication rounds: daskglm's engine rounds, or, for other Dask methods, the
        graphs submitted to the scheduler (one Dask computation each).
    bytes_ledger : int or None
        daskglm's own measurement of the bytes its rounds moved
        (``est.comm_.bytes_measured``).
    details : dict
        Anything else worth recording (JSON-serialisable).
    ledger : object or None
        daskglm's ``comm_`` report of the fit, kept in memory for the cost model (not
        written to the results file).
    """

    coef: np.ndarray | None = None
    intercept: float = 0.0
    n_iter: int | None = None
    rounds: int | None = None
    bytes_ledger: int | None = None
    details: dict = field(default_factory=dict)
    ledger: object = None


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
    where : {"cluster", "memory", "spark", "h2o"}
        Whether it runs on the persisted Dask arrays, on the in-memory copy, or in Spark's
        or H2O's JVM.
    threads : int or None
        For in-memory methods, the BLAS/OpenMP threads it may use; None means as many
        as the cluster has in all (the same cores as the distributed methods).
    knob : str
        What the calibration ladder sets: ``"tol"`` (a stopping tolerance in the
        method's own units), ``"epochs"`` (passes over the data) or ``"iterations"``.
    target_gap : float or None
        The relative objective gap this method is asked to reach when the case does not
        say otherwise; None means the suite's target.  Set for methods that cannot reach
        the suite's target in reasonable time (stochastic ones).
    time_cap_s : float or None
        Calibration stops tightening once one run takes longer than this (the gap reached
        is then reported as a miss under the cap); None means the suite's cap.
    """

    name = "method"
    label = "method"
    library = ""
    kind = "fit"
    where = "cluster"
    threads = None
    knob = "tol"
    target_gap = None
    time_cap_s = None

    def supports(self, problem) -> bool:
        """Whether the method can solve ``problem`` exactly as stated (same objective).

        Kernels solve nothing and may appear in any case.
        """
        return self.kind == "kernel"

    def solves(self, problem):
        """The problem the method really minimises; ``problem`` itself unless the library
        cannot state it (the harness then reports the gap of this problem's optimum on the
        stated objective: the floor of the method's gap)."""
        return problem

    def check(self, data, problem):
        """Raise :class:`Unsupported` when the method cannot run on ``data``.

        Called once per case before anything is timed; the default accepts everything.
        """

    def tolerances(self, data, problem):
        """Values of the knob to try, loosest (cheapest) first, in the method's own units.

        An empty tuple means the method has no knob (a direct solve or a kernel) and is
        called with ``tol=None``.
        """
        return ()

    def prepare(self, data, problem):
        """Untimed set-up before the first run (e.g. loading the data into another system).

        Returns
        -------
        dict
            Anything worth reporting about the set-up (e.g. ``{"load_s": 12.3}``).
        """
        return {}

    def run(self, data, problem, tol) -> Fit:
        """Solve ``problem`` on ``data`` (a :class:`benchmarks.data.Data`) to ``tol``."""
        raise NotImplementedError

    def close(self):
        """Release what :meth:`prepare` acquired (called once at the end of a suite)."""

    def describe(self):
        """Name, label, library, kind, where it runs and its knob, as a plain dict."""
        return {"name": self.name, "label": self.label, "library": self.library,
                "kind": self.kind, "where": self.where, "knob": self.knob}
