"""The deadline guard: deadline fits against waiting fits, with and without a straggler.

A ``distributed.LocalCluster`` of 2 single-threaded worker processes, dense L2-logistic
data (``--rows`` x ``--features``, 4 partitions, persisted).  With one worker slowed by
``--delay`` seconds a task (``daskglm.testing.slow_worker``) and then with none, each of
``sgd`` at its defaults (local SGD), ``sgd`` synchronous (``sync_every=None``), ``sgd``
with ``deadline``, ``gd``, and ``gd`` with ``deadline`` fits ``LogisticRegression``;
printed: seconds, what the guard chose (``comm_.choices["deadline"]``) and its figures.
Where no worker is late the guard should wait after its 6 measured rounds; with a
straggler it should keep the deadline.

``python -m benchmarks deadline-guard`` (about 1 minute on 2 cores).
"""

from __future__ import annotations

import time
import warnings

import numpy as np


def main(args):
    import dask.array as da
    from distributed import Client, LocalCluster

    import daskglm
    from daskglm.testing import slow_worker

    rng = np.random.default_rng(0)
    n, d = int(args.rows), int(args.features)
    X = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ rng.normal(size=d) / 10))).astype(float)
    fits = [("sgd", {"batch_size": 2000}), ("sgd", {"batch_size": 2000, "sync_every": None}),
            ("sgd", {"batch_size": 2000, "deadline": args.deadline}), ("gd", {}),
            ("gd", {"deadline": args.deadline})]
    print("| straggler | solver | options | seconds | guard |")
    print("|---|---|---|---|---|")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster, \
            Client(cluster) as client:
        Xd = da.from_array(X, chunks=n // 4).persist()
        yd = da.from_array(y, chunks=n // 4).persist()
        slow = sorted(client.nthreads())[1]
        for delay in (args.delay, 0.0):
            for solver, options in fits:
                stochastic = solver == "sgd"
                model = daskglm.LogisticRegression(
                    solver=solver, max_iter=args.epochs if stochastic else 30,
                    tol=None if stochastic else 1e-4, solver_options=options)
                with slow_worker(client, slow, delay), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    started = time.perf_counter()
                    model.fit(Xd, yd)
                    seconds = time.perf_counter() - started
                guard = model.comm_.choices.get("deadline")
                said = "-" if guard is None else f"{guard[0]}: {guard[1]}"
                print(f"| {delay:g} s | {solver} | {options} | {seconds:.1f} | {said} |",
                      flush=True)
    return 0


def add_parser(commands):
    """The ``deadline-guard`` sub-command."""
    parser = commands.add_parser("deadline-guard",
                                 help="deadline fits against waiting ones, with a straggler")
    parser.add_argument("--rows", type=float, default=20_000)
    parser.add_argument("--features", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.5, help="seconds a slow task waits")
    parser.add_argument("--deadline", type=float, default=0.2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.set_defaults(handler=main)
