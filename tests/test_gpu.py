"""CuPy chunks end to end: every solver fits a Dask array of CuPy chunks (dense and
``cupyx.scipy.sparse`` CSR) and gives the coefficients of the same fit on numpy chunks.

Runs where CuPy finds a GPU, and is skipped elsewhere (CI has none); run it on a machine
with one as ``python -m pytest tests/test_gpu.py``.
"""

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

import daskglm
from tests.conftest import make_data

cp = pytest.importorskip("cupy")
try:
    cp.cuda.runtime.getDeviceCount()
except Exception:  # pragma: no cover - depends on the machine
    pytest.skip("no GPU", allow_module_level=True)
import cupyx.scipy.sparse as cupyx_sparse  # noqa: E402


def device_chunks(a, rows=500):
    """A Dask array of CuPy chunks holding ``a``."""
    return da.from_array(cp.asarray(a), chunks=(rows,) + a.shape[1:], asarray=False)


def device_csr_chunks(X, rows=500):
    """A Dask array of ``cupyx.scipy.sparse`` CSR chunks holding the dense ``X``."""
    return device_chunks(X, rows).map_blocks(
        cupyx_sparse.csr_matrix, dtype=X.dtype,
        meta=cupyx_sparse.csr_matrix((0, 0), dtype=X.dtype))


def host_csr_chunks(X, rows=500):
    return da.from_array(X, chunks=(rows, X.shape[1])).map_blocks(
        sp.csr_matrix, dtype=X.dtype, meta=sp.csr_matrix((0, 0), dtype=X.dtype))


#: Coefficients agree to this, relative to the largest: round-off apart.  ADMM stops on
#: its residuals (1e-8) and lands within about 1e-7 of the optimum; the stochastic solvers
#: take the same random rows on both, but their many small steps add round-off.
AGREEMENT = {"logistic-admm": 1e-6, "logistic-sgd": 1e-6, "logistic-local-sgd": 1e-6,
             "logistic-sgd-qsgd": 1e-6, "sgd-classifier": 1e-6, "sgd-hinge": 1e-6,
             "sgd-regressor": 1e-6, "sgd-early-stopping": 1e-6}

SGD = {"random_state": 0, "batch_size": 100}

CASES = {
    "logistic-lbfgs": (lambda: daskglm.LogisticRegression(solver="lbfgs", tol=1e-10), "binomial"),
    "logistic-newton": (lambda: daskglm.LogisticRegression(solver="newton", tol=1e-10), "binomial"),
    "logistic-gd": (lambda: daskglm.LogisticRegression(solver="gd", tol=1e-8, max_iter=2000),
                    "binomial"),
    "logistic-admm": (lambda: daskglm.LogisticRegression(solver="admm", tol=1e-8, max_iter=500),
                      "binomial"),
    "logistic-averaging": (lambda: daskglm.LogisticRegression(solver="averaging"), "binomial"),
    "logistic-sgd": (lambda: daskglm.LogisticRegression(
        solver="sgd", max_iter=5, tol=None, solver_options=SGD), "binomial"),
    "logistic-local-sgd": (lambda: daskglm.LogisticRegression(
        solver="sgd", max_iter=5, tol=None, solver_options={**SGD, "sync_every": 4}),
        "binomial"),
    "logistic-sgd-qsgd": (lambda: daskglm.LogisticRegression(
        solver="sgd", max_iter=3, tol=None, solver_options={**SGD, "compression": "qsgd"}),
        "binomial"),
    # "optimal" steps (the default) amplify round-off to 1e-3 in five epochs, on numpy alone
    "sgd-classifier": (lambda: daskglm.SGDClassifier(
        loss="log_loss", learning_rate="invscaling", eta0=0.01, batch_size=100, max_iter=5,
        tol=None, random_state=0), "binomial"),
    "sgd-hinge": (lambda: daskglm.SGDClassifier(
        loss="hinge", learning_rate="invscaling", eta0=0.01, batch_size=100, max_iter=5,
        tol=None, random_state=0), "binomial"),
    "sgd-regressor": (lambda: daskglm.SGDRegressor(batch_size=100, max_iter=5, tol=None,
                                                   random_state=0), "gaussian"),
    "sgd-early-stopping": (lambda: daskglm.SGDRegressor(
        batch_size=100, max_iter=20, early_stopping=True, random_state=0), "gaussian"),
    "ridge-normal": (lambda: daskglm.Ridge(alpha=1.0, solver="normal"), "gaussian"),
    "linear-lbfgs": (lambda: daskglm.LinearRegression(solver="lbfgs", tol=1e-12), "gaussian"),
    "poisson-lbfgs": (lambda: daskglm.PoissonRegressor(alpha=0.1, tol=1e-10), "poisson"),
    "poisson-newton": (lambda: daskglm.PoissonRegressor(alpha=0.1, solver="newton", tol=1e-10),
                       "poisson"),
    "tweedie-lbfgs": (lambda: daskglm.TweedieRegressor(power=1.5, link="log", alpha=0.1,
                                                       tol=1e-10), "poisson"),
    "lasso-proximal": (lambda: daskglm.Lasso(alpha=0.01, tol=1e-8), "gaussian"),
    "elasticnet-admm": (lambda: daskglm.ElasticNet(alpha=0.01, l1_ratio=0.5, solver="admm",
                                                   tol=1e-10, max_iter=2000), "gaussian"),
}


def fit_both(make, family, chunks, host_chunks, weights=True):
    X, y, w = make_data(family, n=4000, weights=weights)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = make().fit(host_chunks(X), y, sample_weight=w)
        model = make().fit(chunks(X), device_chunks(y),
                           sample_weight=None if w is None else device_chunks(w))
    return X, reference, model


def agree(model, reference, atol):
    assert isinstance(model.coef_, np.ndarray)
    scale = np.abs(reference.coef_).max()
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=0, atol=atol * scale)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, rtol=0, atol=atol * scale)


@pytest.mark.parametrize("case", list(CASES))
def test_cupy_chunks_give_the_coefficients_of_numpy_chunks(case):
    """Every solver on a Dask array of CuPy chunks: numpy coefficients (1e-8 relative to
    the largest, see AGREEMENT), predictions stay on the GPU."""
    make, family = CASES[case]
    X, reference, model = fit_both(make, family, device_chunks,
                                   lambda X: da.from_array(X, chunks=(500, -1)))
    agree(model, reference, AGREEMENT.get(case, 1e-8))
    assert model.comm_.records[0].kind.startswith("validate")
    predictions = model.predict(device_chunks(X))
    assert isinstance(predictions._meta, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(predictions.compute()),
                               np.asarray(reference.predict(X)), rtol=1e-7)


@pytest.mark.parametrize("case", ["logistic-lbfgs", "logistic-newton", "ridge-normal",
                                  "lasso-proximal", "logistic-sgd"])
def test_cupyx_csr_chunks_give_the_coefficients_of_scipy_csr_chunks(case):
    make, family = CASES[case]
    X, reference, model = fit_both(make, family, device_csr_chunks, host_csr_chunks)
    agree(model, reference, AGREEMENT.get(case, 1e-8))


def test_multinomial_on_cupy_chunks():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 5))
    y = np.argmax(X @ rng.normal(size=(5, 3)) + rng.gumbel(size=(3000, 3)), axis=1)
    reference = daskglm.LogisticRegression(tol=1e-10).fit(da.from_array(X, chunks=(500, -1)), y)
    model = daskglm.LogisticRegression(tol=1e-10).fit(device_chunks(X), device_chunks(y))
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=0,
                               atol=1e-8 * np.abs(reference.coef_).max())
    proba = model.predict_proba(device_chunks(X))
    assert isinstance(proba._meta, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(proba.compute()),
                               np.asarray(reference.predict_proba(X)), rtol=1e-7)
    assert model.score(device_chunks(X), device_chunks(y)) == pytest.approx(
        reference.score(X, y))


def test_float32_chunks_stay_float32():
    X, y, _ = make_data("binomial", n=4000)
    X32 = X.astype(np.float32)
    reference = daskglm.LogisticRegression(tol=1e-6).fit(
        da.from_array(X32, chunks=(500, -1)), y)
    model = daskglm.LogisticRegression(tol=1e-6).fit(device_chunks(X32), device_chunks(y))
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=0,
                               atol=1e-5 * np.abs(reference.coef_).max())


def test_inference_on_cupy_chunks():
    X, y, _ = make_data("poisson", n=4000)
    reference = daskglm.PoissonRegressor(alpha=0.0, tol=1e-10, inference=True).fit(
        da.from_array(X, chunks=(500, -1)), y)
    model = daskglm.PoissonRegressor(alpha=0.0, tol=1e-10, inference=True).fit(
        device_chunks(X), device_chunks(y))
    np.testing.assert_allclose(model.bse_, reference.bse_, rtol=1e-7)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd", "async", "gossip"])
def test_cupy_chunks_on_a_local_cluster(solver):
    """A real LocalCluster of two worker processes sharing the GPU."""
    from distributed import Client, LocalCluster

    X, y, _ = make_data("binomial", n=4000)
    steps = {"loss": "log_loss", "learning_rate": "invscaling", "eta0": 0.05,
             "batch_size": 250, "max_iter": 2, "tol": None, "random_state": 0}
    make = {"lbfgs": lambda: daskglm.LogisticRegression(tol=1e-10),
            # "auto" would choose the steps per round from each fit's measured round cost
            "sgd": lambda: daskglm.SGDClassifier(sync_every=4, **steps),
            "async": lambda: daskglm.SGDClassifier(solver="async", **steps),
            "gossip": lambda: daskglm.SGDClassifier(solver="gossip", **steps)}[solver]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      worker_dashboard_address=None) as cluster, Client(cluster):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Xd, yd = device_chunks(X).persist(), device_chunks(y).persist()
            model = make().fit(Xd, yd)
            host = make().fit(da.from_array(X, chunks=(500, -1)).persist(), y)
    assert isinstance(model.coef_, np.ndarray)
    if solver in ("lbfgs", "sgd"):
        agree(model, host, 1e-6)
    else:  # the asynchronous methods race: the same accuracy, not the same bits
        assert model.score(X, y) > host.score(X, y) - 0.02


def test_the_ledger_counts_cupy_bytes():
    from daskglm.accounting.bytemodel import nbytes

    assert nbytes(cp.zeros(1000)) == 8000


def test_cupy_partitions_are_stacked_on_the_device():
    """In this process, dense CuPy partitions of one GPU are stacked into one buffer: a
    gradient round is one task over all the rows (:mod:`daskglm.engine.device_rows`)."""
    X, y, _ = make_data("binomial", n=4000)
    model = daskglm.LogisticRegression(tol=1e-10).fit(device_chunks(X), device_chunks(y))
    rounds = [r for r in model.comm_.records if r.kind == "gradient"]
    assert rounds and all(r.tasks == 1 for r in rounds)
    reference = daskglm.LogisticRegression(tol=1e-10).fit(da.from_array(X, chunks=(500, -1)), y)
    agree(model, reference, 1e-7)


ROWS_SEEN = []


def counted_loss_grad(part, *args):
    """The gradient kernel, counting the rows of each call in :data:`ROWS_SEEN`."""
    from daskglm.compute.kernels import loss_grad

    ROWS_SEEN.append(part[0].shape[0])
    return loss_grad(part, *args)


counted_loss_grad.row_additive = True


def test_a_workers_cupy_partitions_are_stacked_by_its_partition_holder():
    """On a cluster, a worker's partition holder stacks its dense CuPy partitions: a
    row-additive round is one kernel call over all of its rows, with the sums of the
    partitions one by one (:meth:`daskglm.engine.partition_holders.PartitionHolder._run_stacked`)."""
    from distributed import Client, LocalCluster

    from daskglm.compute.kernels import loss_grad
    from daskglm.engine import make_engine
    from daskglm.model.families import Binomial

    X, y, _ = make_data("binomial", n=4000)
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        engine = make_engine(device_chunks(X).persist(), device_chunks(y).persist(),
                             family=Binomial(), client=client)
        engine.reduce(loss_grad, params, Binomial(), True, kind="gradient")  # makes holders
        assert engine._ready_direct() is not None
        ROWS_SEEN.clear()
        stats = engine.reduce(counted_loss_grad, params, Binomial(), True, kind="gradient")
        assert engine.ledger.records[-1].route == "direct"
        assert ROWS_SEEN == [4000]
        engine.close()
    host = make_engine(da.from_array(X, chunks=(500, -1)), y, family=Binomial(), client=None)
    expected = host.reduce(loss_grad, params, Binomial(), True, kind="gradient")
    np.testing.assert_allclose(stats.grad, expected.grad, rtol=1e-10)
    assert stats.loss == pytest.approx(expected.loss, rel=1e-12)
