"""The click-through workload: hashed categorical rows, daskglm against Vowpal Wabbit.

``python -m benchmarks click-through`` (``--n``, ``--log2-d``, ``--contenders``, ``--c``,
``--tol``, ``--passes``, ``--vw-options``; ``--json`` for one JSON line per contender).  Rows have 13 numeric fields
(``log1p`` of exponential counts) and 26 categorical fields whose levels are drawn
skewed from 4 to 2,000,000 levels; each (field, level) is hashed to one of ``2**log2_d``
columns.  Labels come from a known logistic model (a weight per level, drawn from the
hash of the level), so the best attainable held-out log loss, the mean entropy of the
true probabilities, is known and printed.

Contenders, each timed from its own input format to a fitted model:

* ``daskglm`` and ``daskglm-lbfgs``: ``solver="auto"`` and ``"lbfgs"`` on CSR partitions
  persisted on a LocalCluster of 2 single-threaded worker processes;
* ``daskglm-zarr``: ``"auto"`` reading the rows from a zarr store in every round
  (``cache="none"``), with the time of one read of the store printed beside it;
* ``vw-1`` and ``vw-N``: Vowpal Wabbit (the ``vowpalwabbit`` package, ``.[bench]``) on
  its text format with the raw fields (it hashes them itself, ``-b log2_d``), logistic
  loss, its adaptive, normalised steps with ``--vw-options`` (default ``-l 1 --power_t
  0.3``, the best held-out loss of a sweep of rates, decays and L2 at 1e6 rows); N
  passes over a cache;
* ``sklearn-lbfgs`` and ``sklearn-saga``: scikit-learn on the CSR matrix in process.

Each line gives the seconds, the held-out log loss and its excess over the best
attainable one.  Generating the rows and writing the text and zarr files are not timed.
"""

from __future__ import annotations

import json
import os
import pathlib
import tempfile
import time
import warnings

import numpy as np

__all__ = ["click_rows", "log_loss", "Data", "run", "add_parser", "main"]

NUMERIC, CATEGORICAL = 13, 26
#: Levels of each categorical field, from 4 to 2e6.
CARDINALITY = np.geomspace(4, 2e6, CATEGORICAL).astype(np.int64)
#: Standard deviation of the true weights of a field's levels.
LEVEL_SCALE = 0.35
NUMERIC_COEF = np.linspace(-0.3, 0.3, NUMERIC)
INTERCEPT = -1.3
CONTENDERS = ("daskglm", "daskglm-lbfgs", "daskglm-zarr", "vw-1", "vw-N", "sklearn-lbfgs",
              "sklearn-saga")


def _mix(values, salt):
    """splitmix64 of ``values + salt``: uint64 hashes."""
    z = values.astype(np.uint64) + np.uint64(salt) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _uniform(values, salt):
    return (_mix(values, salt) >> np.uint64(11)).astype(np.float64) / float(2**53)


def click_rows(n, seed, log2_d):
    """``n`` rows of partition ``seed``: ``(X csr, y, p, numeric, levels)``.

    ``numeric`` is (n, 13) float64, ``levels`` (n, 26) int64: the raw fields that
    Vowpal Wabbit reads.  ``p`` is the true probability of a click.
    """
    import scipy.sparse as sp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # uint64 arithmetic wraps on purpose
        rng = np.random.default_rng([seed, 0x636C6963])
        numeric = np.log1p(rng.exponential(np.geomspace(1, 1000, NUMERIC), size=(n, NUMERIC)))
        levels = np.floor(CARDINALITY * rng.random((n, CATEGORICAL)) ** 3).astype(np.int64)
        fields = np.arange(CATEGORICAL)
        weights = LEVEL_SCALE * np.sqrt(3) * (2 * _uniform(levels, 1000 + fields) - 1)
        logit = INTERCEPT + weights.sum(axis=1) + (numeric - 2.5) @ NUMERIC_COEF
        p = 1.0 / (1.0 + np.exp(-logit))
        y = (rng.random(n) < p).astype(np.float64)
        d = 2**log2_d
        level_columns = (_mix(levels, 2000 + fields) % np.uint64(d)).astype(np.int64)
        numeric_columns = (_mix(np.arange(NUMERIC), 3000) % np.uint64(d)).astype(np.int64)
    columns = np.hstack([np.broadcast_to(numeric_columns, (n, NUMERIC)), level_columns])
    values = np.hstack([numeric, np.ones((n, CATEGORICAL))])
    X = sp.csr_matrix((values.ravel(), columns.ravel(),
                       np.arange(0, n * (NUMERIC + CATEGORICAL) + 1, NUMERIC + CATEGORICAL)),
                      shape=(n, d))
    X.sum_duplicates()
    return X, y, p, numeric, levels


def _entropy(p):
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(np.mean(-p * np.log(p) - (1 - p) * np.log1p(-p)))


def log_loss(y, p):
    """Mean log loss of probabilities ``p`` for labels ``y``."""
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(np.mean(-y * np.log(p) - (1 - y) * np.log1p(-p)))


def _write_vw(path, y, numeric, levels):
    """Vowpal Wabbit's text format: ``label |n i0:v ... |c f0_l ...``, the raw fields."""
    labels = np.where(y > 0, "1", "-1")
    numbers = [np.char.add(f"i{j}:", np.char.mod("%.5g", numeric[:, j])) for j in range(NUMERIC)]
    categories = [np.char.add(f"f{j}_", levels[:, j].astype(str)) for j in range(CATEGORICAL)]
    with open(path, "a") as out:
        for i in range(y.shape[0]):
            out.write(f"{labels[i]} |n {' '.join(c[i] for c in numbers)} "
                      f"|c {' '.join(c[i] for c in categories)}\n")


class Data:
    """The training partitions on a cluster, a held-out set in memory, and files.

    ``persist=False`` leaves ``X`` and ``y`` lazy (each partition generated where it is
    used: a zarr store written from them never holds them whole); ``held_out=False``
    makes no held-out set (``test`` and ``best`` are None); ``compressor`` is that of the
    zarr store (:func:`daskglm.io.write_zarr`).
    """

    def __init__(self, n, log2_d, partitions, client, directory, needs, *, persist=True,
                 held_out=True, compressor="default"):
        import dask
        import dask.array as da
        import scipy.sparse as sp

        rows = -(-n // partitions)
        sizes = [min(rows, n - i * rows) for i in range(partitions)]
        parts = [dask.delayed(click_rows)(size, i, log2_d) for i, size in enumerate(sizes)]
        d = 2**log2_d
        meta = sp.csr_matrix((0, d))
        self.X = da.concatenate([da.from_delayed(part[0], (size, d), dtype=float, meta=meta)
                                 for part, size in zip(parts, sizes)])
        self.y = da.concatenate([da.from_delayed(part[1], (size,), dtype=float)
                                 for part, size in zip(parts, sizes)])
        if persist:
            from distributed import wait

            self.X, self.y = client.persist([self.X, self.y])
            wait([self.X, self.y])  # generating the rows is not timed
        self.test = click_rows(max(n // 10, 10_000), 10**6, log2_d) if held_out else None
        self.best = _entropy(self.test[2]) if held_out else None
        self.directory = pathlib.Path(directory)
        self.local = None
        if needs & {"sklearn-lbfgs", "sklearn-saga"}:
            X, y = dask.compute(self.X, self.y)
            self.local = (X, y)
        self.vw_train = self.vw_test = None
        if needs & {"vw-1", "vw-N"}:
            self.vw_train, self.vw_test = self.directory / "train.vw", self.directory / "test.vw"
            for i, size in enumerate(sizes):
                _, y, _, numeric, levels = click_rows(size, i, log2_d)
                _write_vw(self.vw_train, y, numeric, levels)
            _, y, _, numeric, levels = self.test
            _write_vw(self.vw_test, y, numeric, levels)
        self.zarr = None
        if "daskglm-zarr" in needs:
            from daskglm.io import write_zarr

            self.zarr = str(self.directory / "click.zarr")
            write_zarr(self.zarr, self.X, self.y, max_row_nnz=NUMERIC + CATEGORICAL,
                       compressor=compressor)


def _daskglm(data, C, solver, cache="memory", tol=1e-4):
    import daskglm

    X, y = data.X, data.y
    read_seconds = None
    if cache == "none":
        from daskglm.io import load_zarr

        stored = load_zarr(data.zarr)
        X, y = stored[0], stored[1]
        start = time.perf_counter()
        X.map_blocks(lambda block: np.array([[block.nnz]]), dtype=int,
                     chunks=(1, 1)).sum().compute()
        read_seconds = time.perf_counter() - start
    model = daskglm.LogisticRegression(C=C, solver=solver, cache=cache, tol=tol)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    seconds = time.perf_counter() - start
    X_test, y_test = data.test[0], data.test[1]
    result = {"seconds": seconds, "loss": log_loss(y_test, model.predict_proba(X_test)[:, 1]),
              "converged": bool(model.converged_), "rounds": model.comm_.rounds,
              "chosen": getattr(model, "solver_", solver)}
    if read_seconds is not None:
        reading = [r for r in model.comm_.records if r.bytes_read]
        result.update({"one read of the store, s": read_seconds,
                       "rounds reading the store": len(reading),
                       "their seconds": sum(r.seconds for r in reading),
                       "GB read": model.comm_.bytes_read / 1e9})
    return result


def _vw(data, passes, log2_d, extra):
    from vowpalwabbit import Workspace

    model, predictions = data.directory / "vw.model", data.directory / "vw.predictions"
    cache = f"--cache_file {data.directory / 'vw.cache'} -k --holdout_off " if passes > 1 else ""
    options = (f"-d {data.vw_train} --loss_function logistic -b {log2_d} --passes {passes} "
               f"{cache}{extra} -f {model} --quiet")
    start = time.perf_counter()
    learner = Workspace(options)
    learner.run_parser()
    learner.finish()
    seconds = time.perf_counter() - start
    scorer = Workspace(f"-t -i {model} -d {data.vw_test} --link logistic -p {predictions} "
                       f"--quiet")
    scorer.run_parser()
    scorer.finish()
    p = np.loadtxt(predictions, usecols=0)
    return {"seconds": seconds, "loss": log_loss(data.test[1], p), "passes": passes}


def _sklearn(data, C, solver):
    from sklearn.linear_model import LogisticRegression

    X, y = data.local
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LogisticRegression(C=C, solver=solver, max_iter=10 if solver == "saga"
                                   else 100).fit(X, y)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "loss": log_loss(data.test[1],
                                                 model.predict_proba(data.test[0])[:, 1])}


def run(n=1_000_000, log2_d=22, contenders=CONTENDERS, C=1.0, passes=3, vw_options="",
        partitions=8, workers=2, tol=1e-4):
    """Run the contenders on one generated data set; yield a dict per contender."""
    from distributed import Client, LocalCluster

    needs = set(contenders)
    with tempfile.TemporaryDirectory() as directory, \
            LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) \
            as cluster, Client(cluster) as client:
        start = time.perf_counter()
        data = Data(n, log2_d, partitions, client, directory, needs)
        yield {"contender": "data", "n": n, "log2_d": log2_d, "best attainable loss": data.best,
               "seconds to generate and write": time.perf_counter() - start}
        for name in contenders:
            load = os.getloadavg()[0]
            if name == "daskglm":
                result = _daskglm(data, C, "auto", tol=tol)
            elif name == "daskglm-lbfgs":
                result = _daskglm(data, C, "lbfgs", tol=tol)
            elif name == "daskglm-zarr":
                result = _daskglm(data, C, "auto", cache="none", tol=tol)
            elif name in ("vw-1", "vw-N"):
                result = _vw(data, 1 if name == "vw-1" else passes, log2_d, vw_options)
            elif name == "sklearn-lbfgs":
                result = _sklearn(data, C, "lbfgs")
            elif name == "sklearn-saga":
                result = _sklearn(data, C, "saga")
            else:
                raise ValueError(f"unknown contender {name!r}; known: {CONTENDERS}")
            result["excess loss"] = result["loss"] / data.best - 1.0
            yield {"contender": name, "load": load, **result}


def add_parser(commands):
    """The ``click-through`` sub-command."""
    parser = commands.add_parser("click-through",
                                 help="hashed click-through rows against Vowpal Wabbit")
    parser.add_argument("--n", type=float, default=1_000_000)
    parser.add_argument("--log2-d", type=int, default=22)
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--c", type=float, default=1.0, help="C of daskglm and scikit-learn")
    parser.add_argument("--passes", type=int, default=3, help="Vowpal Wabbit's N")
    parser.add_argument("--vw-options", default="-l 1 --power_t 0.3",
                        help="Vowpal Wabbit's learning options (the best of a sweep at 1e6)")
    parser.add_argument("--tol", type=float, default=1e-4, help="daskglm's tol")
    parser.add_argument("--json", action="store_true", help="one JSON line per contender")
    parser.set_defaults(handler=main)


def main(args):
    """Print one line per contender (the handler of ``click-through``)."""
    for line in run(int(args.n), args.log2_d, args.contenders.split(","), args.c, args.passes,
                    args.vw_options, tol=args.tol):
        if args.json:
            print(json.dumps(line), flush=True)
        else:
            print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in line.items()), flush=True)
    return 0
