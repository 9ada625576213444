"""SGD on hashed sparse rows against L-BFGS: seconds, epochs, gap to the optimum, bytes.

A ``distributed.LocalCluster`` of 2 single-threaded worker processes, hashed rows
(``--rows`` x ``2 ** --log2-features``, ``--nnz`` ones a row at random columns, labels
from a logistic model with N(0, 0.7^2) coefficients), 4 partitions, persisted; L2
logistic regression with ``C = 1``.  ``lbfgs`` to its optimum, then ``sgd`` at its
defaults for ``--epochs`` epochs; printed: seconds, epochs, ``converged_``, the relative
objective gap to L-BFGS's, the bytes measured (or modelled) and the round sizing chosen.
Last, ``SGDClassifier()`` at its defaults (the hinge loss, up to 1000 epochs, ``tol``
1e-3): its seconds, epochs and training accuracy (its objective is not the logistic one).

``python -m benchmarks sparse-sgd`` (about 20 seconds on 2 cores).
"""

from __future__ import annotations

import time
import warnings

import numpy as np


def hashed_rows(n, d, nnz, seed=0):
    """``(X, y)``: CSR rows of ``nnz`` ones at random columns, logistic labels."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), nnz)
    X = sp.csr_matrix((np.ones(n * nnz), (rows, rng.integers(0, d, n * nnz))), shape=(n, d))
    coef = rng.normal(scale=0.7, size=d)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ coef)))).astype(float)
    return X, y


def main(args):
    import dask.array as da
    from distributed import Client, LocalCluster

    import daskglm

    n, d = int(args.rows), 2 ** int(args.log2_features)
    X, y = hashed_rows(n, d, args.nnz)

    def objective(model):
        coef = model.coef_.ravel()
        eta = X @ coef + model.intercept_[0]
        return float(np.mean(np.logaddexp(0, eta) - y * eta) + coef @ coef / (2 * n))

    print("| solver | seconds | epochs or iterations | converged_ | gap | MB | rounds of |")
    print("|---|---|---|---|---|---|---|")
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster):
        Xd = da.from_array(X, chunks=(n // 4, d), asarray=False).persist()
        yd = da.from_array(y, chunks=n // 4).persist()
        best = None
        for solver, max_iter in (("lbfgs", 100), ("sgd", args.epochs)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                started = time.perf_counter()
                model = daskglm.LogisticRegression(solver=solver, max_iter=max_iter).fit(Xd, yd)
                seconds = time.perf_counter() - started
            value = objective(model)
            best = value if best is None else best
            report = model.comm_
            megabytes = (report.bytes_measured or report.bytes_modelled) / 1e6
            sizing = report.choices.get("sync_every", ("-", ""))[0]
            print(f"| {solver} | {seconds:.1f} | {int(np.max(model.n_iter_))} | "
                  f"{model.converged_} | {value / best - 1:.2e} | {megabytes:.0f} | {sizing} |",
                  flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            started = time.perf_counter()
            model = daskglm.SGDClassifier(random_state=0).fit(Xd, yd)
            seconds = time.perf_counter() - started
        print(f"\nSGDClassifier() (hinge): {seconds:.1f} s, {model.n_iter_} epochs, "
              f"converged_ {model.converged_}, training accuracy "
              f"{float(model.score(Xd, yd)):.4f}", flush=True)
    return 0


def add_parser(commands):
    """The ``sparse-sgd`` sub-command."""
    parser = commands.add_parser("sparse-sgd", help="SGD on hashed sparse rows against L-BFGS")
    parser.add_argument("--rows", type=float, default=100_000)
    parser.add_argument("--log2-features", type=int, default=18)
    parser.add_argument("--nnz", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=10)
    parser.set_defaults(handler=main)
