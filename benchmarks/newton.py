"""Newton's rounds: the fused Hessian kernel and the last step taken without a Hessian.

On one ``LocalCluster`` (two single-threaded worker processes), ``X`` persisted on the
workers before anything is timed, an L2-penalised binary logistic model (scikit-learn's
``C = 1`` on the summed loss, no intercept, ``tol=1e-4``) fitted, interleaved, by:

* Newton as it runs: the fused Hessian kernel, and the full step predicted to meet
  ``tol`` evaluated in a gradient round (:mod:`daskglm.solvers.newton`);
* Newton with that prediction off (every point evaluated with its Hessian);
* Newton with the prediction off and the Hessian kernel's numpy block path, which every
  family without a compiled loop takes (here a subclass of ``Binomial``: the compiled
  loops serve the exact classes only);
* L-BFGS, the peer in the same run.

Each fit runs once untimed (kernels compiled or loaded), then ``--repeats`` times in
turn; the table gives median seconds, the rounds by kind and the ratio to L-BFGS.

``python -m benchmarks newton [--rows 3000000] [--features 50] [--repeats 5]`` (about a
minute on two idle cores).  Seconds depend on the machine's load: read the ratios of one run.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections import Counter

from daskglm.model.families import Binomial

__all__ = ["main", "BlockPathBinomial"]


class BlockPathBinomial(Binomial):
    """The logistic model, its Hessian through the numpy block path of
    :func:`daskglm.compute.kernels.loss_grad_hess` (no compiled loop for a subclass)."""


def _fit(estimator, X, y, predicts):
    from daskglm.solvers import newton

    original = newton._predicts_tol
    if not predicts:
        newton._predicts_tol = lambda *args: False
    try:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator.fit(X, y)
        return time.perf_counter() - start
    finally:
        newton._predicts_tol = original


def main(args):
    from distributed import Client, LocalCluster

    import daskglm
    from daskglm import datasets

    n, d = args.rows, args.features
    alpha = 1.0 / n
    variants = {
        "newton (fused Hessian, last step predicted)": (Binomial(), "newton", True),
        "newton, every point with its Hessian": (Binomial(), "newton", False),
        "newton, block-path Hessian, every point with it": (BlockPathBinomial(), "newton",
                                                            False),
        "lbfgs": (Binomial(), "lbfgs", True),
    }
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        X, y, _ = datasets.make_classification(n, d, chunks=-(-n // 16), random_state=0,
                                               intercept=0.0)
        X, y = client.persist([X, y])
        client.wait_for_workers(2)
        times = {name: [] for name in variants}
        rounds = {}
        for repeat in range(args.repeats + 1):
            for name, (family, solver, predicts) in variants.items():
                model = daskglm.GLM(family=family, penalty="l2", alpha=alpha,
                                    fit_intercept=False, solver=solver, tol=1e-4)
                seconds = _fit(model, X, y, predicts)
                if repeat:  # the first run compiles or loads the kernels
                    times[name].append(seconds)
                rounds[name] = Counter(record.kind for record in model.comm_.records)
    lbfgs = statistics.median(times["lbfgs"])
    print(f"Newton's rounds, {n} x {d} dense, 16 partitions on 2 one-thread workers, "
          f"L2-logistic (C = 1), tol 1e-4; medians of {args.repeats} interleaved runs.\n")
    print("| fit | median s | rounds | / lbfgs |\n|---|---|---|---|")
    for name, runs in times.items():
        median = statistics.median(runs)
        kinds = ", ".join(f"{count} {kind}" for kind, count in rounds[name].items())
        print(f"| {name} | {median:.3f} | {kinds} | {median / lbfgs:.2f} |")
    return 0
