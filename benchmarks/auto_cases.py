"""``solver="auto"`` against the package's own L-BFGS and Newton on the cases that used to
beat it: correlated columns (L-BFGS's slow progress, where auto's L-BFGS hands over to
Newton's method mid-fit) and features on their natural scales (a 5-class model with an
age, a log density, an exposure in the thousands and a 10-level categorical, where auto
chooses again after the validation round).  In this process, numpy input; each fit
``--repeats`` times, the median seconds, and the rounds, iterations, ``converged_`` and
what auto chose (``comm_.choices``).

``python -m benchmarks auto-cases`` (about a minute on 2 cores).
"""

from __future__ import annotations

import time
import warnings

import numpy as np


def correlated(n, d=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    for j in range(1, 8):  # columns ever closer to the first
        X[:, j] = X[:, 0] + 10 ** (-j / 2) * rng.normal(size=n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ rng.normal(size=d))))).astype(float)
    return X, y


def raw_scales(n, seed=0):

    rng = np.random.default_rng(seed)
    region = rng.integers(0, 10, n)
    X = np.column_stack([rng.uniform(18, 90, n), rng.normal(8, 2, n), rng.gamma(2.0, 500.0, n),
                         np.eye(10)[region][:, 1:]])
    scales = np.r_[0.03, 0.2, 0.001, np.full(9, 0.5)]
    eta = X @ (rng.normal(size=(X.shape[1], 5)) * scales[:, None])
    p = np.exp(eta - eta.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.uniform(size=(n, 1))).argmax(axis=1)
    return X, y


def main(args):
    import daskglm

    n = int(args.rows)
    cases = {"correlated (binary)": correlated(n), "raw scales (5 classes)": raw_scales(n)}
    print("| case | solver | median s | iterations | gradient / Hessian rounds | converged_ "
          "| auto's choices |")
    print("|---|---|---|---|---|---|---|")
    for case, (X, y) in cases.items():
        daskglm.LogisticRegression(max_iter=2).fit(X[:1000], y[:1000])  # compile the loops
        for solver in ("lbfgs", "newton", "auto"):
            seconds = []
            for _ in range(args.repeats):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    started = time.perf_counter()
                    model = daskglm.LogisticRegression(solver=solver).fit(X, y)
                    seconds.append(time.perf_counter() - started)
            report = model.comm_
            choices = "; ".join(f"{key}: {value[0]}" for key, value in report.choices.items()
                                if key in ("solver", "switch")) or "-"
            print(f"| {case} | {solver} ({model.solver_}) | {np.median(seconds):.2f} | "
                  f"{int(np.max(model.n_iter_))} | {report.count('gradient')} / "
                  f"{report.count('hessian')} | {model.converged_} | {choices} |", flush=True)
    return 0


def add_parser(commands):
    """The ``auto-cases`` sub-command."""
    parser = commands.add_parser("auto-cases", help="auto against lbfgs and newton")
    parser.add_argument("--rows", type=float, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.set_defaults(handler=main)
