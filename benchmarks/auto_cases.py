"""``solver="auto"`` against every one of the package's batch solvers that handles each
of a set of problems: correlated columns, features on their natural scales (a 5-class
model with an age, a log density, an exposure in the thousands and a 10-level
categorical), rare events (1% positives), 20 classes, Poisson and Gamma with offsets,
an L1 logistic and an elastic-net Poisson model, and sparse rows.  In this process,
numpy (or scipy CSR) input, or with ``--workers N`` Dask arrays persisted on a
``LocalCluster`` of ``N`` one-thread worker processes; each fit ``--repeats`` times, the
median seconds, and the
rounds, iterations, ``converged_`` and what auto chose (``comm_.choices``); the last
column of auto's row is its time over the fastest other solver's (the issue's target:
at most 1.15).

``python -m benchmarks auto-cases [--rows 1e6] [--workers 2] [--cases "rare events"]``
(a few minutes at 1e6 rows on 2 cores).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = ["add_parser", "main", "correlated", "raw_scales", "CASES"]


def correlated(n, d=30, seed=0):
    """30 columns, 7 of them ever closer to the first; logistic labels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    for j in range(1, 8):  # columns ever closer to the first
        X[:, j] = X[:, 0] + 10 ** (-j / 2) * rng.normal(size=n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ rng.normal(size=d))))).astype(float)
    return X, y


def raw_scales(n, seed=0):
    """An age, a log density, an exposure in the thousands and a 10-level categorical;
    5 classes."""
    rng = np.random.default_rng(seed)
    region = rng.integers(0, 10, n)
    X = np.column_stack([rng.uniform(18, 90, n), rng.normal(8, 2, n), rng.gamma(2.0, 500.0, n),
                         np.eye(10)[region][:, 1:]])
    scales = np.r_[0.03, 0.2, 0.001, np.full(9, 0.5)]
    eta = X @ (rng.normal(size=(X.shape[1], 5)) * scales[:, None])
    return X, _draw_classes(eta, rng)


def _draw_classes(eta, rng):
    p = np.exp(eta - eta.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return (p.cumsum(axis=1) > rng.uniform(size=(len(eta), 1))).argmax(axis=1)


def _rare(n, seed=1):
    """40 columns, about 1% positives."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 40))
    eta = X @ (rng.normal(size=40) / 6) - 5.0
    return X, (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)


def _classes20(n, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 20))
    return X, _draw_classes(X @ (rng.normal(size=(20, 20)) / 3), rng)


def _with_offset(n, family, seed=3):
    """20 columns and a log exposure; Poisson counts or Gamma amounts."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 20))
    offset = np.log(rng.uniform(0.5, 2.0, size=n))
    mu = np.exp(X @ (rng.normal(size=20) / 10) + offset)
    y = rng.poisson(mu) if family == "poisson" else rng.gamma(2.0, mu / 2.0)
    return X, y.astype(float), offset


def _sparse(n, seed=4, d=1000, per_row=10):
    """Rows of 10 one-hot entries out of 1000 columns (scipy CSR); logistic labels."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    columns = rng.integers(0, d, size=(n, per_row))
    X = sp.csr_matrix((np.ones(n * per_row), columns.ravel(), np.arange(0, n * per_row + 1,
                                                                        per_row)), shape=(n, d))
    X.sum_duplicates()
    eta = X @ (rng.normal(size=d) / 2)
    return X, (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)


def _cases():
    """``name -> (make(n) -> (X, y, fit keywords), estimator(solver), solvers)``."""
    import daskglm

    def logistic(**kw):
        return lambda solver: daskglm.LogisticRegression(solver=solver, **kw)

    def glm(**kw):
        return lambda solver: daskglm.GLM(solver=solver, **kw)

    def offset_case(family):
        def make(n):
            X, y, offset = _with_offset(n, family)
            return X, y, {"offset": offset}
        return make

    smooth = ("lbfgs", "newton", "gd")
    return {
        "correlated": (lambda n: (*correlated(n), {}), logistic(), smooth),
        "raw scales (5 classes)": (lambda n: (*raw_scales(n), {}), logistic(), smooth),
        "rare events": (lambda n: (*_rare(n), {}), logistic(), smooth),
        "20 classes": (lambda n: (*_classes20(n), {}), logistic(), smooth),
        "Poisson with offset": (offset_case("poisson"),
                            glm(family="poisson", alpha=1e-4), smooth),
        "Gamma with offset": (offset_case("gamma"),
                          glm(family="gamma", link="log", alpha=1e-4), smooth),
        "L1 logistic": (lambda n: (*_rare(n), {}), logistic(penalty="l1", C=0.01),
                        ("proximal", "newton", "admm")),
        "elastic-net Poisson": (offset_case("poisson"),
                                glm(family="poisson", alpha=1e-3, penalty="elasticnet",
                                    l1_ratio=0.5), ("proximal", "newton")),
        "sparse (CSR)": (lambda n: (*_sparse(n), {}), logistic(), smooth),
    }


CASES = ("correlated", "raw scales (5 classes)", "rare events", "20 classes",
         "Poisson with offset", "Gamma with offset", "L1 logistic", "elastic-net Poisson",
         "sparse (CSR)")


def _timed(estimator, X, y, fit_kw, repeats):
    seconds = []
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            started = time.perf_counter()
            model = estimator.fit(X, y, **fit_kw)
            seconds.append(time.perf_counter() - started)
    return model, float(np.median(seconds))


def _on_cluster(X, y, fit_kw, partitions):
    """The rows as persisted Dask arrays of ``partitions`` chunks (CSR chunks for CSR)."""
    import dask.array as da

    chunk = -(-X.shape[0] // partitions)
    X = da.from_array(X, chunks=(chunk, X.shape[1]), asarray=False)
    return (X.persist(), da.from_array(y, chunks=chunk).persist(),
            {key: da.from_array(value, chunks=chunk).persist() for key, value in fit_kw.items()})


def main(args):
    if args.workers:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=args.workers, threads_per_worker=1) as cluster, \
                Client(cluster):
            return _run(args)
    return _run(args)


def _run(args):
    n = int(args.rows)
    cases = _cases()
    chosen = CASES if not args.cases else tuple(c.strip() for c in args.cases.split(","))
    print("| case | solver | median s | iterations | gradient / Hessian rounds | converged_ "
          "| auto's choices | over the fastest |")
    print("|---|---|---|---|---|---|---|---|")
    for case in chosen:
        make, estimator, solvers = cases[case]
        X, y, fit_kw = make(n)
        small = {key: value[:1000] for key, value in fit_kw.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for solver in (*solvers, "auto"):  # compile the loops
                estimator(solver).set_params(max_iter=2).fit(X[:1000], y[:1000], **small)
        if args.workers:
            X, y, fit_kw = _on_cluster(X, y, fit_kw, 2 * args.workers)
        best = np.inf
        for solver in (*solvers, "auto"):
            model, seconds = _timed(estimator(solver), X, y, fit_kw, args.repeats)
            report = model.comm_
            choices = "; ".join(f"{key}: {value[0]}" for key, value in report.choices.items()
                                if key in ("solver", "switch")) or "-"
            if solver == "auto":
                ratio = f"{seconds / best:.2f}"
            else:
                best = min(best, seconds) if model.converged_ else best
                ratio = ""
            print(f"| {case} | {solver} ({model.solver_}) | {seconds:.2f} | "
                  f"{int(np.max(model.n_iter_))} | {report.count('gradient')} / "
                  f"{report.count('hessian')} | {model.converged_} | {choices} | {ratio} |",
                  flush=True)
    return 0


def add_parser(commands):
    """The ``auto-cases`` sub-command."""
    parser = commands.add_parser("auto-cases", help="auto against every batch solver")
    parser.add_argument("--rows", type=float, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0,
                        help="worker processes of a LocalCluster, the rows persisted on "
                             "them in 2 chunks a worker (default 0: numpy in this process)")
    parser.add_argument("--cases", default="",
                        help="comma-separated case names (default all): " + ", ".join(CASES))
    parser.set_defaults(handler=main)
