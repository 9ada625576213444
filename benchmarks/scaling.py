"""Strong scaling across worker counts, and daskglm's cost model projected to more workers.

Strong scaling: the same data set and the same setting of each method (the one
calibrated on the suite's cluster) are timed on clusters of 1, 2, ... worker processes,
one after the other; from ``w`` workers to the largest count ``W`` the speed-up is
``T(w) / T(W)`` and the efficiency ``T(w) w / (T(W) W)``.

Projection: :func:`daskglm.accounting.calibration.calibrate` learns the cluster from the ledgers
(``est.comm_``) of the daskglm fits of one case, and :func:`daskglm.accounting.projection.project`
predicts each method's time in its solver rounds on ``W`` workers holding the same data
(strong scaling: the rows are spread over ``max(P, W)`` partitions), on the network
measured here and on a stated one.  The model's own error on the measured cluster is
reported next to it.
"""

from __future__ import annotations

import statistics
import time

__all__ = ["project_case", "time_on_workers", "run_scaling"]


def project_case(case_result, scaling, log=print):
    """Project the daskglm fits of one case to more workers with daskglm's cost model.

    Parameters
    ----------
    case_result : dict
        A case's results, with the private ``_ledger`` of each entry.
    scaling : benchmarks.suite.Scaling
    log : callable

    Returns
    -------
    dict or None
        ``calibration`` (the calibrated cluster, described), ``networks`` and ``rows``:
        per method, rounds, measured seconds in solver rounds, the model's prediction for
        the measured cluster and its error, and ``predicted_s[network][workers]``.
    """
    from daskglm.accounting import projection as projections
    from daskglm.accounting.calibration import calibrate

    reports = {entry["entry"]: entry["_ledger"] for entry in case_result["results"]
               if entry.get("_ledger") is not None and entry.get("status") == "ok"}
    if not reports:
        return None
    data_bytes = case_result["data"]["X_bytes"]
    calibration = calibrate(reports, data_bytes=data_bytes)
    rows = {}
    for label, network in scaling.networks:
        for workers in scaling.project_workers:
            spec = f"workers={workers}" + (f",{network}" if network else "")
            projection = projections.project(reports, spec, calibration)
            for row in projection.rows:
                entry = rows.setdefault(row.method, {
                    "method": row.method, "rounds": row.rounds, "measured_s": row.measured,
                    "model_here_s": row.predicted_here, "model_error": row.error,
                    "predicted_s": {}})
                entry["predicted_s"].setdefault(label, {})[str(workers)] = row.predicted_there
    log(f"projection: {calibration.describe()}")
    return {"case": case_result["case"], "calibration": calibration.describe(),
            "networks": [{"label": label, "spec": network or "as calibrated"}
                         for label, network in scaling.networks],
            "workers": list(scaling.project_workers), "rows": list(rows.values())}


def time_on_workers(suite, kept, workers, log=print):
    """Time the scaling entries on a cluster of ``workers`` single-threaded processes.

    Parameters
    ----------
    suite : benchmarks.suite.Suite
    kept : dict
        Case name -> ``(data, case result)`` from the main run (the data's in-memory copy,
        the case's reference and each entry's calibrated setting are reused).
    workers : int
    log : callable

    Returns
    -------
    list of dict
        One row per entry: median seconds, runs and the largest gap.
    """
    from dataclasses import replace

    from benchmarks.cluster import local_cluster
    from benchmarks.data import make_data
    from benchmarks.methods import get_method
    from benchmarks.suite import parse_entry

    rows = []
    with local_cluster(replace(suite.cluster, n_workers=workers)) as client:
        persisted = {}
        for case_name, entry_id in suite.scaling.entries:
            if case_name not in kept:
                continue
            data, result = kept[case_name]
            main = next((e for e in result["results"]
                         if e["entry"] == entry_id and e.get("status") == "ok"), None)
            if main is None:
                continue
            if data.spec not in persisted:
                persisted[data.spec] = make_data(data.spec, client, local=data,
                                                    storage=data.storage)
            on_cluster = persisted[data.spec]
            method = get_method(parse_entry(entry_id)[0])
            problem = next(c.problem for c in suite.cases if c.name == case_name)
            method.run(on_cluster, problem, main["tol"])  # warm-up
            times, fits = [], []
            budget = int(suite.repeat_budget_s // max(main["median_s"], 1e-3))
            for _ in range(max(1, min(suite.repeats, budget))):
                start = time.perf_counter()
                fits.append(method.run(on_cluster, problem, main["tol"]))
                times.append(time.perf_counter() - start)
            reference = result["_reference"]
            rows.append({
                "case": case_name, "entry": entry_id, "tol": main["tol"], "workers": workers,
                "median_s": statistics.median(times), "runs": len(times),
                "gap": max(reference.gap(fit) for fit in fits) if reference else None,
            })
            log(f"  {entry_id} on {workers} worker(s): {rows[-1]['median_s']:.3f} s")
    return rows


def run_scaling(suite, kept, log=print):
    """Strong scaling of the suite's scaling entries over its worker counts.

    Each worker count gets a fresh cluster, one after the other; speed-up and efficiency
    are relative to the largest count.

    Returns
    -------
    dict
        ``rows``: per entry and worker count, the median, runs, gap, ``speedup`` and
        ``efficiency``; ``definition``.
    """
    rows = []
    for workers in sorted(suite.scaling.workers):
        log(f"scaling: {workers} worker process(es)")
        rows += time_on_workers(suite, kept, workers, log)
    base = max(suite.scaling.workers)
    base_times = {(r["case"], r["entry"]): r["median_s"] for r in rows if r["workers"] == base}
    for row in rows:
        reference = base_times.get((row["case"], row["entry"]))
        row["base_workers"] = base
        row["base_median_s"] = reference
        if reference:
            # from this count to the base: the speed-up and the parallel efficiency
            row["speedup"] = row["median_s"] / reference
            row["efficiency"] = row["median_s"] * row["workers"] / (reference * base)
    return {"rows": rows,
            "definition": f"each worker count on a fresh cluster, one after the other; "
                          f"speed-up T(w) / T({base}) and efficiency T(w) w / (T({base}) "
                          f"{base}) for w workers; same data, same calibrated setting"}
