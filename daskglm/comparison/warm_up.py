"""Untimed work before :func:`~daskglm.comparison.compare`'s timed fits, so that no
method pays alone for what every worker does once: one round on a few rows
(:func:`warm_up_round`), or a short fit of every method on every worker, their compiled
loops compiled apart on different workers (:func:`warm_up_fits`)."""

from __future__ import annotations

import time
import warnings

import numpy as np

from ..engine import is_dask, make_engine
from ..estimators import GLM

__all__ = ["warm_up_round", "warm_up_fits", "COMPILE_GROUPS"]

def warm_up_round(X, y, family, rows=64):
    """One round on a few rows, so that the first method does not pay alone for what
    every worker does once (importing the package, first calls)."""
    X_few, y_few = X[:rows], y[:rows]
    if is_dask(X_few):
        X_few = X_few.compute()
    if is_dask(y_few):
        y_few = y_few.compute()
    X_few = X_few if hasattr(X_few, "indptr") else np.asarray(X_few)  # keep CSR sparse
    with make_engine(X_few, np.asarray(y_few), family=family):
        pass


def _first_rows_of_every_partition(X, y, rows):
    """The first ``rows`` rows of every row chunk of Dask ``X`` and ``y`` (each computed
    where its chunk lives), or the first ``8 * rows`` rows of in-memory arrays."""
    if not is_dask(X):
        return X[: 8 * rows], y[: 8 * rows]
    if not is_dask(y):
        import dask.array as da

        y = da.from_array(np.asarray(y), chunks=(X.chunks[0],))
    elif y.chunks[0] != X.chunks[0]:
        y = y.rechunk((X.chunks[0],))
    sizes = tuple(min(rows, n) for n in X.chunks[0])
    X_few = X.map_blocks(lambda block: block[:rows], chunks=(sizes, X.chunks[1]),
                         dtype=X.dtype)
    y_few = y.map_blocks(lambda block: block[:rows], chunks=(sizes,), dtype=y.dtype)
    return X_few, y_few


#: Methods whose compiled loops one worker compiles while another compiles the others'
#: (:func:`_compile_apart`), balanced by their first-compile times on two cores: the
#: fused loss, gradient and Hessian loops of the batch methods with parameter-server SGD
#: (about 7 s and 2.5 s), against the local SGD loops of ``sgd`` and ``gossip`` (5 to 10 s).
COMPILE_GROUPS = (("normal", "newton", "lbfgs", "gd", "proximal", "admm", "averaging",
                   "async"), ("sgd", "gossip"))


def _small_fit(model, X, y):
    """Fit ``model`` for at most 2 iterations, warnings silenced, a method that does not
    apply ignored."""
    from sklearn.base import clone

    small = clone(model).set_params(max_iter=min(2, model.max_iter))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            small.fit(X, y)
    except ValueError:  # the method does not apply: its timed fit says why
        pass


def _compile_in_process(models, X, y):
    """On a worker: fit ``models`` in this process (an in-memory engine), so that numba
    compiles their loops here and writes them to its on-disk cache.  Skipped where the
    worker has a client of its own (a fit would then run on the cluster)."""
    from ..engine.distributed import active_client

    if active_client() is not None:
        return False
    for model in models:
        _small_fit(model, X, y)
    return True


def _compile_apart(client, models, X, y, rows=256):
    """Each worker fits, in its own process and at the same time as the others, the
    models of one of :data:`COMPILE_GROUPS` on the first ``rows`` training rows: the
    workers compile different loops at once and share them through numba's on-disk cache
    (``cache=True``), instead of each compiling every loop one method after the other."""
    X_few, y_few = X[:rows], y[:rows]
    X_few = X_few.compute() if is_dask(X_few) else X_few
    y_few = np.asarray(y_few.compute() if is_dask(y_few) else y_few)
    groups = [[] for _ in COMPILE_GROUPS]
    for model in models:
        solver = model.solver
        if solver == "sgd" and (model.solver_options or {}).get("sync_every", "auto") == "auto":
            # in this process "auto" is synchronous SGD; on a cluster, local SGD's loops
            options = {**(model.solver_options or {}), "sync_every": 4}
            model = GLM(**{**model.get_params(), "solver_options": options})
        index = next((i for i, group in enumerate(COMPILE_GROUPS) if solver in group), 0)
        groups[index].append(model)
    workers = sorted(client.nthreads())
    futures = [client.submit(_compile_in_process, group, X_few, y_few, pure=False,
                             workers=[workers[i % len(workers)]], allow_other_workers=False)
               for i, group in enumerate(groups) if group and workers]
    client.gather(futures)


def warm_up_fits(X, y, models, rows=32):
    """Untimed: every worker compiles (or loads from numba's on-disk cache) the compiled
    loops of every method and runs each method's first calls, so that no timed fit pays
    for them.  On a cluster the workers first compile different methods' loops at once
    (:func:`_compile_apart`); then each of ``models`` is fitted (at most 2 iterations)
    on the first ``rows`` rows of every partition, on every worker.  Returns the wall
    time."""
    from ..engine.distributed import active_client

    start = time.perf_counter()
    client = active_client()
    if client is not None:
        _compile_apart(client, [m for m in models if m.solver != "auto"], X, y)
    X_few, y_few = _first_rows_of_every_partition(X, y, rows)
    for model in models:
        _small_fit(model, X_few, y_few)
    return time.perf_counter() - start
