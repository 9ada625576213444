"""Results on disk (JSON) and on screen (markdown tables)."""

from __future__ import annotations

import json
import pathlib

import numpy as np

__all__ = ["write_json", "read_json", "markdown"]


def _plain(obj):
    """JSON encoder fallback for numpy scalars and arrays."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"Cannot write {type(obj).__name__} as JSON.")


def write_json(results, path):
    """Write the results document to ``path``, creating its folder.

    Returns
    -------
    pathlib.Path
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=_plain) + "\n")
    return path


def read_json(path):
    """Read a results document written by :func:`write_json`."""
    return json.loads(pathlib.Path(path).read_text())


def _number(value, spec):
    return "" if value is None else format(value, spec)


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _results_table(results):
    header = ["case", "method", "runs on", "tol", "median s", "min s", "rel. gap", "n_iter",
              "rounds"]
    rows = []
    for case in results["cases"]:
        for entry in case["results"]:
            gap = _number(entry.get("gap"), ".1e")
            if entry.get("gap_met") is False:
                gap += " (target missed)"
            where = entry["where"]
            if entry.get("threads"):
                where += f", {entry['threads']} thread" + ("s" if entry["threads"] > 1 else "")
            rows.append([
                case["case"], entry["label"], where, _number(entry.get("tol"), ".3g"),
                _number(entry["median_s"], ".3g"), _number(entry["min_s"], ".3g"), gap,
                _number(entry.get("n_iter"), "d"), _number(entry.get("rounds"), "d"),
            ])
    return _table(header, rows)


def _ratios_table(results):
    header = ["ratio (median times)", "value", "target", "met"]
    rows = []
    for ratio in results["ratios"]:
        target = "" if ratio["target"] is None else f"{ratio['goal']} {ratio['target']:g}"
        met = {True: "yes", False: "NO", None: ""}[ratio["met"]]
        rows.append([ratio["name"], f"{ratio['value']:.2f}", target, met])
    return _table(header, rows)


def _summary(results):
    machine, versions, cluster = results["machine"], results["versions"], results["cluster"]
    settings = results["settings"]
    peers = ", ".join(f"{name} {version}" for name, version in versions.items() if version)
    load = machine.get("load_average_before")
    load_text = f", load average {load[0]:.2f} at the start" if load else ""
    if load and machine.get("usable_cores") and load[0] > machine["usable_cores"]:
        load_text += " (busier than its cores: timings are noisy)"
    return "\n".join([
        f"Suite `{results['suite']}` ({results['started']}): median of {settings['repeats']} "
        f"repeats; every fit must reach relative objective gap <= {settings['target_gap']:g}.",
        f"Cluster: {cluster['n_workers']} worker processes x {cluster['threads_per_worker']} "
        f"thread. Machine: {machine['usable_cores']} usable cores ({machine['cpu_model']})"
        f"{load_text}.",
        f"Versions: {peers}.",
    ])


def markdown(results):
    """The results document as markdown: a summary, the timings and the ratios."""
    data = {case["data"]["label"] for case in results["cases"]}
    problems = [f"`{case['case']}`: {case['problem']['description']}"
                for case in results["cases"] if case["problem"]]
    return "\n\n".join([
        _summary(results),
        "Data: " + "; ".join(sorted(data)) + ". Problems: " + "; ".join(problems) + ".",
        _results_table(results),
        "tol: each method's own stopping tolerance, the loosest of its ladder reaching the "
        "target gap. rounds: daskglm's engine rounds (validation + solver); dask-glm's "
        "function evaluations (one Dask computation each).",
        _ratios_table(results),
    ]) + "\n"
