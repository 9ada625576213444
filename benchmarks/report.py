"""Results on disk (JSON) and on screen (markdown tables)."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from benchmarks.limits import one_read_seconds

__all__ = ["write_json", "read_json", "markdown", "docs_page"]


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


def _bytes(value):
    if value is None:
        return ""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _where(entry):
    where = entry["where"]
    if entry.get("threads"):
        where += f", {entry['threads']} thr"
    return where


def _gap_cell(entry):
    gap = _number(entry.get("gap"), ".1e")
    if entry.get("gap_met") is False:
        capped = entry.get("calibration", {}).get("capped")
        gap += " (missed" + (f", {entry.get('time_cap_s'):g} s cap" if capped else "") + ")"
    if entry.get("floor_gap") is not None:
        gap += f" [floor {entry['floor_gap']:.0e}]"
    return gap


def _setting(entry):
    tol = entry.get("tol")
    if tol is None:
        return ""
    units = {"epochs": "ep.", "iterations": "it."}.get(entry.get("knob"))
    return f"{int(tol)} {units}" if units else f"{tol:.2g}"


def _memory_cell(entry):
    memory = entry.get("memory")
    if not memory or entry.get("where") in ("spark", "h2o"):  # a JVM's memory is not measured
        return ""
    return f"{memory['peak_bytes'] / 2**20:.0f} (+{memory['added_bytes'] / 2**20:.0f})"


def _per_round(entry, read_s):
    """Seconds per round, and that over one read of X at the cluster's bandwidth."""
    rounds = entry.get("rounds")
    if entry.get("library") != "daskglm" or not rounds:
        return "", ""
    per_round = entry["median_s"] / rounds
    ratio = "" if read_s is None else f"{per_round / read_s:.1f}"
    return f"{per_round * 1e3:.0f}", ratio


def _case_table(case, limits):
    header = ["method", "runs on", "target", "setting", "median s (runs)", "rel. gap",
              "n_iter", "rounds", "bytes", "peak worker MiB (+fit)", "ms/round",
              "round / read"]
    read_s = one_read_seconds(limits, case["data"]["X_bytes"])
    rows, notes = [], []
    for entry in case["results"]:
        if entry.get("status") != "ok":
            rows.append([entry["label"], _where(entry), _number(entry.get("target_gap"), ".0e"),
                         "", f"not run: {entry.get('reason', '')}", "", "", "", "", "", "", ""])
            continue
        per_round, ratio = _per_round(entry, read_s)
        median = f"{entry['median_s']:.3g} ({entry['runs']})"
        if entry.get("reused_calibration_run"):
            median += "*"
        rows.append([
            entry["label"], _where(entry), _number(entry.get("target_gap"), ".0e"),
            _setting(entry), median, _gap_cell(entry), _number(entry.get("n_iter"), "d"),
            _number(entry.get("rounds"), "d"), _bytes(entry.get("bytes")),
            _memory_cell(entry), per_round, ratio,
        ])
        if entry.get("solves"):
            notes.append(f"Rows marked [floor] minimise another problem ({entry['solves']}); "
                         "the floor is the gap of that problem's optimum on the stated "
                         "objective.")
        load = entry.get("prepare") or {}
        if "load_s" in load:
            system = {"spark": "Spark", "h2o": "H2O"}.get(entry.get("where"), "its system")
            notes.append(f"{entry['label']}: loading the data into {system} took "
                         f"{load['load_s']:.1f} s (not in the fit times; its start-up "
                         f"{load.get('session_start_s') or 0:.1f} s).")
    title = (f"### {case['case']}: {case['problem']['description'] if case['problem'] else 'kernels'}"
             f" on {case['data']['label']}"
             + (", read from a zarr store" if case["data"].get("storage") == "zarr" else "")
             + (f" (chunks per worker: {case['data']['placement']})"
                if case["data"].get("placement") else ""))
    reference = case.get("reference")
    lines = [title]
    if reference:
        lines.append(f"Reference objective {reference['objective']:.12g} "
                     f"({reference['seconds']:.1f} s).")
    lines.append(_table(header, rows))
    lines += [f"- {note}" for note in dict.fromkeys(notes)]
    return "\n\n".join(lines)


def _ratios_table(results):
    header = ["ratio (median times)", "value", "target", "met"]
    rows = []
    for ratio in results["ratios"]:
        target = "" if ratio["target"] is None else f"{ratio['goal']} {ratio['target']:g}"
        met = {True: "yes", False: "NO", None: ""}[ratio["met"]]
        value = f"{ratio['value']:.2f}"
        if ratio.get("bound") == "lower bound":
            value = (f"> {value} (the numerator never reached its gap; its last run under "
                     "the time cap)")
        elif ratio.get("bound"):
            value += f" ({ratio['bound']})"
        rows.append([ratio["name"], value, target, met])
    return _table(header, rows)


def _limits_section(results):
    limits = results.get("limits")
    if not limits:
        return None
    header = ["threads", "one read of X (s)", "bandwidth GB/s", "X @ v (s)", "X.T @ X (s)",
              "GFLOP/s"]
    rows = [[row["threads"], f"{row['read_s']:.4f}", f"{row['read_bytes_per_s'] / 1e9:.1f}",
             f"{row['matvec_s']:.4f}", f"{row['gram_s']:.3f}",
             f"{row['gram_flops_per_s'] / 1e9:.1f}"]
            for row in limits["by_threads"].values()]
    return "\n\n".join([
        f"### Machine limits (in-memory copy of {limits['data']['label']})",
        _table(header, rows),
        "ms/round and round / read in the case tables: a daskglm method's median time over "
        "its rounds, and that over one read of the case's X at the bandwidth of "
        f"{limits['threads']} threads (the least a round that reads X can take).",
    ])


def _scaling_section(results):
    parts = []
    scaling = results.get("scaling")
    if scaling and scaling["rows"]:
        header = ["case", "method", "workers", "median s (runs)", "rel. gap",
                  "speed-up to the largest", "efficiency"]
        rows = [[r["case"], r["entry"], r["workers"], f"{r['median_s']:.3g} ({r['runs']})",
                 _number(r.get("gap"), ".1e"), _number(r.get("speedup"), ".2f"),
                 _number(r.get("efficiency"), ".2f")]
                for r in scaling["rows"]]
        parts += ["### Strong scaling", scaling["definition"] + ".", _table(header, rows)]
    projection = results.get("projection")
    if projection:
        networks = [n["label"] for n in projection["networks"]]
        header = ["method", "rounds", "measured s", "model here s", "model error"]
        header += [f"{w} workers, {net}" for net in networks for w in projection["workers"]]
        rows = []
        for r in projection["rows"]:
            row = [r["method"], r["rounds"], f"{r['measured_s']:.3g}",
                   f"{r['model_here_s']:.3g}", f"{100 * r['model_error']:+.0f}%"]
            row += [f"{r['predicted_s'][net][str(w)]:.3g}" for net in networks
                    for w in projection["workers"]]
            rows.append(row)
        parts += [
            f"### Cost-model projection ({projection['case']})",
            "Seconds in each method's solver rounds (validation and driver work left out), "
            "measured here and predicted by `daskglm.accounting.costmodel` for the same data on more "
            f"workers. Calibration: {projection['calibration']}.",
            _table(header, rows),
        ]
    return "\n\n".join(parts) if parts else None


def _skipped_section(results):
    lines = []
    for item in results.get("skipped", []):
        lines.append(f"- {item['case']} ({item['data']}): {item['reason']}")
    if results.get("not_selected"):
        lines.append(f"- not selected by `--only`: {', '.join(results['not_selected'])}")
    return "### Skipped\n\n" + "\n".join(lines) if lines else None


def _summary(results):
    machine, versions, cluster = results["machine"], results["versions"], results["cluster"]
    settings = results["settings"]
    peers = ", ".join(f"{name} {version}" for name, version in versions.items() if version)
    load = machine.get("load_average_before")
    load_text = f", load average {load[0]:.2f} at the start" if load else ""
    if load and machine.get("usable_cores") and load[0] > machine["usable_cores"]:
        load_text += " (busier than its cores: timings are noisy)"
    memory = machine.get("memory_bytes")
    memory_text = f", {memory / 2**30:.0f} GiB" if memory else ""
    command = results.get("command") or f"python -m benchmarks run --suite {results['suite']}"
    return "\n".join([
        f"Command: `{command}` ({results['started']}, {results['seconds']:.0f} s).",
        "",
        f"Suite `{results['suite']}`: median of up to {settings['repeats']} repeats "
        f"(at most {settings['repeat_budget_s']:g} s of repeats per entry; * marks an entry "
        "timed by its accepted calibration run alone); every fit must reach its target "
        f"relative objective gap (default {settings['target_gap']:g}); calibration stops "
        f"tightening before its runs exceed {settings['time_cap_s']:g} s in all.",
        f"Cluster: {cluster['n_workers']} worker processes x {cluster['threads_per_worker']} "
        f"thread. Machine: {machine['usable_cores']} usable cores ({machine['cpu_model']})"
        f"{memory_text}{load_text}; Java: {machine.get('java') or 'none'}.",
        f"Versions: {peers}.",
    ])


_LEGEND = (
    "target: the relative objective gap the entry is calibrated to reach. setting: the "
    "loosest tolerance (in the method's own units), or the fewest epochs or iterations, "
    "of its ladder that reached the target. rel. gap: the largest over the timed runs, (f - f*) / |f*| by one "
    "numpy objective for every method. rounds: daskglm's engine rounds; for other Dask "
    "methods the graphs submitted to the scheduler. bytes: `est.comm_.bytes_measured` for "
    "daskglm; Dask's counters over the whole fit for other Dask methods. peak worker MiB: "
    "the largest worker's peak resident memory during the fit (the driver's for in-memory "
    "methods; not measured for Spark), and in brackets its growth over the memory held "
    "before the fit."
)


def markdown(results):
    """The results document as markdown: summary, one table per case, ratios, limits,
    scaling, projection and what was skipped."""
    sections = [_summary(results), _LEGEND]
    sections += [_case_table(case, results.get("limits")) for case in results["cases"]]
    if results["ratios"]:
        sections += ["### Ratios", _ratios_table(results)]
    for section in (_limits_section(results), _scaling_section(results),
                    _skipped_section(results)):
        if section:
            sections.append(section)
    return "\n\n".join(sections) + "\n"


def _misses(results):
    """Lines naming every entry that missed its gap or did not run, and every missed ratio."""
    lines = []
    for case in results["cases"]:
        for entry in case["results"]:
            if entry.get("status") != "ok":
                lines.append(f"- {case['case']}: {entry['label']} did not run "
                             f"({entry.get('reason', '')}).")
            elif entry.get("gap_met") is False:
                lines.append(f"- {case['case']}: {entry['label']} stopped at gap "
                             f"{entry['gap']:.1e}, short of its target "
                             f"{entry['target_gap']:.0e}.")
    for ratio in results["ratios"]:
        if ratio["met"] is False:
            lines.append(f"- ratio {ratio['name']}: {ratio['value']:.2f}, target "
                         f"{ratio['goal']} {ratio['target']:g}.")
    return lines


_DOCS_INTRO = """# Benchmarks

These tables are written by the benchmark harness in `benchmarks/` of the source tree
(`benchmarks/README.md` there describes it in full).  Each suite is one command:

```bash
pip install ".[bench]"          # dask-glm and dask-ml; pip install pyspark for Spark MLlib
python -m benchmarks run --suite quick
python -m benchmarks run --suite full --output benchmarks/results/full.json
python -m benchmarks docs benchmarks/results/latest.json benchmarks/results/full.json
```

The last command writes this page from the results files.  Every method minimises the
same objective, stated above each table, and is scored by one numpy objective against a
reference optimum computed independently: the relative gap `(f - f*) / |f*|`.  Each
method is calibrated to the loosest setting of its own stopping criterion (or the fewest
epochs) that reaches its target gap, and timed at that setting; times are medians of
repeated runs, on data persisted on the workers before anything is timed, with fixed
seeds.  Versions of every library, the machine and its load average are listed with each
run.  They were taken on a small machine (2 cores) that other jobs may share, so absolute
times are noisy; the ratios between methods timed in the same run are the figures to
read.  A page may hold several runs of the full suite, each over some of its cases
(`--only`); their commands are listed with their tables.

Three measurements have pages of their own: {doc}`peers_benchmark` (every peer library,
1e6 and 1e7 rows), {doc}`out_of_core_benchmark` (stores larger than memory) and, in
{doc}`guide/running`, the cold start (a first fit against the second on fresh clusters,
workers started plainly and with `daskglm.preload`).
"""


def docs_page(results_list):
    """The documentation page: an introduction, then each results document's tables.

    Parameters
    ----------
    results_list : list of dict
        Results documents (e.g. the quick and the full suite).

    Returns
    -------
    str
    """
    sections = [_DOCS_INTRO]
    for results in results_list:
        sections.append(f"## Suite `{results['suite']}`")
        misses = _misses(results)
        if misses:
            sections.append("Missed targets and rows that did not run:\n\n"
                            + "\n".join(misses))
        sections.append(markdown(results).rstrip())
    return "\n\n".join(sections) + "\n"
