"""CuPy chunks against numpy chunks and a hand-written in-memory GPU loop: one command.

``python -m benchmarks gpu [--rows 10000000] [--features 100]`` on a machine with a GPU
and CuPy.  It prints, for L2-logistic regression on the same data:

* daskglm on a Dask array of CuPy chunks (the data never leave the GPU; each round returns
  a gradient of ``d + 1`` floats to the driver), per solver: seconds, rounds, gap to the
  optimum, and after the table each round's milliseconds;
* the in-memory GPU baseline: scipy's L-BFGS-B on one CuPy array, loss and gradient in
  two matrix-vector products (the least a GPU fit can cost);
* daskglm on a ``LocalCluster`` of one worker process with one thread on the GPU (as
  dask-cuda makes one worker per GPU), the partitions made on the worker, the same
  solvers: rounds go to the worker's partition holder, which stacks its partitions on the
  device (``--no-cluster`` leaves these rows out);
* daskglm lbfgs on float32 CuPy chunks (the same data, rounded), in this process;
* daskglm on numpy chunks on the machine's CPU cores (the in-process engine, one thread
  per partition, as many partitions as cores or ``--partitions``, whichever is more), the
  same solvers.

Every GPU fit is timed after one untimed run of the same fit (CUDA kernels compiled,
cuBLAS handles made); every CPU fit after one untimed fit of the first 100,000 rows (numba
compiled).  The gap of each fit is that of the objective at its coefficients, evaluated on
the GPU, to the lowest objective any fit reached.
"""

from __future__ import annotations

import os
import time
import warnings

__all__ = ["main"]


def _baseline(Xg, yg, alpha, tol):
    """scipy's L-BFGS-B on one CuPy array: seconds and the objective reached."""
    import cupy as cp
    import numpy as np
    import scipy.optimize

    n = Xg.shape[0]

    def value_and_grad(params):
        p = cp.asarray(params)
        eta = Xg @ p[:-1] + p[-1]
        loss = cp.logaddexp(0.0, eta) - yg * eta
        r = (1.0 / (1.0 + cp.exp(-eta)) - yg) / n
        grad = cp.concatenate([Xg.T @ r, r.sum()[None]])
        value = float(loss.mean()) + 0.5 * alpha * float(p[:-1] @ p[:-1])
        grad[:-1] += alpha * p[:-1]
        return value, cp.asnumpy(grad)

    start = time.perf_counter()
    result = scipy.optimize.minimize(value_and_grad, np.zeros(Xg.shape[1] + 1), jac=True,
                                     method="L-BFGS-B", options={"gtol": tol, "ftol": 0.0,
                                                                 "maxiter": 1000})
    return time.perf_counter() - start, float(result.fun), int(result.nfev)


def _objective(Xg, yg, alpha, model):
    """The L2-logistic objective (mean loss + ``alpha / 2 ||coef||^2``) at a fitted model."""
    import cupy as cp

    coef = cp.asarray(model.coef_.ravel())
    eta = Xg @ coef + float(model.intercept_[0])
    loss = cp.logaddexp(0.0, eta) - yg * eta
    return float(loss.mean()) + 0.5 * alpha * float(coef @ coef)


def _block(index, rows, d):
    """Rows of block ``index`` of the benchmark's data on the current GPU: ``(X, y)``,
    the same wherever they are made."""
    import cupy as cp
    import numpy as np

    coef = cp.random.default_rng(0).standard_normal(d) / np.sqrt(d)
    rng = cp.random.default_rng([1, index])
    X = rng.standard_normal((rows, d))
    y = (rng.uniform(size=rows) < 1.0 / (1.0 + cp.exp(-(X @ coef)))).astype(cp.float64)
    return X, y


def _worker_blocks(sizes, d):
    """Dask arrays of the benchmark's blocks made on the cluster's workers."""
    import cupy as cp
    import dask
    import dask.array as da

    blocks = [dask.delayed(_block, pure=True)(i, rows, d) for i, rows in enumerate(sizes)]
    X = da.concatenate([da.from_delayed(b[0], (rows, d), dtype="float64",
                                        meta=cp.empty((0, d))) for b, rows in zip(blocks, sizes)])
    y = da.concatenate([da.from_delayed(b[1], (rows,), dtype="float64", meta=cp.empty(0))
                        for b, rows in zip(blocks, sizes)])
    return dask.persist(X, y)


def _timed_fit(make, X, y):
    """Seconds of ``make().fit(X, y)`` after an untimed fit of the same."""
    model = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
        start = time.perf_counter()
        model.fit(X, y)
    return time.perf_counter() - start, model


def _cluster_rows(args, sizes, Xg, yg, alpha, C, tol):
    """The fits on a LocalCluster of one single-threaded worker process on the GPU."""
    from distributed import Client, LocalCluster

    import daskglm

    table, rounds = [], []
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        X, y = _worker_blocks(sizes, Xg.shape[1])
        client.wait_for_workers(1)
        for solver in args.solvers:
            seconds, model = _timed_fit(lambda solver=solver: daskglm.LogisticRegression(
                C=C, solver=solver, tol=tol, max_iter=1000), X, y)
            table.append((f"daskglm {solver}, CuPy chunks, 1-worker LocalCluster", seconds,
                          model.comm_.rounds, _objective(Xg, yg, alpha, model)))
            rounds.append(f"{solver} (cluster): " + ", ".join(
                f"{r.kind} {1e3 * r.seconds:.1f}{'' if r.route != 'direct' else 'd'}"
                for r in model.comm_.records))
    return table, rounds


def main(args):
    import cupy as cp
    import dask.array as da
    import numpy as np

    import daskglm

    n, d, chunks = args.rows, args.features, args.partitions
    rows = -(-n // chunks)
    sizes = [min(rows, n - start) for start in range(0, n, rows)]
    blocks = [_block(i, size, d) for i, size in enumerate(sizes)]
    Xg = cp.concatenate([X for X, _ in blocks])
    yg = cp.concatenate([y for _, y in blocks])
    del blocks
    cp.cuda.Device().synchronize()
    C, tol = 1.0, args.tol
    alpha = 1.0 / (C * n)
    X_dev = da.from_array(Xg, chunks=(rows, d), asarray=False).persist()
    y_dev = da.from_array(yg, chunks=rows, asarray=False).persist()

    _baseline(Xg, yg, alpha, tol)  # warm-up, as for the fits below
    seconds, best, evaluations = _baseline(Xg, yg, alpha, tol)
    table = [("in-memory GPU baseline (scipy L-BFGS-B on one CuPy array)", seconds, evaluations,
              best)]
    fits, rounds = {}, []
    for solver in args.solvers:
        model = daskglm.LogisticRegression(C=C, solver=solver, tol=tol, max_iter=1000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X_dev, y_dev)  # warm-up: CUDA kernels compiled, cuBLAS handles made
            start = time.perf_counter()
            model.fit(X_dev, y_dev)
        fits[solver] = time.perf_counter() - start
        table.append((f"daskglm {solver}, CuPy chunks", fits[solver], model.comm_.rounds,
                      _objective(Xg, yg, alpha, model)))
        rounds.append(f"{solver}: " + ", ".join(f"{r.kind} {1e3 * r.seconds:.1f}"
                                                 for r in model.comm_.records))
    X32 = da.from_array(Xg.astype(cp.float32), chunks=(rows, d), asarray=False).persist()
    seconds, model = _timed_fit(lambda: daskglm.LogisticRegression(
        C=C, solver="lbfgs", tol=tol, max_iter=1000), X32, y_dev)
    table.append(("daskglm lbfgs, CuPy float32 chunks", seconds, model.comm_.rounds,
                  _objective(Xg, yg, alpha, model)))
    del X32
    if args.cluster:
        cluster_table, cluster_rounds = _cluster_rows(args, sizes, Xg, yg, alpha, C, tol)
        table.extend(cluster_table)
        rounds.extend(cluster_rounds)
    X_cpu, y_cpu = cp.asnumpy(Xg), cp.asnumpy(yg)
    cpu_rows = -(-n // max(chunks, os.cpu_count() or 1))
    X_host = da.from_array(X_cpu, chunks=(cpu_rows, d)).persist()
    y_host = da.from_array(y_cpu, chunks=cpu_rows).persist()
    for solver in args.solvers:
        model = daskglm.LogisticRegression(C=C, solver=solver, tol=tol, max_iter=1000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X_host[:100_000], y_host[:100_000])  # warm-up: numba compiled
            start = time.perf_counter()
            model.fit(X_host, y_host)
        seconds = time.perf_counter() - start
        table.append((f"daskglm {solver}, numpy chunks, {X_host.numblocks[0]} CPU threads",
                      seconds, model.comm_.rounds, _objective(Xg, yg, alpha, model)))
    optimum = min(row[3] for row in table if np.isfinite(row[3]))
    print(f"L2-logistic (C={C}), {n} x {d} float64 ({8 * n * d / 1e9:.1f} GB) in {chunks} "
          f"partitions, tol {tol:g}; {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print("| fit | seconds | rounds (evaluations) | objective gap |")
    print("|---|---|---|---|")
    for name, seconds, count, value in table:
        print(f"| {name} | {seconds:.3f} | {count} | {value - optimum:.1e} |")
    print("\nThe CuPy fits' rounds, milliseconds each:")
    for line in rounds:
        print(f"  {line}")
    return 0
