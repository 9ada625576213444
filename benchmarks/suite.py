"""The building blocks of a suite: cases, ratios, strong scaling and the suite itself.

A case fits one problem on one data set with several methods, all minimising the same
objective; a ratio compares two timed entries, optionally against a target.  An entry of
a case is a method name, optionally with its own gap target after an ``@``
(``"daskglm-admm@1e-4"``): the method is then calibrated to that gap instead of the
suite's (or the method's own).  The suites themselves are in :mod:`benchmarks.cases`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.cluster import ClusterSpec
from benchmarks.data import DataSpec

__all__ = ["Case", "Ratio", "Scaling", "Suite", "parse_entry", "entry_id"]


def entry_id(name, gap=None):
    """The entry of method ``name`` held to ``gap``: ``"name@1e-04"`` (``"name"`` for None)."""
    return name if gap is None else f"{name}@{gap:.0e}"


def parse_entry(entry):
    """``"name@1e-04"`` -> ``("name", 1e-4)``; ``"name"`` -> ``("name", None)``."""
    name, _, gap = entry.partition("@")
    return name, (float(gap) if gap else None)


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
        Entries: names in :data:`benchmarks.methods.METHODS`, each optionally followed by
        ``@gap`` (see the module docstring).
    starts : tuple of (str, float)
        Where calibration begins for some entries (see :func:`benchmarks.tuning.calibrate`):
        settings found by walking the ladder from its loose end on the same data, so that
        a suite walks one step from them instead of the whole ladder.
    """

    name: str
    data: DataSpec
    problem: object
    methods: tuple
    starts: tuple = ()


@dataclass(frozen=True)
class Ratio:
    """Median time of one entry over another's.

    Attributes
    ----------
    name : str
    numerator, denominator : tuple of (str, str)
        ``(case name, entry)``.
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
class Scaling:
    """Strong scaling of some entries from fewer workers, and the cost model's projection.

    Attributes
    ----------
    entries : tuple of (str, str)
        ``(case name, entry)`` of daskglm methods to time on each worker count, at the
        setting calibrated in the main run.
    workers : tuple of int
        Worker processes to time them on, each on a cluster of its own, one after the
        other (so that the machine's load is alike for all); the largest is the base of
        the speed-ups.
    project_case : str
        The case whose daskglm fits calibrate :mod:`daskglm.accounting.costmodel`.
    project_workers : tuple of int
        Worker counts to project them to.
    networks : tuple of (str, str)
        ``(label, specification)`` of the networks to project on; an empty specification
        keeps the network measured on this machine.
    """

    entries: tuple
    workers: tuple = (1, 2)
    project_case: str = ""
    project_workers: tuple = (8, 64, 512)
    networks: tuple = (("measured here", ""),
                       ("10 Gb/s, 0.1 ms", "bandwidth=1.25e9,latency=1e-4"))


@dataclass(frozen=True)
class Suite:
    """A set of cases, ratios and measurement settings.

    Attributes
    ----------
    name : str
    cases : tuple of Case
    ratios : tuple of Ratio
    repeats : int
        Most timed repeats per entry; the median is reported.
    repeat_budget_s : float
        Seconds of repeats an entry may take: fewer repeats (at least one) for slow
        entries.  An entry whose accepted calibration run took longer than this is timed
        by that run alone.
    warmup : int
        Untimed runs before the repeats of methods without a knob.
    target_gap : float
        Relative objective gap every fit must reach unless its method or entry says
        otherwise.
    ladder_stride : int
        Use every ``ladder_stride``-th tolerance of the methods' ladders (4 per decade), so
        that a quick suite calibrates to within a decade.
    trust_starts : bool
        Accept a case's start setting when it meets the target, without trying looser
        ones (see :func:`benchmarks.tuning.calibrate`).
    time_cap_s : float
        Calibration stops tightening when one more run would bring its runs' total beyond
        this many seconds; the entry then reports the gap it reached as a miss under the
        cap.
    limits_data : DataSpec or None
        The data set whose in-memory copy measures the machine's limits.
    scaling : Scaling or None
    cluster : ClusterSpec
    """

    name: str
    cases: tuple
    ratios: tuple = ()
    repeats: int = 3
    repeat_budget_s: float = 15.0
    warmup: int = 1
    target_gap: float = 1e-8
    ladder_stride: int = 1
    trust_starts: bool = False
    time_cap_s: float = 300.0
    limits_data: DataSpec | None = None
    scaling: Scaling | None = None
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
