"""Categorical tables: daskglm's encoding per partition against dense dummies and glum.

``python -m benchmarks categorical [--rows 10000000] [--dummies-rows 1000000]``;
``python -m benchmarks categorical --partition`` times each step of a fit on one 5e5-row
partition instead, as CSR and as a categorical block (:func:`partition_kernels`);
``python -m benchmarks categorical --parquet DIR [--rows N]`` writes the table (its
categorical columns as strings) to 20 parquet files in ``DIR`` once and fits it read once
and read twice, alternating (:func:`parquet_fits`).

The data: a policy table of ``rows`` rows with three categorical columns of 10, 100 and
1,000 levels (pandas ``category``), 10 numeric columns, an exposure and Poisson claim
counts.  The model: Poisson with ``log(exposure)`` as offset and an L2 penalty
``alpha=1e-4`` (every level kept, as glum and H2O keep them under a penalty), to a
gradient tolerance of 1e-6.

Fits, each timed warm (a small fit first loads the compiled loops):

* daskglm on a Dask DataFrame of the table on a ``LocalCluster`` of two single-threaded
  worker processes, at ``rows`` and at ``dummies_rows``: each partition becomes a
  categorical block (its numeric columns and each row's level codes) where it lives;
* daskglm on the same rows as dense float64 dummies (a Dask array made per partition), at
  ``dummies_rows`` only: at ``rows`` = 1e7 they would take 90 GB;
* glum (``GeneralizedLinearRegressor``, its categorical matrix type, on the pandas frame
  in this machine's memory, in a process of its own), at both sizes, when installed
  (``pip install glum``; skipped with a message otherwise).

Peak memory: the workers' summed process memory (``MemorySampler``) for daskglm, the
process's peak resident memory for glum.  The coefficients of each fit are compared with
glum's (the largest absolute difference; both stop at a gradient tolerance of 1e-6, so a
level seen in few rows may differ by up to about ``1e-6`` over its curvature).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings

import numpy as np

__all__ = ["make_table", "main"]

LEVELS = (10, 100, 1000)
N_NUMERIC = 10
ALPHA = 1e-4
TOL = 1e-6


def make_table(rows, seed=0):
    """The policy table: a pandas DataFrame with the columns ``cat0..cat2``,
    ``num0..num9``, ``exposure`` and ``claims``."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    columns = {}
    eta = np.full(rows, -2.0)
    for i, levels in enumerate(LEVELS):
        codes = rng.integers(0, levels, rows).astype(np.int16)
        effects = rng.normal(0, 0.3, levels)
        eta += effects[codes]
        columns[f"cat{i}"] = pd.Categorical.from_codes(codes, [f"l{k}" for k in range(levels)])
    for j in range(N_NUMERIC):
        values = rng.normal(0, 1, rows)
        eta += 0.05 * values
        columns[f"num{j}"] = values
    exposure = rng.uniform(0.2, 1.0, rows)
    columns["exposure"] = exposure
    columns["claims"] = rng.poisson(np.exp(eta) * exposure).astype(np.float64)
    return pd.DataFrame(columns)


FEATURES = [f"cat{i}" for i in range(len(LEVELS))] + [f"num{j}" for j in range(N_NUMERIC)]


def _dummies_block(frame):
    import pandas as pd

    return pd.get_dummies(frame[FEATURES], columns=FEATURES[:len(LEVELS)],
                          dtype=np.float64).to_numpy()


def _daskglm_fit(client, X, y, exposure, keep_model=False):
    """A warm daskglm fit: seconds, peak summed worker memory, coefficients, iterations
    (and the model itself with ``keep_model``)."""
    from distributed.diagnostics import MemorySampler
    from sklearn.exceptions import ConvergenceWarning

    import daskglm

    sampler = MemorySampler()
    model = daskglm.PoissonRegressor(alpha=ALPHA, tol=TOL, max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with sampler.sample("fit", client=client, measure="process", interval=0.25):
            start = time.perf_counter()
            model.fit(X, y, exposure=exposure)
            seconds = time.perf_counter() - start
    peak = max((value for _, value in sampler.samples.get("fit", [])), default=None)
    return {"seconds": seconds, "peak_bytes": peak, "coef": model.coef_.tolist(),
            "intercept": float(model.intercept_), "n_iter": int(model.n_iter_),
            "solver": model.solver_, "converged": bool(model.converged_),
            "names": [str(n) for n in getattr(model, "feature_names_out_", [])],
            **({"model": model} if keep_model else {})}


_GLUM_SCRIPT = """
import json, resource, sys, time
import numpy as np
sys.path.insert(0, {root!r})
from benchmarks.categorical import make_table, FEATURES, ALPHA, TOL
from glum import GeneralizedLinearRegressor
frame = make_table({rows}, {seed})
model = GeneralizedLinearRegressor(family="poisson", alpha=ALPHA, l1_ratio=0.0, gradient_tol=TOL,
                                   drop_first=False, max_iter=1000)
start = time.perf_counter()
model.fit(frame[FEATURES], frame["claims"], offset=np.log(frame["exposure"]))
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "coef": model.coef_.tolist(),
                   "intercept": float(model.intercept_), "n_iter": int(model.n_iter_),
                   "names": list(model.feature_names_),
                   "peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}}))
"""


def _glum_fit(rows, seed):
    """glum in a process of its own, on the pandas table; None when not installed."""
    import pathlib

    try:
        import glum  # noqa: F401
    except ImportError:
        print("glum is not installed (pip install glum): its rows are skipped", flush=True)
        return None
    root = str(pathlib.Path(__file__).resolve().parent.parent)
    script = _GLUM_SCRIPT.format(root=root, rows=rows, seed=seed)
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _by_name(fit):
    """Coefficients by feature name (``cat0[l3]`` or glum's ``cat0__l3``), normalised."""
    names = [n.replace("__", "[") + "]" if "__" in n else n for n in fit["names"]]
    return dict(zip(names, fit["coef"]))


def _largest_difference(fit, reference):
    if reference is None or not fit.get("names"):
        return None
    ours, theirs = _by_name(fit), _by_name(reference)
    shared = sorted(set(ours) & set(theirs))
    if len(shared) != len(theirs):
        return None
    return max(abs(ours[n] - theirs[n]) for n in shared) if shared else None


def partition_kernels(rows=500_000, seed=0, repeats=5):
    """The best of ``repeats`` seconds of each step of a fit on one partition of ``rows``
    rows of the table, as CSR and as a categorical block, and their bytes: a dict per
    layout."""
    from daskglm.compute.kernels import loss_grad, loss_grad_hess
    from daskglm.compute.summaries import stored_bytes, summarize
    from daskglm.engine.partitions import _as_partition
    from daskglm.estimators.categorical import encode_frame, table_encoding
    from daskglm.model.families import Poisson

    frame = make_table(rows, seed)
    encoding = table_encoding(frame[FEATURES], drop_first=False)
    y, offset = frame["claims"].to_numpy(), np.log(frame["exposure"].to_numpy())
    params = np.random.default_rng(seed).normal(0, 0.01, encoding.n_features + 1)
    family = Poisson()

    def best(step, *args):
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            step(*args)
            seconds.append(time.perf_counter() - start)
        return min(seconds)

    found = {}
    for layout in ("csr", "blocks"):
        X = encode_frame(frame[FEATURES], encoding, layout=layout)
        part = _as_partition(X, y, None, offset)
        found[layout] = {
            "encode": best(encode_frame, frame[FEATURES], encoding, np.float64, layout),
            "validation statistics": best(summarize, part, family),
            "gradient": best(loss_grad, part, params, family, True),
            "hessian": best(loss_grad_hess, part, params, family, True),
            "bytes": stored_bytes(X)}
    return found


def write_parquet_table(rows, directory, seed=0, files=20):
    """The policy table of ``rows`` rows, its categorical columns as strings (no known
    levels), written to ``directory`` as ``files`` parquet files (once: an existing
    table of as many rows is used as it is)."""
    import pathlib

    import dask.dataframe as dd

    directory = pathlib.Path(directory)
    marker = directory / f"rows-{rows}-seed-{seed}"
    if marker.exists():
        return directory
    frame = make_table(rows, seed)
    for column in FEATURES[:len(LEVELS)]:
        frame[column] = frame[column].astype(str)
    dd.from_pandas(frame, npartitions=files).to_parquet(directory, write_index=False)
    marker.touch()
    return directory


def parquet_fits(directory, repeats=3):
    """Fits of the parquet table on a two-worker cluster, alternating: read once (the
    default: each partition read where it lives and kept, its levels found in that read)
    and read twice (the levels found by a pass over the string columns, the table then
    read again by the validation round, as a table too large to keep is fitted).  Each
    fit's seconds, the seconds of its driver passes and of its validation round, and
    its coefficients."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from daskglm.accounting.kinds import Kind
    from daskglm.estimators import base, categorical

    original = categorical.read_table

    def read_twice(frame, drop_first, missing="error", cache="auto", client=None):
        return original(frame, drop_first, missing, "none", client)

    runs = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        warm = make_table(20_000, 1)
        for column in FEATURES[:len(LEVELS)]:  # string columns, as the parquet table's
            warm[column] = warm[column].astype(str)
        for _ in range(2):
            _daskglm_fit(client, dd.from_pandas(warm[FEATURES], npartitions=4),
                         dd.from_pandas(warm["claims"], npartitions=4),
                         dd.from_pandas(warm["exposure"], npartitions=4))
        table = dd.read_parquet(directory)  # a first fit of the files, not timed
        _daskglm_fit(client, table[FEATURES], table["claims"], table["exposure"])
        for _ in range(repeats):
            for reads in ("once", "twice"):
                base.read_table = original if reads == "once" else read_twice
                try:
                    table = dd.read_parquet(directory)
                    fit = _daskglm_fit(client, table[FEATURES], table["claims"],
                                       table["exposure"], keep_model=True)
                finally:
                    base.read_table = original
                ledger = fit.pop("model").comm_
                fit["passes"] = [r.seconds for r in ledger.records
                                 if r.kind == Kind.DRIVER_PASS]
                fit["validation"] = sum(r.seconds for r in ledger.records
                                        if r.kind.startswith("validate"))
                runs.append({"reads": reads, **fit})
    return runs


def main(args):
    if getattr(args, "parquet", None):
        from benchmarks.environment import load_average

        directory = write_parquet_table(args.rows, args.parquet, args.seed)
        print(f"load average at the start: {load_average()}", flush=True)
        runs = parquet_fits(directory)
        print(f"load average at the end: {load_average()}\n", flush=True)
        print("| table read | fit s | driver passes s | validation round s | peak memory | "
              "iterations | largest coefficient difference from the first fit |")
        print("|---|---|---|---|---|---|---|")
        first = np.asarray(runs[0]["coef"])
        for r in runs:
            passes = " + ".join(f"{s:.2f}" for s in r["passes"])
            print(f"| {r['reads']} | {r['seconds']:.2f} | {passes} | {r['validation']:.2f} | "
                  f"{(r['peak_bytes'] or 0) / 1e9:.2f} GB | {r['n_iter']} | "
                  f"{np.abs(np.asarray(r['coef']) - first).max():.1e} |")
        return 0
    if getattr(args, "partition", False):
        from benchmarks.environment import load_average

        print(f"load average at the start: {load_average()}", flush=True)
        found = partition_kernels(seed=args.seed)
        print("| per 5e5-row partition | CSR (compiled) | categorical block |\n|---|---|---|")
        for step in ("encode", "validation statistics", "gradient", "hessian"):
            print(f"| {step} | {1e3 * found['csr'][step]:.1f} ms | "
                  f"{1e3 * found['blocks'][step]:.1f} ms |")
        print(f"| memory | {found['csr']['bytes'] / 1e6:.0f} MB | "
              f"{found['blocks']['bytes'] / 1e6:.0f} MB |")
        return 0
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from benchmarks.environment import load_average

    print(f"load average at the start: {load_average()}", flush=True)
    results = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        warm = make_table(20_000, args.seed)
        _daskglm_fit(client, dd.from_pandas(warm[FEATURES], npartitions=2),
                     dd.from_pandas(warm["claims"], npartitions=2),
                     dd.from_pandas(warm["exposure"], npartitions=2))
        for rows in sorted({args.dummies_rows, args.rows}):
            frame = make_table(rows, args.seed)
            parts = max(2, rows // 500_000)
            ddf = client.persist(dd.from_pandas(frame, npartitions=parts))
            reference = _glum_fit(rows, args.seed)
            if reference is not None:
                results.append({"rows": rows, "method": "glum (tabmat categorical, in memory)",
                                **reference, "difference": 0.0})
            fit = _daskglm_fit(client, ddf[FEATURES], ddf["claims"], ddf["exposure"])
            fit["difference"] = _largest_difference(fit, reference)
            results.append({"rows": rows, "method": "daskglm, categorical columns (blocks per "
                                                    "partition)", **fit})
            if rows <= args.dummies_rows:
                meta = np.empty((0, sum(LEVELS) + N_NUMERIC))
                dense = ddf.map_partitions(_dummies_block, meta=meta)
                X = client.persist(dense.compute_chunk_sizes())
                y = ddf["claims"].to_dask_array(lengths=True)
                exposure = ddf["exposure"].to_dask_array(lengths=True)
                fit = _daskglm_fit(client, X, y, exposure)
                fit["names"] = []
                fit["difference"] = None
                results.append({"rows": rows, "method": "daskglm, dense float64 dummies",
                                "dummy_bytes": int(X.nbytes), **fit})
                del X
            else:
                results.append({"rows": rows, "method": "daskglm, dense float64 dummies",
                                "skipped": f"{rows * (sum(LEVELS) + N_NUMERIC) * 8 / 1e9:.0f}"
                                           " GB of dummies"})
            del ddf, frame
    print(f"load average at the end: {load_average()}\n", flush=True)
    print("| rows | fit | solver | seconds | peak memory | iterations | largest coefficient "
          "difference from glum |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        if "skipped" in r:
            print(f"| {r['rows']:,} | {r['method']} | | not built: {r['skipped']} | | | |")
            continue
        difference = "" if r.get("difference") is None else f"{r['difference']:.1e}"
        print(f"| {r['rows']:,} | {r['method']} | {r.get('solver', 'IRLS')} | "
              f"{r['seconds']:.1f} | "
              f"{(r['peak_bytes'] or 0) / 1e9:.2f} GB | {r['n_iter']} | {difference} |")
    return 0
