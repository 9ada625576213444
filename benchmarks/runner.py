"""Running a suite: data, reference optima, calibration, timing, and the results document."""

from __future__ import annotations

import contextlib
import datetime
import fnmatch
import math
import time
import traceback

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.cluster import describe_cluster, local_cluster
from benchmarks.data import choose_storage, make_data, memory_needed
from benchmarks.environment import library_versions, load_average, machine_info
from benchmarks.limits import measure_limits
from benchmarks.meters import DaskCounters, PeakMemory
from benchmarks.methods import Unsupported, get_method
from benchmarks.problems import Solution, relative_gap
from benchmarks.scaling import project_case, run_scaling
from benchmarks.suite import entry_id, parse_entry
from benchmarks.timing import Timing
from benchmarks.tuning import calibrate, thin

__all__ = ["run_suite", "run_case", "evaluate_ratios", "select_cases"]


def _silent(*args, **kwargs):
    pass


class Reference:
    """The reference optimum of a problem on a data set, and the shared gap function.

    Parameters
    ----------
    problem : Problem
    data : Data
    threads : int
        BLAS threads for the reference solve (untimed; one by default: BLAS threads
        competing for busy cores can be many times slower than one).
    """

    def __init__(self, problem, data, threads=1):
        self.problem = problem
        self.X = data.X_local
        self.y = data.target_local(problem.target)
        start = time.perf_counter()
        with threadpool_limits(limits=threads):
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


@contextlib.contextmanager
def _thread_limit(method, suite):
    """In-memory methods get as many BLAS/OpenMP threads as the cluster has cores."""
    if method.where != "memory":
        yield None
        return
    threads = method.threads or suite.cluster.total_threads
    with threadpool_limits(limits=threads):
        yield threads


class _Runner:
    """Runs the entries of the cases on one cluster, with the meters of that cluster."""

    def __init__(self, suite, client, log):
        self.suite = suite
        self.client = client
        self.log = log
        self.counters = DaskCounters(client)
        self.worker_memory = PeakMemory(client)
        self.local_memory = PeakMemory(None)
        self.floors = {}

    # one measured call ------------------------------------------------------------------
    def call(self, method, data, problem, tol):
        """One untimed-metered, timed call: ``(fit, seconds, measurements)``."""
        on_cluster = method.where == "cluster"
        # Spark's memory is its JVM's, which is not measured here
        memory = {"cluster": self.worker_memory, "memory": self.local_memory}.get(method.where)
        before = self.counters.snapshot() if on_cluster else None
        if memory is not None:
            memory.start()
        start = time.perf_counter()
        fit = method.run(data, problem, tol)
        seconds = time.perf_counter() - start
        measured = {"memory": memory.stop() if memory is not None else None}
        if on_cluster:
            measured["dask"] = DaskCounters.delta(before, self.counters.snapshot())
        return fit, seconds, measured

    # one entry --------------------------------------------------------------------------
    def entry(self, case, name, gap_override, data, reference):
        method = get_method(name)
        label = entry_id(name, gap_override)
        target = gap_override or method.target_gap or self.suite.target_gap
        entry = {"entry": label, "method": name, **method.describe(),
                 "library_version": library_versions([method.library])[method.library],
                 "target_gap": target if method.kind == "fit" else None}
        if not method.supports(case.problem):
            raise ValueError(f"Method {name!r} does not solve {case.problem!r} as stated.")
        try:
            if method.where == "memory" and data.storage == "zarr":
                raise Unsupported("the data set is kept in a zarr store, not in this "
                                  "process's memory")
            method.check(data, case.problem)
            with _thread_limit(method, self.suite) as threads:
                entry["threads"] = threads
                entry["prepare"] = method.prepare(data, case.problem)
                start = dict(case.starts).get(label)
                entry.update(self._measure(method, case, data, reference, target, start))
            entry["status"] = "ok"
        except Unsupported as reason:
            entry.update(status="unsupported", reason=str(reason))
            self.log(f"  {label}: not run ({reason})")
        except Exception as error:  # a failing peer must not end the suite
            entry.update(status="failed", reason=f"{type(error).__name__}: {error}",
                         traceback=traceback.format_exc(limit=5))
            self.log(f"  {label}: FAILED ({type(error).__name__}: {error})")
        if entry.get("status") == "ok" and method.kind == "fit":
            solved = method.solves(case.problem)
            if solved != case.problem:
                entry["solves"] = solved.describe()
                entry["floor_gap"] = self._floor(solved, case, data, reference)
        return entry

    def _floor(self, solved, case, data, reference):
        """Gap of ``solved``'s optimum on the case's objective (cached)."""
        key = (case.data, solved)
        if key not in self.floors:
            other = Reference(solved, data)
            self.floors[key] = reference.gap(other.solution)
            self.log(f"  optimum of {solved.describe()}: gap {self.floors[key]:.2e} on "
                     "the stated objective")
        return self.floors[key]

    def _measure(self, method, case, data, reference, target, start=None):
        suite, log = self.suite, self.log
        records = []

        def run(tol):
            records.append(self.call(method, data, case.problem, tol))
            return records[-1]

        out = {}
        ladder = method.tolerances(data, case.problem) if method.kind == "fit" else ()
        if ladder and method.knob == "tol":  # counts (epochs, iterations) are not thinned
            ladder = thin(ladder, suite.ladder_stride)
            if start is not None and not any(math.isclose(start, t, rel_tol=1e-6)
                                             for t in ladder):
                raise ValueError(f"The start {start:g} of {method.name} in {case.name} is not "
                                 "on its ladder.")
        tol, first = None, None
        if ladder:
            cap = method.time_cap_s or suite.time_cap_s
            calibration = calibrate(run, lambda record: reference.gap(record[0]), ladder,
                                    target, stop_after_s=cap, start=start,
                                    trust_start=suite.trust_starts)
            tol, first = calibration.tol, calibration.result
            out["calibration"] = calibration.to_dict()
            out["time_cap_s"] = cap
            for trial in calibration.trials:
                log(f"    {method.knob}={trial.tol:.3g}: gap={trial.gap:.2e} "
                    f"({trial.seconds:.2f} s)")
        else:
            for _ in range(max(1, suite.warmup)):
                first = run(None)
        seconds = first[1]
        timed = []
        if seconds > suite.repeat_budget_s:
            timed = [first]  # too long to repeat: the accepted run is the measurement
            out["reused_calibration_run"] = True
        else:
            repeats = min(suite.repeats, max(1, int(suite.repeat_budget_s // max(seconds, 1e-3))))
            timed = [run(tol) for _ in range(repeats)]
        timing = Timing([record[1] for record in timed])
        last_fit = timed[-1][0]
        out.update(tol=tol, runs=len(timed), **timing.to_dict())
        out.update(n_iter=last_fit.n_iter, details=last_fit.details)
        out["memory"] = _largest_memory(record[2].get("memory") for record in timed)
        dask = [record[2]["dask"] for record in timed if "dask" in record[2]]
        if dask:
            out["dask"] = dask[-1]
        out["rounds"] = last_fit.rounds if last_fit.rounds is not None else (
            dask[-1]["graphs"] if dask else None)
        out["bytes_ledger"] = last_fit.bytes_ledger
        out["bytes"] = last_fit.bytes_ledger if last_fit.bytes_ledger is not None else (
            dask[-1]["bytes"] if dask else None)
        if method.kind == "fit":
            gaps = [reference.gap(record[0]) for record in timed]
            out.update(gap=max(gaps), gap_met=max(gaps) <= target)
        out["_ledger"] = last_fit.ledger
        scored = (f", gap={out['gap']:.2e}, target {target:g}" if "gap" in out else "")
        log(f"  {method.name}: median {timing.median:.3f} s over {len(timed)} "
            f"({method.knob}={'-' if tol is None else format(tol, '.3g')}{scored})")
        return out


def _largest_memory(measurements):
    rows = [m for m in measurements if m]
    return max(rows, key=lambda m: m["peak_bytes"]) if rows else None


def run_case(case, data, runner, log=_silent):
    """Time every entry of ``case`` on ``data``.

    Parameters
    ----------
    case : Case
    data : Data
    runner : _Runner
    log : callable

    Returns
    -------
    dict
        The case, the reference optimum and one entry per method.
    """
    log(f"case {case.name}: {case.problem.describe() if case.problem else 'kernels'} "
        f"on {case.data.label}")
    reference = None
    if case.problem is not None:
        reference = Reference(case.problem, data)
        log(f"  reference objective {reference.value:.12g} ({reference.seconds:.1f} s)")
    entries = [runner.entry(case, *parse_entry(entry), data, reference)
               for entry in case.methods]
    return {
        "case": case.name,
        "data": case.data.to_dict(),
        "problem": case.problem.to_dict() if case.problem else None,
        "reference": reference.to_dict() if reference else None,
        "results": entries,
        "_reference": reference,
    }


def _median_of(cases, case_name, entry):
    for case in cases:
        if case["case"] == case_name:
            for result in case["results"]:
                if result["entry"] == entry and result.get("status") == "ok":
                    return result["median_s"], result
    return None, None


def evaluate_ratios(ratios, cases):
    """Each ratio's value from the case results, and whether it meets its target.

    Ratios whose entries are missing from ``cases`` (not run, failed) are left out.  A
    ratio whose numerator missed its gap target under the time cap is a lower bound: the
    slower method did not reach the gap at all within the time it was given.
    """
    out = []
    for ratio in ratios:
        top, top_entry = _median_of(cases, *ratio.numerator)
        bottom, bottom_entry = _median_of(cases, *ratio.denominator)
        if top is None or bottom is None:
            continue
        value = top / bottom
        bound = ""
        if top_entry.get("gap_met") is False and bottom_entry.get("gap_met") is not False:
            bound = "lower bound"  # the numerator stopped short of the gap
        elif bottom_entry.get("gap_met") is False:
            bound = "denominator missed its gap"
        out.append({"name": ratio.name, "value": value, "target": ratio.target,
                    "goal": ratio.goal if ratio.target is not None else None,
                    "met": ratio.met(value), "bound": bound,
                    "numerator": list(ratio.numerator), "denominator": list(ratio.denominator)})
    return out


def select_cases(cases, patterns):
    """The cases whose names match any of the shell-style ``patterns`` (all when empty)."""
    if not patterns:
        return tuple(cases)
    return tuple(case for case in cases
                 if any(fnmatch.fnmatchcase(case.name, pattern) for pattern in patterns))


def _available_memory():
    """Bytes of memory available to the suite (total physical memory when psutil is absent)."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:  # pragma: no cover - psutil comes with distributed
        import os

        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _group_by_data(cases):
    """Cases grouped by data set, in the order of first appearance."""
    groups = {}
    for case in cases:
        groups.setdefault(case.data, []).append(case)
    return groups


def _strip_private(case_results):
    """The case results without the in-memory objects (ledgers, references)."""
    clean = []
    for case in case_results:
        case = {k: v for k, v in case.items() if not k.startswith("_")}
        case["results"] = [{k: v for k, v in entry.items() if not k.startswith("_")}
                           for entry in case["results"]]
        clean.append(case)
    return clean


def run_suite(suite, log=_silent, only=()):
    """Run the cases of ``suite`` (those matching ``only``) on a fresh local cluster.

    Data sets are generated once per :class:`~benchmarks.data.DataSpec`, shared by the
    cases that use them and released before the next; data sets that would not fit in
    memory are skipped and listed.  Then the machine's limits, and the strong scaling and
    cost-model projection, are measured.

    Parameters
    ----------
    suite : Suite
    log : callable
        Progress messages.
    only : sequence of str
        Shell-style patterns of case names; empty runs every case.

    Returns
    -------
    dict
        The results document: suite settings, environment, cases, ratios, skipped cases,
        limits, scaling and projections.
    """
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = load_average()
    cases = select_cases(suite.cases, only)
    available = _available_memory()
    case_results, skipped, limits, kept, projection = [], [], None, {}, None
    scaling_cases = {case for case, _ in suite.scaling.entries} if suite.scaling else set()
    scaling_cases.add(suite.scaling.project_case if suite.scaling else "")
    with local_cluster(suite.cluster) as client:
        cluster = describe_cluster(client)
        runner = _Runner(suite, client, log)
        for spec, group in _group_by_data(cases).items():
            storage = choose_storage(spec, available)
            if storage is None:
                needed = memory_needed(spec, "zarr" if spec.storage == "auto" else spec.storage)
                for case in group:
                    skipped.append({"case": case.name, "data": spec.label,
                                    "reason": f"needs about {needed / 2**30:.1f} GiB, "
                                              f"{available / 2**30:.1f} GiB available"})
                log(f"data {spec.label}: skipped (needs about {needed / 2**30:.1f} GiB)")
                continue
            log(f"data {spec.label}: generating and "
                + ("persisting" if storage == "memory" else "writing a zarr store"))
            try:
                data = make_data(spec, client, storage=storage)
            except Exception as error:  # e.g. workers killed for memory: go on without it
                for case in group:
                    skipped.append({"case": case.name, "data": spec.label,
                                    "reason": f"the data set could not be built: {error!r}"})
                log(f"  failed: {error!r}")
                continue
            log(f"  {data.seconds:.1f} s")
            for case in group:
                result = run_case(case, data, runner, log)
                result["data_seconds"] = data.seconds
                result["data"]["storage"] = data.storage
                result["data"]["placement"] = data.placement
                case_results.append(result)
                if case.name in scaling_cases:
                    kept[case.name] = (data, result)
                if suite.scaling is not None and case.name == suite.scaling.project_case:
                    projection = project_case(result, suite.scaling, log)
            if suite.limits_data == spec:
                limits = measure_limits(data, suite.cluster.total_threads, log)
            client.cancel([data.X, *data.targets.values()])
            if not any(kept_data is data for kept_data, _ in kept.values()):
                data.close()  # a kept store is read again by the scaling runs
            del data
        for method_name in {entry["method"] for case in case_results for entry in case["results"]}:
            get_method(method_name).close()
    ratios = evaluate_ratios(suite.ratios, case_results)
    scaling = None
    if suite.scaling is not None and kept:
        scaling = run_scaling(suite, kept, log)
    for kept_data, _ in kept.values():
        kept_data.close()
    return {
        "suite": suite.name,
        "only": list(only),
        "started": started.isoformat(timespec="seconds"),
        "seconds": (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds(),
        "settings": {"repeats": suite.repeats, "repeat_budget_s": suite.repeat_budget_s,
                     "warmup": suite.warmup, "target_gap": suite.target_gap,
                     "ladder_stride": suite.ladder_stride, "time_cap_s": suite.time_cap_s,
                     "statistic": "median",
                     "warmup_of_calibrated_methods": "the accepted calibration run"},
        "cluster": {**suite.cluster.to_dict(), **cluster},
        "machine": {**machine_info(), "load_average_before": load_before,
                    "load_average_after": load_average()},
        "versions": library_versions(),
        "cases": _strip_private(case_results),
        "skipped": skipped,
        "not_selected": [case.name for case in suite.cases if case not in cases],
        "ratios": ratios,
        "limits": limits,
        "scaling": scaling,
        "projection": projection,
    }
