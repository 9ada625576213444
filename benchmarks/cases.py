"""The registry of suites: cases (data x problem x methods) and the ratios between them.

A case fits one problem on one data set with several methods, all minimising the same
objective; a ratio compares two timed entries, optionally against a target.  Adding a
problem size, a peer or a solver to a suite is one line here (plus, for a new method, its
class in :mod:`benchmarks.methods`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cluster import ClusterSpec
from .data import DataSpec
from .problems import LeastSquares, LogisticL2, Problem

__all__ = ["Case", "Ratio", "Suite", "SUITES", "get_suite"]


@dataclass(frozen=True)
class Case:
    """One problem on one data set, solved by several methods.

    Attributes
    ----------
    name : str
        Unique within a suite.
    data : DataSpec
    problem : Problem or None
        None for cases of kernels only.
    methods : tuple of str
        Names in :data:`benchmarks.methods.METHODS`.
    """

    name: str
    data: DataSpec
    problem: Problem | None
    methods: tuple


@dataclass(frozen=True)
class Ratio:
    """Median time of one entry over another's.

    Attributes
    ----------
    name : str
    numerator, denominator : tuple of (str, str)
        ``(case name, method name)``.
    target : float, optional
    goal : {"at least", "at most"}
        How the ratio should compare with ``target``.
    """

    name: str
    numerator: tuple
    denominator: tuple
    target: float | None = None
    goal: str = "at most"

    def met(self, value):
        """Whether ``value`` meets the target (None when there is no target)."""
        if self.target is None:
            return None
        return value >= self.target if self.goal == "at least" else value <= self.target


@dataclass(frozen=True)
class Suite:
    """A set of cases, ratios and measurement settings.

    Attributes
    ----------
    name : str
    cases : tuple of Case
    ratios : tuple of Ratio
    repeats : int
        Timed repeats per method; the median is reported.
    warmup : int
        Untimed runs before the repeats of methods without a tolerance (for the others the
        accepted calibration run is the warm-up).
    target_gap : float
        Relative objective gap every fit must reach.
    cluster : ClusterSpec
    """

    name: str
    cases: tuple
    ratios: tuple = ()
    repeats: int = 3
    warmup: int = 1
    target_gap: float = 1e-8
    cluster: ClusterSpec = field(default_factory=ClusterSpec)


def glm_cases(data):
    """The cases comparing daskglm with its peers on one data set."""
    return (
        Case("logistic-l2", data, LogisticL2(C=1.0, fit_intercept=False),
             ("daskglm-lbfgs", "dask-glm-lbfgs", "sklearn-lbfgs", "sklearn-lbfgs-1thread")),
        Case("ols", data, LeastSquares(fit_intercept=True),
             ("daskglm-normal", "numpy-gram", "numpy-gram-1thread")),
        Case("memory-read", data, None, ("numpy-sum", "numpy-matvec")),
    )


def glm_ratios():
    """The ratios the GLM cases are judged by."""
    return (
        Ratio("dask-glm / daskglm (logistic)", ("logistic-l2", "dask-glm-lbfgs"),
              ("logistic-l2", "daskglm-lbfgs"), target=5.0, goal="at least"),
        Ratio("daskglm / sklearn (logistic)", ("logistic-l2", "daskglm-lbfgs"),
              ("logistic-l2", "sklearn-lbfgs"), target=1.0, goal="at most"),
        Ratio("daskglm / sklearn on 1 thread (logistic)", ("logistic-l2", "daskglm-lbfgs"),
              ("logistic-l2", "sklearn-lbfgs-1thread")),
        Ratio("daskglm normal / numpy X.T@X (ols)", ("ols", "daskglm-normal"),
              ("ols", "numpy-gram"), target=2.0, goal="at most"),
        Ratio("daskglm normal / numpy X.T@X on 1 thread (ols)", ("ols", "daskglm-normal"),
              ("ols", "numpy-gram-1thread")),
        Ratio("daskglm lbfgs / one read of X", ("logistic-l2", "daskglm-lbfgs"),
              ("memory-read", "numpy-sum")),
    )


#: The standard data set: 1,000,000 x 50 float64 (400 MB) in 8 row partitions.
STANDARD = DataSpec(n_samples=1_000_000, n_features=50, n_partitions=8, seed=0)

#: A small data set for smoke tests of the harness itself.
SMALL = DataSpec(n_samples=50_000, n_features=10, n_partitions=4, seed=0)

#: Every suite by name.
SUITES = {
    "quick": Suite("quick", glm_cases(STANDARD), glm_ratios(), repeats=3, warmup=1),
    "full": Suite("full", glm_cases(STANDARD), glm_ratios(), repeats=7, warmup=1),
    "smoke": Suite("smoke", glm_cases(SMALL), glm_ratios(), repeats=1, warmup=0),
}


def get_suite(name):
    """The suite called ``name``; a KeyError lists the known names."""
    try:
        return SUITES[name]
    except KeyError:
        raise KeyError(f"Unknown suite {name!r}; known: {sorted(SUITES)}.") from None
