"""The markdown tables of a results document."""

from __future__ import annotations

from benchmarks.out_of_core.fits import STREAMED_STEPS
from benchmarks.out_of_core.units import scaled
from benchmarks.out_of_core.workers import N_WORKERS, THREADS_PER_WORKER


def _gb(nbytes):
    return scaled(nbytes, 1e-9)


def _fmt(value, spec, missing=""):
    return missing if value is None else format(value, spec)


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _percent(share):
    return _fmt(None if share is None else 100 * share, ".0f", "?") + ("%" if share is not None
                                                                         else "")


def _compare_tables(compare):
    store, summary = compare["store"], compare["summary"]
    out = [
        f"**cache=\"memory\" vs cache=\"none\"**: one zarr store of {store['n_samples']:,} x "
        f"{store['n_features']} float64 ({_gb(store['bytes']):.2f} GB in memory, "
        f"{_gb(store['bytes_on_disk']):.2f} GB on disk, {store['n_chunks']} chunks of "
        f"{store['chunks']:,} rows), `LogisticRegression(solver=\"lbfgs\")`, medians of "
        f"{len(compare['fits']) // 2} fits each.",
        "",
    ]
    rows = []
    for cache in ("memory", "none"):
        s = summary[cache]
        rows.append([
            f"`{cache}`", _fmt(s["fit_seconds"], ".2f"), _fmt(s["passes"], ".0f"),
            _fmt(s["pass_median"], ".3f"), _fmt(s["pass_compute_median"], ".3f"),
            _fmt(s["first_round_seconds"], ".2f"), _fmt(s["outside_rounds"], ".2f"),
            _fmt(s["read_gb_per_s"], ".2f", "-"), _fmt(s["read_disk_gb_per_s"], ".2f", "-"),
            _percent(s["worker_cpu_share"]), _fmt(s["worker_wait_threads"], ".2f", "?"),
        ])
    out.append(_table(
        ["cache", "fit s", "passes", "s / pass", "kernel thread-s / pass",
         "first round s", "s outside rounds", "pass read GB/s (data)",
         "pass read GB/s (files)", "worker CPU busy", "worker threads waiting for a core"],
        rows))
    out += ["", f"Persisting is **{summary['speedup_per_pass']:.1f}x** faster per pass and "
                f"**{summary['speedup_per_fit']:.1f}x** faster per fit."]
    disk = compare["disk"]
    rows = [[r["read"], _percent(r["resident_before"]), _fmt(_gb(r["bytes"]), ".2f"),
             _fmt(r["seconds"], ".2f"), _fmt(r["gb_per_s"], ".2f")] for r in disk["reads"]]
    dropped = disk["drop_caches"]
    note = ("not tried" if dropped is None else
            ("worked" if dropped["ok"] else f"failed ({dropped['note']})"))
    out += ["", "**Plain sequential read** of X's chunk files (`open().read()`, one file "
                f"after the other); dropping the page cache before the cold read: {note}; "
                f"cached after dropping: {_percent(disk['resident_after_drop'])}, after "
                f"evicting the files: {_percent(disk['resident_after_evict'])}.", ""]
    out.append(_table(["read", "cached before", "GB", "s", "GB/s"], rows))
    none = summary["none"]
    if compare["tasks"]:
        wall = none["pass_median"]
        rows = [[t["step"], _fmt(t["tasks"], ".1f"), _fmt(t["seconds"], ".3f"),
                 _fmt(t["transfers"], ".1f"), _fmt(t["transfer_bytes"] / 1e6, ".1f"),
                 _fmt(t["transfer_seconds"], ".3f")] for t in compare["tasks"]]
        out += ["", "**Where a streamed pass goes** (`cache=\"none\"`, Dask's task stream of the "
                    "last fit, per pass; a pass has "
                    f"{_fmt(wall * N_WORKERS * THREADS_PER_WORKER, '.2f')} thread-s: "
                    f"{N_WORKERS * THREADS_PER_WORKER} threads x {_fmt(wall, '.3f')} s):", ""]
        out.append(_table(["step", "tasks", "compute thread-s", "results moved to the other "
                           "worker", "MB moved", "s moving"], rows))
    steps = compare["chunk_steps"]
    total = sum(steps[step] for step in STREAMED_STEPS)
    per_pass = total * store["n_chunks"] / (N_WORKERS * THREADS_PER_WORKER)
    rows = [[step, _fmt(steps[step] * 1e3, ".1f")] for step in STREAMED_STEPS[:1]]
    rows += [[f"... of which {step}", _fmt(scaled(steps[step], 1e3), ".1f", "-")]
             for step in ("file read", "zstd decompression")]
    rows += [[step, _fmt(steps[step] * 1e3, ".1f")] for step in STREAMED_STEPS[1:]]
    rows.append(["**sum**", _fmt(total * 1e3, ".1f")])
    out += ["", "**One chunk's steps** timed in one thread of the driver (warm page cache, "
                f"median of chunks); x {store['n_chunks']} chunks / "
                f"{N_WORKERS * THREADS_PER_WORKER} threads = {per_pass:.2f} s per pass "
                f"if nothing else took time:", ""]
    out.append(_table(["step", "ms / chunk"], rows))
    return out


def _passes_rows(bounded):
    """The passes over the source and the disk target: ``fit seconds <= 1.3 x (passes x
    one cold sequential read)`` plus the rounds that read nothing."""
    fit, store, disk = bounded["fit"], bounded["store"], bounded["disk"]
    if "source_rounds" not in fit:
        return []
    passes = fit["bytes_read"] / store["bytes"]
    read_seconds = disk["bytes"] / (disk["gb_per_s"] * 1e9)
    in_memory = fit["fit_seconds"] - fit["source_seconds"]
    target = 1.3 * passes * read_seconds + in_memory
    return [
        ["rounds reading the store; passes over it (bytes read / store)",
         f"{fit['source_rounds']}; {passes:.2f}"],
        ["fit / (passes x one cold read of X + rounds reading nothing)",
         f"{fit['fit_seconds']:.1f} s / ({passes:.2f} x {read_seconds:.1f} s + "
         f"{in_memory:.1f} s) = "
         f"{fit['fit_seconds'] / (passes * read_seconds + in_memory):.2f} (target 1.3: "
         f"{target:.0f} s)"],
    ]


def _bounded_tables(bounded):
    store, fit = bounded["store"], bounded["fit"]
    limits = list(bounded["memory_limit"].values())
    limit = limits[0] if limits else None
    peak_rss = max(bounded["peak_rss"].values(), default=None)
    restarted = bounded["restarted"]["any"]
    compression = {"none": "uncompressed, ", "default": "zstd, "}.get(store.get("compressor"), "")
    rows = [
        ["store", f"{store['n_samples']:,} x {store['n_features']} "
                  f"{store.get('dtype', 'float64')}, {compression}"
                  f"{_gb(store['bytes']):.2f} GB in memory, "
                  f"{_gb(store['bytes_on_disk']):.2f} GB on disk, {store['n_chunks']} chunks"],
        ["written in", (f"{store['seconds']:.0f} s ({store['gb_per_s']:.3f} GB/s)"
                        if store.get("seconds") else "(existing store)")],
        ["worker memory limit", f"{len(limits)} x {_fmt(_gb(limit), '.2f')} GB"],
        ["store / all limits", f"{store['bytes'] / sum(limits):.1f}x" if limits else ""],
        ["cache chosen (`auto`)", f"`{fit['cache_']}`"],
        ["kept copies (`daskglm.kept-copies`)", bounded.get("kept_copies", "exact")],
        ["cache reason", bounded.get("cache_reason") or ""],
        ["solver chosen (`auto`)", f"`{fit.get('method')}`"
                                   + (f": {fit['solver_choice'][1]}" if fit.get("solver_choice")
                                      else "")],
        ["cold sequential read of X", f"{bounded['disk']['gb_per_s']:.2f} GB/s "
                                      f"({_gb(bounded['disk']['bytes']):.2f} GB)"],
        ["store cached before / after the fit",
         f"{_percent(bounded['resident_before_fit'])} / "
         f"{_percent(bounded['resident_after_fit'])}"],
        ["fit", f"{fit['fit_seconds']:.1f} s, {fit['n_iter']} iterations, "
                f"{fit['rounds']} rounds"],
        ["start", fit["start"][1] if fit.get("start") else "zero coefficients"],
        *_passes_rows(bounded),
        ["workers' CPU busy; their threads waiting for a core (mean)",
         f"{_percent(fit['worker_cpu_share'])}; {_fmt(fit['worker_wait_threads'], '.2f', '?')}"],
        ["first round (validate; the store evicted before the fit)",
         f"{fit['first_round']['seconds']:.2f} s, "
         f"{_fmt(fit['first_round']['read_gb_per_s'], '.2f')} GB/s"],
        ["s / pass (median of gradient, Hessian or Gram rounds)", f"{fit['pass_median']:.2f} "
                                                 f"(min {fit['pass_min']:.2f}, {fit['passes']} passes)"],
        ["pass read throughput", f"{_fmt(fit['read_gb_per_s'], '.2f', '-')} GB/s of data, "
                                 f"{_fmt(fit['read_disk_gb_per_s'], '.2f', '-')} GB/s of files"],
        ["peak process memory, workers summed (MemorySampler)",
         f"{_fmt(_gb(bounded['peak_process_memory']), '.2f')} GB of "
         f"{_fmt(_gb(sum(limits)), '.2f')} GB"],
        ["peak RSS of a worker (polled every 50 ms)",
         f"{_fmt(_gb(peak_rss), '.2f')} GB of {_fmt(_gb(limit), '.2f')} GB "
         f"({_percent(peak_rss / limit if peak_rss and limit else None)})"],
        ["worker restarted", "yes" if restarted else "no (same worker processes)"],
        ["worker warnings", str(len(bounded["worker_warnings"]))],
    ]
    out = ["**Bounded memory**: `LogisticRegression(solver=\"auto\", cache=\"auto\")` on a "
           "store larger than the workers' memory.", "", _table(["", ""], rows)]
    messages = {}
    for line in bounded["worker_warnings"]:
        text = line.split(": ", 1)[-1].split(" -- ")[0]
        messages[text] = messages.get(text, 0) + 1
    if messages:
        out += [""] + [f"* {count} x {text}" for text, count in messages.items()]
    if fit["cache_"] == "memory":
        out += ["", f"**`cache=\"auto\"` chose `\"{fit['cache_']}\"`**: the store fits in the "
                    "workers' memory, so this is not an out-of-core fit (use a larger --n or a "
                    "smaller --memory-limit)."]
    return out


def markdown(results):
    """The markdown tables of a results document.

    Parameters
    ----------
    results : dict
        As returned by :func:`run`.

    Returns
    -------
    str
    """
    machine = results["machine"]
    load = results["load_average_start"] or []
    out = [
        f"`{results['command']}` on {machine.get('cpu_model')}, "
        f"{machine.get('usable_cores')} usable cores, "
        f"{_fmt(scaled(machine.get('memory_bytes'), 2**-30), '.1f')} GiB "
        f"memory; "
        f"{N_WORKERS} workers x {THREADS_PER_WORKER} thread; load average at the start "
        f"{', '.join(f'{v:.1f}' for v in load)}.",
        "",
    ]
    if "compare" in results:
        out += _compare_tables(results["compare"]) + [""]
    if "write_rate" in results:
        rate = results["write_rate"]
        out += [f"The largest store written ({rate['from_store_bytes'] / 1e9:.2f} GB) was "
                f"written at {rate['gb_per_s']:.3f} GB/s (generating, compressing, writing and "
                f"`sync`): a "
                f"{rate['larger_than_memory_bytes'] / 1e9:.1f} GB store (larger than the "
                f"machine's memory) would take about "
                f"{rate['seconds_for_larger_than_memory'] / 60:.0f} minutes to write.", ""]
    if "bounded" in results:
        out += _bounded_tables(results["bounded"]) + [""]
    return "\n".join(out).rstrip() + "\n"
