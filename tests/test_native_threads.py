"""The driver's L-BFGS iteration holds the native pools to one thread
(:mod:`daskglm.native_threads`): BLAS threads left spinning after a driver-side product
took the cores of the next round's tasks."""

import numpy as np
from threadpoolctl import threadpool_info

import daskglm
import daskglm.solvers.lbfgs as lbfgs_module
from daskglm.native_threads import one_thread


def _blas_threads():
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_one_thread_holds_every_blas_pool_and_restores_it():
    before = _blas_threads()
    with one_thread():
        assert _blas_threads() <= {1}
    assert _blas_threads() == before


def test_lbfgs_iterates_with_one_blas_thread(monkeypatch):
    seen = []
    original = lbfgs_module.minimize_to_tol

    def recording(*args, **kwargs):
        seen.append(_blas_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(lbfgs_module, "minimize_to_tol", recording)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    y = (X[:, 0] + rng.logistic(size=500) > 0).astype(float)
    model = daskglm.LogisticRegression(solver="lbfgs").fit(X, y)
    assert model.converged_ and seen and all(threads <= {1} for threads in seen)
