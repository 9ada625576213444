"""L-BFGS on column shards: the cost model's seconds against the rounds measured.

A ``distributed.LocalCluster`` of 2 single-threaded worker processes, hashed rows
(``--rows`` x ``2 ** --log2-features``, ``--nnz`` ones a row at random columns, logistic
labels), 4 partitions of pydata ``sparse`` COO chunks persisted on the workers;
``LogisticRegression()`` (``"auto"`` picks L-BFGS on column shards from 2^18 columns)
fitted twice, the second fit reported: its seconds, iterations, the seconds its rounds
took by kind, and :func:`daskglm.accounting.choice.sharded_lbfgs_seconds` on the network
figures it was priced on, at the iterations ``"auto"`` priced and at those the fit took,
against the fit's seconds and its rounds'.

``python -m benchmarks sharded-cost [--rows 1e5] [--log2-features 20] [--nnz 20]``
(about a minute on 2 cores).
"""

from __future__ import annotations

import time
import warnings
from collections import defaultdict

import numpy as np

__all__ = ["add_parser", "main"]


def main(args):
    import dask.array as da
    import sparse
    from distributed import Client, LocalCluster

    import daskglm
    from benchmarks.sparse_sgd import hashed_rows
    from daskglm.accounting.choice import sharded_lbfgs_seconds
    from daskglm.accounting.links import Link

    n, d = int(args.rows), 2 ** int(args.log2_features)
    X, y = hashed_rows(n, d, args.nnz)
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster):
        Xd = da.from_array(sparse.COO.from_scipy_sparse(X), chunks=(n // 4, d),
                           asarray=False).persist()
        yd = da.from_array(y, chunks=n // 4).persist()
        for _ in range(2):  # the first fit also loads the data and compiles the loops
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                started = time.perf_counter()
                model = daskglm.LogisticRegression().fit(Xd, yd)
                seconds = time.perf_counter() - started
    choice = model.solver_choice_
    link = Link(**choice["link"])
    iterations = int(np.max(model.n_iter_))
    kinds = defaultdict(lambda: [0, 0.0])
    for record in model.comm_.records:
        kinds[record.kind][0] += 1
        kinds[record.kind][1] += record.seconds
    measured = sum(seconds for _, seconds in kinds.values())
    stored = next(r.bytes_read for r in model.comm_.records) or None
    print(f"{n:,} x 2^{args.log2_features}, {args.nnz} non-zeros a row: solver_ "
          f"{model.solver_!r} {model.solver_options_}, {iterations} iterations, "
          f"fit {seconds:.2f} s, its rounds {measured:.2f} s")
    print(f"network priced on: {link.latency * 1e3:.3g} ms, {link.bandwidth / 1e6:.3g} MB/s, "
          f"{link.nodes} processes")
    print(f"predicted by auto: {choice['predicted_seconds']['lbfgs']:.3f} s "
          f"({choice['predicted_rounds']['lbfgs']} rounds)")
    at_fit = sharded_lbfgs_seconds(n, model.coef_.size + 1, 2, iterations, link=link,
                                   data_bytes=stored)
    print(f"predicted at the fit's iterations: {at_fit:.3f} s ({at_fit / seconds:.2f} of the "
          f"fit's seconds, {at_fit / measured:.2f} of its rounds')")
    print("\n| round kind | rounds | seconds |\n|---|---|---|")
    for kind, (count, total) in kinds.items():
        print(f"| {kind} | {count} | {total:.3f} |")
    return 0


def add_parser(commands):
    """The ``sharded-cost`` sub-command."""
    parser = commands.add_parser("sharded-cost",
                                 help="the cost model of L-BFGS on column shards, checked")
    parser.add_argument("--rows", type=float, default=100_000)
    parser.add_argument("--log2-features", type=int, default=20)
    parser.add_argument("--nnz", type=int, default=20)
    parser.set_defaults(handler=main)
