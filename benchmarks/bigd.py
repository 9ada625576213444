"""Big d: L-BFGS with the whole vector in every round against L-BFGS on column shards.

``python -m benchmarks bigd --d 16,20`` (the default, about a minute on 2 cores) fits an
L2-logistic regression on hashed features (``nnz`` non-zeros per row, CSR chunks made on
the workers by :func:`daskglm.datasets.make_classification`, placed in equal contiguous
runs, one per worker) on a LocalCluster of ``workers`` single-threaded processes, for
each ``d = 2^k``:

* **before**: ``solver="lbfgs"`` (scipy's L-BFGS-B on the driver; every round sends the
  coefficient vector to every task and returns a gradient of length ``d``), ``--before-iter``
  iterations;
* **after**: ``solver_options={"sharded": True}`` (the vectors on column shards, each
  worker pulling and pushing once per round only the columns its partitions' rows
  touch), ``--after-iter`` iterations.

For each it reports seconds and modelled bytes per evaluation after the first (one
gradient round before; one ``sparse_gradient`` round with its pulls, pushes and
``finish`` command after; the first on its own), per iteration, and the kernel time: one
partition's ``loss_grad`` timed on the driver, times the partitions per worker.  The
targets of the issue: bytes per evaluation at most twice the touched columns (the union
of each worker's partitions', summed over the workers) at 16 bytes, time per evaluation
at most three times the kernel time, and at least 10 times faster than before at
``d = 2^20``.  The full size is
``python -m benchmarks bigd --n 1000000 --d 20,24`` (run it under ``nice``; about 15
minutes on 2 cores).
"""

from __future__ import annotations

import json
import time
import warnings

import numpy as np

__all__ = ["run", "main"]


def _kernel_seconds(X, y, repeats=10):
    """Best time of ``loss_grad`` on the first chunk of ``(X, y)``, on the driver."""
    from daskglm.compute.kernels import as_csr_or_dense, loss_grad
    from daskglm.model.families import Binomial

    part = (as_csr_or_dense(X.blocks[0].compute()), y.blocks[0].compute(), None)
    params = np.zeros(X.shape[1] + 1)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        loss_grad(part, params, Binomial(), True)
        best = min(best, time.perf_counter() - start)
    return best


def _place_evenly(client, X, y):
    """``X`` and ``y`` computed with row chunk ``i`` of both on worker ``i W // P``:
    contiguous runs of equal length, as the engine places in-memory input.  Left to the
    scheduler, the chunks of 8 fall 6 and 2 now and then, and the round then waits for
    the worker with 6 while the kernel time assumes 4."""
    import dask
    import dask.array as da
    from distributed import wait

    workers = sorted(client.nthreads())
    pieces = {}
    for name, array in (("X", X), ("y", y)):
        blocks = array.to_delayed().ravel()
        pieces[name] = [client.compute(block, workers=[workers[i * len(workers) // len(blocks)]],
                                       allow_other_workers=False)
                        for i, block in enumerate(blocks)]
    wait(pieces["X"] + pieces["y"])
    X = da.concatenate([da.from_delayed(dask.delayed(f), shape=(rows, X.shape[1]), dtype=X.dtype,
                                        meta=X._meta) for f, rows in zip(pieces["X"], X.chunks[0])])
    y = da.concatenate([da.from_delayed(dask.delayed(f), shape=(rows,), dtype=y.dtype,
                                        meta=y._meta) for f, rows in zip(pieces["y"], y.chunks[0])])
    X, y = client.persist([X, y])
    wait([X, y])
    return X, y


def _per_evaluation(comm, sharded):
    """Seconds and modelled bytes per evaluation of the objective after the first, the
    first's seconds, touched columns per evaluation and the number of evaluations.

    The first evaluation is reported on its own (it warms the workers up); the touched
    columns are those the workers pulled (each worker's union), per evaluation.
    """
    from daskglm.accounting.kinds import Kind

    records = comm.records
    if not sharded:
        rounds = [r for r in records if r.kind == Kind.GRADIENT]
        return (float(np.mean([r.seconds for r in rounds[1:]])),
                float(np.mean([r.bytes_modelled for r in rounds[1:]])), rounds[0].seconds,
                None, len(rounds))
    evaluations = [i for i, r in enumerate(records) if r.kind == Kind.SPARSE_GRADIENT]
    seconds, moved = [], []
    for i in evaluations:
        # the round, its pull/push records and the "finish" command after them
        group = [records[i]]
        for r in records[i + 1:]:
            group.append(r)
            if r.kind == Kind.SHARD_OP:
                break
        seconds.append(sum(r.seconds for r in group))
        moved.append(sum(r.bytes_modelled for r in group))
    pulled = sum(r.bytes_returned for r in records if r.kind == Kind.SHARD_PULL) / 8
    return (float(np.mean(seconds[1:])), float(np.mean(moved[1:])), seconds[0],
            pulled / len(evaluations), len(evaluations))


def _fit(X, y, sharded, max_iter):
    import daskglm

    options = {"sharded": True} if sharded else {"sharded": False}
    model = daskglm.LogisticRegression(C=1.0, solver="lbfgs", tol=1e-6, max_iter=max_iter,
                                       solver_options=options, cache="memory")
    from distributed.diagnostics import MemorySampler

    sampler = MemorySampler()
    with warnings.catch_warnings(), sampler.sample("fit", measure="process", interval=0.5):
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    per_eval, per_eval_bytes, first, touched, evaluations = _per_evaluation(model.comm_,
                                                                            sharded)
    solve = sum(r.seconds for r in model.comm_.records if r.kind != "validate")
    return {"fit_seconds": seconds, "n_iter": int(np.max(model.n_iter_)), "evaluations": evaluations,
            "seconds_per_evaluation": per_eval, "bytes_per_evaluation": per_eval_bytes,
            "seconds_first_evaluation": first,
            "seconds_per_iteration": solve / max(1, int(np.max(model.n_iter_))),
            "touched_columns_per_evaluation": touched, "rounds": model.comm_.rounds,
            "peak_workers_memory_bytes": float(sampler.to_pandas()["fit"].max())}


def run(n=200_000, log2_ds=(16, 20), nnz=50, partitions=8, workers=2, before_iter=3,
        after_iter=10, log=print):
    """Measure before and after for each ``d = 2^k``; return a list of dicts."""
    from distributed import Client, LocalCluster

    from daskglm.datasets import make_classification

    results = []
    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        for log2_d in log2_ds:
            d = 2**log2_d
            X, y, _ = make_classification(n, d, chunks=-(-n // partitions), density=nnz / d,
                                          random_state=0)
            X, y = _place_evenly(client, X, y)
            kernel = _kernel_seconds(X, y) * partitions / workers
            row = {"n": n, "d": d, "nnz_per_row": nnz, "partitions": partitions,
                   "workers": workers, "kernel_seconds_per_round": kernel}
            for label, sharded, max_iter in (("before", False, before_iter),
                                             ("after", True, after_iter)):
                log(f"d = 2^{log2_d}: {label} ...")
                row[label] = _fit(X, y, sharded, max_iter)
            after, before = row["after"], row["before"]
            row["speedup_per_evaluation"] = (before["seconds_per_evaluation"]
                                             / after["seconds_per_evaluation"])
            row["bytes_over_touched_x16"] = (after["bytes_per_evaluation"]
                                             / (16 * after["touched_columns_per_evaluation"]))
            row["time_over_kernel"] = after["seconds_per_evaluation"] / kernel
            results.append(row)
            log(_line(row))
            del X, y
    return results


def _line(row):
    b, a = row["before"], row["after"]
    return (f"d=2^{int(np.log2(row['d']))}: before {b['seconds_per_evaluation']:.3f} s, "
            f"{b['bytes_per_evaluation'] / 1e6:.1f} MB per evaluation; after "
            f"{a['seconds_per_evaluation']:.3f} s, {a['bytes_per_evaluation'] / 1e6:.1f} MB "
            f"({row['bytes_over_touched_x16']:.2f} x touched x 16 B, "
            f"{row['time_over_kernel']:.2f} x kernel {row['kernel_seconds_per_round']:.3f} s); "
            f"{row['speedup_per_evaluation']:.1f}x faster; "
            f"{a['seconds_per_iteration']:.3f} s per iteration after (first evaluation "
            f"{a['seconds_first_evaluation']:.2f} s)")


def main(args):
    """``python -m benchmarks bigd``: run and print the results as JSON."""
    log2_ds = tuple(int(k) for k in str(args.d).split(","))
    results = run(int(args.n), log2_ds, args.nnz, args.partitions, args.workers,
                  args.before_iter, args.after_iter)
    print(json.dumps(results, indent=1))
    return 0
