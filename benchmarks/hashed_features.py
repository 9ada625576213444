"""A hashed-features problem: n = 1,000,000 rows, d = 2^20 columns, ~50 non-zeros per row.

Run with ``python -m benchmarks.hashed_features`` (``--n``, ``--log2-d``, ``--nnz`` to
resize).  On a LocalCluster of 2 single-threaded worker processes it generates sparse CSR
chunks (never a dense row block), fits an L2-logistic regression with L-BFGS and reports
the fit time, rounds, the bytes the ledger measured and the peak memory of the workers.
A dense copy of ``X`` would take ``n * d * 8`` bytes (8 TB at full size): the peak shows
that none was made.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np

__all__ = ["run", "main"]


def run(n=1_000_000, log2_d=20, nnz=50, partitions=8, workers=2):
    """Fit the hashed-features problem and return a dict of what was measured."""
    from distributed import Client, LocalCluster, wait
    from distributed.diagnostics import MemorySampler

    import daskglm
    from daskglm.datasets import make_classification

    d = 2**log2_d
    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        X, y, _ = make_classification(n, d, chunks=-(-n // partitions), density=nnz / d,
                                      random_state=0)
        X, y = client.persist([X, y])
        wait([X, y])
        stored = sum(client.run(lambda dask_worker: dask_worker.data.fast.total_weight).values()) \
            if hasattr(cluster, "workers") else None
        sampler = MemorySampler()
        model = daskglm.LogisticRegression(C=1.0, solver="lbfgs", tol=1e-5, max_iter=200,
                                           cache="memory")
        start = time.perf_counter()
        with sampler.sample("fit", measure="process", interval=0.1), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y)
        seconds = time.perf_counter() - start
        peak = float(sampler.to_pandas()["fit"].max())
        return {
            "n_samples": n, "n_features": d, "nonzeros_per_row": nnz, "partitions": partitions,
            "workers": workers, "seconds": seconds, "n_iter": int(np.max(model.n_iter_)),
            "converged": bool(model.converged_), "rounds": model.comm_.rounds,
            "bytes_measured": model.comm_.bytes_measured,
            "bytes_modelled": model.comm_.bytes_modelled,
            "data_bytes_on_workers": stored,
            "peak_worker_memory_bytes": peak,
            "dense_X_bytes": n * d * 8,
            "load_average": os.getloadavg()[0],
        }


def main(argv=None):
    """Command line: run and print the result as JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hashed_features")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--log2-d", type=int, default=20)
    parser.add_argument("--nnz", type=int, default=50)
    parser.add_argument("--partitions", type=int, default=8)
    args = parser.parse_args(argv)
    result = run(args.n, args.log2_d, args.nnz, args.partitions)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
