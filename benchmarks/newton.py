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

``--family tweedie`` (power 1.5, on Poisson counts) or ``--family gamma`` (log link, on
Poisson counts plus one) fit an L2-penalised model (``alpha = 1 / rows``) whose log link is
not the distribution's canonical one, but under which the loss is convex in ``eta``:

* Newton as it runs: the exact Hessian (:meth:`~daskglm.model.families.Family.hessian_d2loss`),
  quadratic convergence and the predicted last step;
* Newton with the expected (Fisher) curvature instead, as for any other link (Fisher
  scoring, statsmodels' IRLS; a family subclass);
* L-BFGS, and L-BFGS with the numpy block path instead of the compiled loop (a family
  subclass, as ``BlockPathBinomial``).

``python -m benchmarks newton [--rows 3000000] [--features 50] [--repeats 5]
[--family binomial|tweedie|gamma] [--tol 1e-4]`` (about a minute on two idle cores).
Seconds depend on the machine's load: read the ratios of one run.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections import Counter

from daskglm.model.families import Binomial, Gamma, Tweedie

__all__ = ["main", "BlockPathBinomial", "FisherScoring", "BlockPathTweedie", "BlockPathGamma"]


class BlockPathBinomial(Binomial):
    """The logistic model, its Hessian through the numpy block path of
    :func:`daskglm.compute.kernels.loss_grad_hess` (no compiled loop for a subclass)."""


class FisherScoring:
    """A family's model with Newton's Hessian weighted by the expected curvature
    (``d2loss``), as for a link under which the loss is not convex: Fisher scoring."""

    exact_hessian = False

    def hessian_d2loss(self, y, eta, weight=None):
        return self.d2loss(y, eta, weight)


class FisherTweedie(FisherScoring, Tweedie):
    pass


class FisherGamma(FisherScoring, Gamma):
    pass


class BlockPathTweedie(Tweedie):
    """The Tweedie model through the numpy block path (no compiled loop for a subclass)."""


class BlockPathGamma(Gamma):
    """The Gamma model through the numpy block path (no compiled loop for a subclass)."""


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
    family_name = getattr(args, "family", "binomial")
    tol = getattr(args, "tol", 1e-4)
    if family_name == "binomial":
        variants = {
            "newton (fused Hessian, last step predicted)": (Binomial(), "newton", True),
            "newton, every point with its Hessian": (Binomial(), "newton", False),
            "newton, block-path Hessian, every point with it": (BlockPathBinomial(),
                                                                "newton", False),
            "lbfgs": (Binomial(), "lbfgs", True),
        }
        title = "L2-logistic (C = 1)"
    else:
        exact, fisher, block = (
            (Tweedie(1.5), FisherTweedie(1.5), BlockPathTweedie(1.5))
            if family_name == "tweedie"
            else (Gamma("log"), FisherGamma("log"), BlockPathGamma("log")))
        variants = {
            "newton (exact Hessian)": (exact, "newton", True),
            "newton, Fisher scoring (block path)": (fisher, "newton", True),
            "lbfgs, block path": (block, "lbfgs", True),
            "lbfgs": (exact, "lbfgs", True),
        }
        title = f"L2 {exact!r} (alpha = 1 / rows)"
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        chunks = -(-n // 16)
        if family_name == "binomial":
            X, y, _ = datasets.make_classification(n, d, chunks=chunks, random_state=0,
                                                   intercept=0.0)
        else:
            X, y, _ = datasets.make_poisson(n, d, chunks=chunks, random_state=0)
            y = y + 1.0 if family_name == "gamma" else y
        X, y = client.persist([X, y])
        client.wait_for_workers(2)
        times = {name: [] for name in variants}
        rounds = {}
        for repeat in range(args.repeats + 1):
            for name, (family, solver, predicts) in variants.items():
                model = daskglm.GLM(family=family, penalty="l2", alpha=alpha,
                                    fit_intercept=False, solver=solver, tol=tol)
                seconds = _fit(model, X, y, predicts)
                if repeat:  # the first run compiles or loads the kernels
                    times[name].append(seconds)
                rounds[name] = Counter(record.kind for record in model.comm_.records)
    lbfgs = statistics.median(times["lbfgs"])
    print(f"Newton's rounds, {n} x {d} dense, 16 partitions on 2 one-thread workers, "
          f"{title}, tol {tol:g}; medians of {args.repeats} interleaved runs.\n")
    print("| fit | median s | rounds | / lbfgs |\n|---|---|---|---|")
    for name, runs in times.items():
        median = statistics.median(runs)
        kinds = ", ".join(f"{count} {kind}" for kind, count in rounds[name].items())
        print(f"| {name} | {median:.3f} | {kinds} | {median / lbfgs:.2f} |")
    return 0
