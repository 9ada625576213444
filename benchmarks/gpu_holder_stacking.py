"""CuPy partitions on a one-worker LocalCluster, with the partition holder's stacking and
without it: ``python -m benchmarks.gpu_holder_stacking [rows] [features]`` from the
repository's root, with the root on ``PYTHONPATH`` (the worker makes the blocks of
:mod:`benchmarks.gpu`).

Fits L2-logistic with lbfgs and newton three times: stacked, apart (the worker's
``DeviceRows.of`` patched to give None before the fit makes its holders), and stacked
again, each timed after an untimed run of itself; prints each fit's rounds (``d``: direct).
"""
import sys
import time
import warnings

import daskglm
from benchmarks.gpu import _worker_blocks


def no_stacking():
    """On a worker: partition holders made from now on do not stack."""
    from daskglm.engine.device_rows import DeviceRows

    DeviceRows._of = DeviceRows.of
    DeviceRows.of = classmethod(lambda cls, parts: None)


def stacking():
    """On a worker: partition holders made from now on stack again."""
    from daskglm.engine.device_rows import DeviceRows

    if hasattr(DeviceRows, "_of"):
        DeviceRows.of = DeviceRows._of


if __name__ == "__main__":
    from distributed import Client, LocalCluster

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    d = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    k = 8
    rows = -(-n // k)
    sizes = [min(rows, n - s) for s in range(0, n, rows)]
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        X, y = _worker_blocks(sizes, d)
        for label, patch in [("stacked", stacking), ("apart", no_stacking),
                             ("stacked again", stacking)]:
            client.run(patch)
            for solver in ["lbfgs", "newton"]:
                m = daskglm.LogisticRegression(C=1.0, solver=solver, tol=1e-8, max_iter=1000)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m.fit(X, y)
                    start = time.perf_counter()
                    m.fit(X, y)
                    seconds = time.perf_counter() - start
                spent = ", ".join(f"{r.kind} {r.seconds * 1e3:.1f}"
                                  + ("d" if r.route == "direct" else "")
                                  for r in m.comm_.records)
                print(f"{label:<13} {solver:<7} fit {seconds * 1e3:7.1f} ms, "
                      f"rounds {m.comm_.rounds}: {spent}", flush=True)
