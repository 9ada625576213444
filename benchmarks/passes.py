"""Fewest passes: fits whose first evaluation shares the validation round, against the same
fits with the two rounds apart, and what ``solver="auto"`` picks.

On one ``LocalCluster`` (two single-threaded worker processes), ``X`` persisted on the
workers as a Dask array before anything is timed, the same data for every fit:

* ``LinearRegression`` (normal equations: ``validate_gram``, one round in all);
* L2-penalised ``LogisticRegression`` by L-BFGS (``validate_gradient``) and by Newton
  (``validate_hessian``);
* L-BFGS on labels the validation round finds (Dask ``y``): the first evaluation from
  the per-class column sums of that round, two classes and three;
* each fused (as fits run) and unfused (the validation round apart, as before), with their
  rounds, the seconds of the rounds and of the whole fit, and whether the coefficients
  are identical (else their largest difference: the class sums' round-off);
* ``solver="auto"``'s pick for the logistic model and the predicted rounds and seconds of
  every candidate (:func:`daskglm.accounting.choice.predict_methods`).

Each fit is run once untimed (its kernels compiled or loaded), then ``--repeats`` times
fused and unfused, alternating; the run of median time is shown.

``python -m benchmarks passes [--rows 1000000] [--features 50] [--repeats 3]`` (about
three minutes on two idle cores).  Seconds depend on the machine's load: read the ratios of one run.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

__all__ = ["main"]


def _fit(make, X, y, fused):
    from daskglm.estimators.base import _GLMBase

    estimator = make()
    original = _GLMBase._first_evaluation
    if not fused:
        _GLMBase._first_evaluation = lambda self, *args, **kwargs: None
    try:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator.fit(X, y)
        return estimator, time.perf_counter() - start
    finally:
        _GLMBase._first_evaluation = original


def _median_run(runs):
    """The ``(estimator, seconds)`` of the median time among ``runs``."""
    return sorted(runs, key=lambda run: run[1])[len(runs) // 2]


def main(args):
    import dask.array as da
    from distributed import Client, LocalCluster

    import daskglm
    from daskglm.accounting.choice import predict_methods
    from daskglm.model.families import Binomial
    from daskglm.model.penalties import L2
    from daskglm.model.problem import Problem
    from daskglm.solvers import SOLVERS

    n, d = args.rows, args.features
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    coef = rng.normal(size=d) / np.sqrt(d)
    y_linear = X @ coef + rng.normal(size=n)
    y_binary = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ coef)))).astype(float)
    scores = X[:, :3] + rng.gumbel(size=(n, 3))
    y_classes = np.argmax(scores, axis=1).astype(float)

    def lbfgs():
        return daskglm.LogisticRegression(solver="lbfgs")

    cases = [
        ("LinearRegression", lambda: daskglm.LinearRegression(), "linear"),
        ("LogisticRegression lbfgs", lbfgs, "binary"),
        ("LogisticRegression lbfgs, Dask labels", lbfgs, "binary-dask"),
        ("LogisticRegression newton", lambda: daskglm.LogisticRegression(solver="newton"),
         "binary"),
        ("LogisticRegression lbfgs, 3 classes", lbfgs, "classes"),
        ("LogisticRegression lbfgs, 3 classes, Dask labels", lbfgs, "classes-dask"),
    ]
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        daskglm.LinearRegression().fit(X[:1000], y_linear[:1000])  # workers import the package
        chunks = -(-n // 8)
        Xd, yd, binary_d, classes_d = client.persist([
            da.from_array(X, chunks=(chunks, -1)), da.from_array(y_linear, chunks=chunks),
            da.from_array(y_binary, chunks=chunks), da.from_array(y_classes, chunks=chunks)])
        # numpy labels: classes known up front; Dask labels: found by the validation round
        targets = {"linear": yd, "binary": y_binary, "binary-dask": binary_d,
                   "classes": y_classes, "classes-dask": classes_d}
        _fit(lambda: daskglm.LinearRegression(), Xd, yd, True)  # first fit on these chunks
        print(f"{n:,} x {d}, 2 workers; load average before: {os.getloadavg()[0]:.2f}")
        print("| fit | first round | rounds | rounds s | fit s | coefficients |")
        print("|---|---|---|---|---|---|")
        for label, make, target in cases:
            _fit(make, Xd, targets[target], True)  # compiles (or loads) the case's kernels
            runs = {True: [], False: []}
            for repeat in range(args.repeats):
                for fused_first in ((True, False) if repeat % 2 == 0 else (False, True)):
                    runs[fused_first].append(_fit(make, Xd, targets[target], fused_first))
            (fused, fused_s), (apart, apart_s) = (_median_run(runs[True]),
                                                  _median_run(runs[False]))
            difference = np.max(np.abs(fused.coef_ - apart.coef_))
            same = "identical" if difference == 0 else f"differ by {difference:.1e}"
            for name, model, seconds in (("fused", fused, fused_s), ("apart", apart, apart_s)):
                rounds_s = sum(r.seconds for r in model.comm_.records)
                print(f"| {label}, {name} | {model.comm_.records[0].kind} | "
                      f"{model.comm_.rounds} | {rounds_s:.2f} | {seconds:.2f} | "
                      f"{same} |", flush=True)
        auto, auto_s = _fit(lambda: daskglm.LogisticRegression(), Xd, y_binary, True)
        print(f"\nsolver='auto' for L2-logistic: {auto.solver_}, {auto.comm_.rounds} rounds, "
              f"{auto_s:.2f} s")
        problem = Problem(Binomial(), L2(1.0 / n), True, d)
        for cost in predict_methods(problem, n, tol=1e-4, workers=2):
            if SOLVERS[cost.method].unsupported(problem) is not None:
                continue  # the normal equations do not take a logistic loss
            print(f"  predicted {cost.method:9s} {cost.rounds:4d} rounds {cost.seconds:8.3f} s")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0
