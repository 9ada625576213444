"""Running a suite: data, reference optima, calibration, timing, and the results document."""

from __future__ import annotations

import contextlib
import datetime
import time

import numpy as np
from threadpoolctl import threadpool_limits

from .cluster import describe_cluster, local_cluster
from .data import make_data
from .environment import library_versions, load_average, machine_info
from .methods import get_method
from .problems import Solution, relative_gap
from .timing import measure
from .tuning import calibrate

__all__ = ["run_suite", "run_case", "evaluate_ratios"]


def _silent(*args, **kwargs):
    pass


class _Reference:
    """The reference optimum of a problem on a data set, and the shared gap function."""

    def __init__(self, problem, data):
        self.problem = problem
        self.X = data.X_local
        self.y = data.target_local(problem.target)
        start = time.perf_counter()
        # untimed; one BLAS thread is never slowed by threads competing for busy cores
        with threadpool_limits(limits=1):
            self.solution = problem.reference(self.X, self.y)
        self.seconds = time.perf_counter() - start
        self.value = problem.objective(self.X, self.y, self.solution)

    def gap(self, fit):
        """Relative objective gap of a method's fit, by the problem's shared objective."""
        value = self.problem.objective(self.X, self.y, Solution(fit.coef, fit.intercept))
        return relative_gap(value, self.value)

    def to_dict(self):
        return {"objective": self.value, "seconds": self.seconds,
                "coef_norm": float(np.linalg.norm(self.solution.coef)),
                "intercept": self.solution.intercept}


def _thread_limit(method, suite):
    """In-memory methods get as many BLAS/OpenMP threads as the cluster has cores."""
    if method.where != "memory":
        return None, contextlib.nullcontext()
    threads = method.threads or suite.cluster.total_threads
    return threads, threadpool_limits(limits=threads)


def _run_method(method, case, data, reference, suite, log):
    """Calibrate (fits) or warm up (kernels and direct solvers), then time the repeats."""
    threads, limit = _thread_limit(method, suite)
    with limit:
        entry = _calibrate_and_time(method, case, data, reference, suite, log)
    entry["threads"] = threads
    return entry


def _calibrate_and_time(method, case, data, reference, suite, log):
    def run(tol):
        return method.run(data, case.problem, tol)

    entry = {"method": method.name, **method.describe(),
             "library_version": library_versions([method.library])[method.library]}
    tolerances = method.tolerances(data, case.problem) if method.kind == "fit" else ()
    tol = None
    if tolerances:
        calibration = calibrate(run, reference.gap, tolerances, suite.target_gap)
        tol = calibration.tol
        entry["calibration"] = calibration.to_dict()
        for trial in calibration.trials:
            log(f"    calibrate tol={trial.tol:.3g}: gap={trial.gap:.2e} ({trial.seconds:.2f} s)")
    else:
        for _ in range(suite.warmup):
            run(tol)
    timing, fits = measure(lambda: run(tol), suite.repeats)
    entry.update(tol=tol, **timing.to_dict())
    last = fits[-1]
    entry.update(n_iter=last.n_iter, rounds=last.rounds, details=last.details)
    if method.kind == "fit":
        gaps = [reference.gap(fit) for fit in fits]
        entry.update(gap=max(gaps), gap_met=max(gaps) <= suite.target_gap)
    log(f"  {method.name}: median {timing.median:.3f} s over {suite.repeats} "
        f"(tol={tol}, gap={entry.get('gap')})")
    return entry


def run_case(case, data, suite, log=_silent):
    """Time every method of ``case`` on ``data``.

    Parameters
    ----------
    case : Case
    data : Data
    suite : Suite
        Supplies repeats, warm-up and the target gap.
    log : callable
        Progress messages.

    Returns
    -------
    dict
        The case, the reference optimum and one entry per method.
    """
    log(f"case {case.name}: {case.problem.describe() if case.problem else 'kernels'} "
        f"on {case.data.label}")
    reference = None
    if case.problem is not None:
        reference = _Reference(case.problem, data)
        log(f"  reference objective {reference.value:.12g} ({reference.seconds:.1f} s)")
    entries = []
    for name in case.methods:
        method = get_method(name)
        if not method.supports(case.problem):
            raise ValueError(f"Method {name!r} does not solve {case.problem!r} as stated.")
        entries.append(_run_method(method, case, data, reference, suite, log))
    return {
        "case": case.name,
        "data": case.data.to_dict(),
        "problem": case.problem.to_dict() if case.problem else None,
        "reference": reference.to_dict() if reference else None,
        "results": entries,
    }


def _median_of(cases, case_name, method_name):
    for case in cases:
        if case["case"] == case_name:
            for entry in case["results"]:
                if entry["method"] == method_name:
                    return entry["median_s"]
    return None


def evaluate_ratios(ratios, cases):
    """Each ratio's value from the case results, and whether it meets its target.

    Ratios whose entries are missing from ``cases`` are left out.
    """
    out = []
    for ratio in ratios:
        top = _median_of(cases, *ratio.numerator)
        bottom = _median_of(cases, *ratio.denominator)
        if top is None or bottom is None:
            continue
        value = top / bottom
        out.append({"name": ratio.name, "value": value, "target": ratio.target,
                    "goal": ratio.goal if ratio.target is not None else None,
                    "met": ratio.met(value), "numerator": list(ratio.numerator),
                    "denominator": list(ratio.denominator)})
    return out


def run_suite(suite, log=_silent):
    """Run every case of ``suite`` on a fresh local cluster.

    Data sets are generated once per :class:`~benchmarks.data.DataSpec` and shared by the
    cases that use them.

    Returns
    -------
    dict
        The results document: suite settings, environment, cases and ratios.
    """
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = load_average()
    case_results = []
    with local_cluster(suite.cluster) as client:
        cluster = describe_cluster(client)
        datasets = {}
        for case in suite.cases:
            if case.data not in datasets:
                log(f"data {case.data.label}: generating and persisting")
                datasets[case.data] = make_data(case.data, client)
            case_results.append(run_case(case, datasets[case.data], suite, log))
        datasets.clear()
    return {
        "suite": suite.name,
        "started": started.isoformat(timespec="seconds"),
        "seconds": (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds(),
        "settings": {"repeats": suite.repeats, "warmup": suite.warmup,
                     "target_gap": suite.target_gap, "statistic": "median",
                     "warmup_of_calibrated_methods": "the accepted calibration run"},
        "cluster": {**suite.cluster.to_dict(), **cluster},
        "machine": {**machine_info(), "load_average_before": load_before,
                    "load_average_after": load_average()},
        "versions": library_versions(),
        "cases": case_results,
        "ratios": evaluate_ratios(suite.ratios, case_results),
    }
