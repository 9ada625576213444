"""Every method on an emulated network: the method-by-network table.

Each network (:class:`daskglm.network.Network`: ``10g`` = 10 Gbit/s with 0.05 ms,
``1g`` = 1 Gbit/s with 0.5 ms, ``100m`` = 100 Mbit/s with 5 ms) gets a
``LocalCluster`` of ``--workers`` single-threaded worker processes talking over
``shaped://``; on it, each problem (L2 logistic regression, ``C = 1``):

* ``tall``: dense ``2e6 x 100``;
* ``wide``: dense ``1e5 x 10,000`` float32;
* ``hashed``: sparse ``2e6 x 2^20`` with about 30 non-zeros a row;

(``--scale`` multiplies the rows) is generated on the workers and persisted, its
reference optimum found once (L-BFGS at ``tol=1e-8`` on the first network), and every
method of ``--methods`` fits it at its defaults or its documented best settings.
Measured per fit: wall seconds, the seconds to the target (the first iteration whose
objective is within ``--target`` relative of the optimum, from ``history_``; the whole
fit's for a method whose history has no objective and whose result is within it), rounds,
the bytes Dask measured, the final relative gap and ``converged_``; for the methods
``solver="auto"`` weighs, the cost model's prediction on the measured network
(:func:`daskglm.engine.link_probe.link_for`).

``python -m benchmarks network [--scale 0.1] [--workers 8] [--networks 10g,1g,100m]
[--problems tall,wide,hashed] [--methods ...] [--output PATH]`` prints one markdown row
per fit as it ends (and writes the rows as JSON with ``--output``).
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np

__all__ = ["main", "add_parser", "METHODS", "NETWORKS", "PROBLEMS"]

NETWORKS = {"10g": ("10 Gbit/s", "0.05 ms"), "1g": ("1 Gbit/s", "0.5 ms"),
            "100m": ("100 Mbit/s", "5 ms")}

#: name: (rows, features, density or None, dtype)
PROBLEMS = {"tall": (2_000_000, 100, None, "float64"),
            "wide": (100_000, 10_000, None, "float32"),
            "hashed": (2_000_000, 2**20, 30 / 2**20, "float64")}

#: name: (estimator solver, solver_options)
METHODS = {
    "auto": ("auto", None),
    "lbfgs": ("lbfgs", None),
    "lbfgs-sharded": ("lbfgs", {"sharded": True}),
    "newton": ("newton", None),
    "gd": ("gd", None),
    "gd-qsgd4": ("gd", {"compression": "qsgd", "bits": 4}),
    "gd-sign": ("gd", {"compression": "sign"}),
    "gd-topk": ("gd", {"compression": "topk"}),
    "proximal": ("proximal", None),
    "admm": ("admm", None),
    "averaging": ("averaging", {"correction": "newton"}),
    "sgd": ("sgd", None),
    "sgd-step-sync": ("sgd", {"sync_every": 1}),
    "async": ("async", None),
    "gossip": ("gossip", None),
}

#: ``sgd-step-sync`` (a round per step) is left out by default: at 5e5 rows it ran more
#: than five minutes on the 10 Gbit/s network without reaching the target.
DEFAULT_METHODS = ("auto", "lbfgs", "lbfgs-sharded", "newton", "gd", "gd-qsgd4", "gd-sign",
                   "gd-topk", "admm", "sgd")


def _log(message):
    print(message, file=sys.stderr, flush=True)


def make_problem(name, scale, workers):
    """The problem's ``(X, y)`` as Dask arrays, two partitions per worker."""
    import daskglm

    rows, features, density, dtype = PROBLEMS[name]
    rows = max(1000, int(rows * scale))
    chunks = -(-rows // (2 * workers))
    X, y, _ = daskglm.datasets.make_classification(rows, features, chunks=chunks,
                                                   density=density, random_state=0)
    if dtype == "float32":
        X = X.astype(np.float32)
    return X, y


def objective(X, y, coef, intercept, C=1.0):
    """The L2 logistic objective on the mean-loss scale: mean log loss plus
    ``|coef|^2 / (2 C n)`` (scikit-learn's objective divided by ``C n``)."""
    import dask.array as da

    coef = np.ravel(coef).astype(np.float64)
    eta = X.map_blocks(lambda block: np.asarray(block @ coef).ravel() + intercept,
                       drop_axis=1, dtype=np.float64)
    losses = da.logaddexp(0.0, eta) - y * eta
    n = X.shape[0]
    return float(losses.mean().compute()) + float(coef @ coef) / (2.0 * C * n)


def fit(X, y, method, tol=1e-4):
    """One fit: the fitted model, its wall seconds and its warnings."""
    import daskglm

    solver, options = METHODS[method]
    model = daskglm.LogisticRegression(C=1.0, solver=solver, solver_options=options, tol=tol)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    return model, seconds, [str(w.message)[:120] for w in caught
                            if "did not converge" in str(w.message)]


def seconds_to_target(model, optimum, target):
    """Seconds of the first iteration whose objective is within ``target`` (relative) of
    ``optimum``, from ``history_`` (None when none is)."""
    for entry in getattr(model, "history_", None) or []:
        value = entry.get("objective")
        if value is not None and np.isfinite(value) and value <= optimum * (1 + target):
            return entry.get("seconds")
    return None


def predicted_seconds(model):
    """The cost model's predicted seconds of each candidate of ``solver="auto"``."""
    choice = getattr(model, "solver_choice_", None)
    return None if choice is None else choice["predicted_seconds"]


def candidate(method, model, features):
    """The candidate of ``solver="auto"`` that ``method`` ran as, or None: ``auto``'s
    pick, and L-BFGS on column shards from ``SHARDED_FEATURES`` on (with the whole
    vector below)."""
    from daskglm.accounting.choice import SHARDED_FEATURES

    sharded = features >= SHARDED_FEATURES
    if method == "auto":
        return model.solver_
    if method in ("lbfgs", "lbfgs-sharded"):
        return "lbfgs" if (method == "lbfgs-sharded") == sharded else None
    return method if method in ("newton", "proximal", "normal") else None


def run(args):
    from distributed import Client, wait

    from daskglm.engine.link_probe import link_for
    from daskglm.network import Network

    rows, optima, predictions = [], {}, {}
    for net_name in args.networks.split(","):
        network = Network(*NETWORKS[net_name])
        with network.local_cluster(n_workers=args.workers) as cluster, Client(cluster) as client:
            link = link_for(client)
            _log(f"{network}: measured {link}")
            for problem in args.problems.split(","):
                X, y = make_problem(problem, args.scale, args.workers)
                X, y = client.persist([X, y])
                wait([X, y])
                if problem not in optima:
                    reference, _, _ = fit(X, y, "lbfgs", tol=1e-8)
                    optima[problem] = objective(X, y, reference.coef_, reference.intercept_[0])
                optimum = optima[problem]
                for method in args.methods.split(","):
                    model, seconds, warned = fit(X, y, method)
                    value = objective(X, y, model.coef_, model.intercept_[0])
                    if method == "auto":
                        predictions[(net_name, problem)] = predicted_seconds(model)
                    comm = model.comm_
                    gap = value / optimum - 1.0
                    to_target = seconds_to_target(model, optimum, args.target)
                    if to_target is None and gap <= args.target:
                        to_target = seconds  # no objective in its history: the whole fit
                    row = {"network": net_name, "problem": problem, "method": method,
                           "solver": model.solver_, "seconds": seconds,
                           "seconds_to_target": to_target,
                           "rounds": comm.rounds, "bytes_measured": comm.bytes_measured,
                           "gap": gap, "converged": bool(model.converged_),
                           "warnings": warned, "link": link.as_dict(),
                           "predicted": predictions.get((net_name, problem), {}).get(
                               candidate(method, model, X.shape[1]))}
                    rows.append(row)
                    print(_markdown_row(row), flush=True)
                del X, y
    return rows


def _markdown_row(row):
    mb = row["bytes_measured"]
    target = row["seconds_to_target"]
    predicted = row["predicted"]
    return (f"| {row['network']} | {row['problem']} | {row['method']} ({row['solver']}) | "
            f"{row['seconds']:.2f} | {'-' if target is None else f'{target:.2f}'} | "
            f"{'-' if predicted is None else f'{predicted:.2f}'} | {row['rounds']} | "
            f"{'-' if mb is None else f'{mb / 1e6:.1f}'} | {row['gap']:.2e} | "
            f"{row['converged']} |")


HEADER = ("| network | problem | method (solver) | seconds | to target | predicted | rounds | "
          "MB measured | gap | converged |\n|---|---|---|---|---|---|---|---|---|---|")


def main(args):
    print(HEADER, flush=True)
    rows = run(args)
    if args.output:
        with open(args.output, "w") as handle:
            json.dump(rows, handle, indent=1)
    return 0


def add_parser(commands):
    """The ``network`` sub-command."""
    parser = commands.add_parser("network", help="every method on an emulated network")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the rows")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--networks", default="10g,1g,100m")
    parser.add_argument("--problems", default="tall,wide,hashed")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS))
    parser.add_argument("--target", type=float, default=1e-3,
                        help="relative objective gap of the target")
    parser.add_argument("--output", default=None)
    parser.set_defaults(handler=main)
    return parser


def rounds_main(args):
    """Gradient rounds on 2, 4, 8, 16 worker processes of one emulated network against the
    cost model: each fit is L-BFGS on few rows and many features, so that a round's
    messages, not its compute, take its time."""
    import statistics

    from distributed import Client, wait

    import daskglm
    from daskglm.accounting.choice import gradient_round_seconds
    from daskglm.engine.link_probe import link_for
    from daskglm.network import Network

    network = Network(*NETWORKS[args.network])
    print("| processes | link measured | gradient rounds | measured s (median) | "
          "predicted s | predicted / measured | MB measured per round |\n|---|---|---|---|---|---|---|")
    for processes in (int(p) for p in args.processes.split(",")):
        with network.local_cluster(n_workers=processes) as cluster, Client(cluster) as client:
            link = link_for(client)
            X, y, _ = daskglm.datasets.make_classification(
                args.rows, args.features, chunks=-(-args.rows // processes),
                density=5 / args.features, random_state=0)
            X, y = client.persist([X, y])
            wait([X, y])
            stored = X.map_blocks(
                lambda b: np.full((1, 1), b.data.nbytes + b.indices.nbytes + b.indptr.nbytes),
                chunks=(1, 1), dtype=np.int64).sum().compute() + y.nbytes
            model = daskglm.LogisticRegression(solver="lbfgs", max_iter=args.iterations,
                                               solver_options={"sharded": False})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X, y)
            rounds = [r for r in model.comm_.records if r.kind == "gradient"]
            measured = statistics.median(r.seconds for r in rounds)
            p = args.features + 1
            predicted = gradient_round_seconds(args.rows, p, processes, link,
                                               data_bytes=int(stored))
            per_round = statistics.median((r.bytes_measured or 0) for r in rounds) / 1e6
            print(f"| {processes} | {link.latency * 1e3:.2f} ms, {link.bandwidth / 1e6:.0f} MB/s | "
                  f"{len(rounds)} | {measured:.3f} | {predicted:.3f} | "
                  f"{predicted / measured:.2f} | {per_round:.1f} |", flush=True)
    return 0


def add_rounds_parser(commands):
    """The ``network-rounds`` sub-command."""
    parser = commands.add_parser("network-rounds",
                                 help="a round's seconds on 2-16 processes against the model")
    parser.add_argument("--network", default="1g", choices=sorted(NETWORKS))
    parser.add_argument("--processes", default="2,4,8,16")
    parser.add_argument("--rows", type=int, default=16_000)
    parser.add_argument("--features", type=int, default=2**18)
    parser.add_argument("--iterations", type=int, default=8)
    parser.set_defaults(handler=rounds_main)
    return parser
