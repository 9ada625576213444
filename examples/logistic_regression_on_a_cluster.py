"""Logistic regression on a Dask cluster, with its communication ledger.

Starts a two-worker ``distributed.LocalCluster``, builds a synthetic binary
classification problem as Dask arrays, fits :class:`daskglm.LogisticRegression`
with L-BFGS and prints the coefficients, the held-out accuracy, the number of
iterations and every round of communication the fit used.

Run it with::

    python examples/logistic_regression_on_a_cluster.py

To use a real cluster instead, replace ``Client(cluster)`` with
``Client("tcp://<scheduler-host>:8786")``.
"""

import time

import numpy as np
from distributed import Client, LocalCluster

import daskglm
from daskglm.datasets import make_classification

N_SAMPLES = 200_000
N_FEATURES = 10
N_PARTITIONS = 8
TRAIN_FRACTION = 0.8


def main():
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        print(f"cluster: {len(client.nthreads())} workers")

        # Features and labels are generated on the workers, chunk by chunk, and kept
        # there: nothing of size n_samples ever comes back to this process.
        X, y, true_coef = make_classification(
            N_SAMPLES, N_FEATURES, chunks=N_SAMPLES // N_PARTITIONS, random_state=0
        )
        X, y = X.persist(), y.persist()
        split = int(TRAIN_FRACTION * N_SAMPLES)
        X_train, y_train, X_test, y_test = X[:split], y[:split], X[split:], y[split:]

        model = daskglm.LogisticRegression(C=1.0, solver="lbfgs", tol=1e-6, max_iter=200)
        start = time.perf_counter()
        model.fit(X_train, y_train)
        seconds = time.perf_counter() - start

        np.set_printoptions(precision=3, suppress=True)
        print(f"fitted in {seconds:.2f} s with solver {model.solver_!r}")
        print(f"true coefficients:   {true_coef}")
        print(f"fitted coefficients: {model.coef_.ravel()}")
        print(f"intercept: {model.intercept_[0]:.3f}")
        print(f"held-out accuracy: {model.score(X_test, y_test):.4f}")
        print(f"n_iter_: {model.n_iter_[0]} (converged: {model.converged_})")
        last = model.history_[-1]
        print(f"final objective: {last['objective']:.6f}")
        print("communication ledger:")
        print(model.comm_)


if __name__ == "__main__":
    main()
