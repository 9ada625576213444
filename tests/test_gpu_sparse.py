"""``cupyx.scipy.sparse`` CSR partitions: the kernels' sparse branch on the GPU gives the
numbers of scipy CSR partitions.

Runs where CuPy finds a GPU, and is skipped elsewhere; run it on a machine with one as
``python -m pytest tests/test_gpu_sparse.py``.  Only the kernels are covered: a fit on a
Dask array of ``cupyx`` chunks also needs the engine's packing and validation of such
partitions.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from daskglm.compute import row_blocks
from daskglm.compute.kernels import (
    as_csr_or_dense,
    gram,
    linear_predictor,
    loss_grad,
    loss_grad_hess,
)
from daskglm.compute.multinomial import multinomial_loss_grad, multinomial_loss_grad_hess
from daskglm.model.families import Binomial, Gamma, Gaussian, Poisson

cp = pytest.importorskip("cupy")
cupyx_sparse = pytest.importorskip("cupyx.scipy.sparse")
try:
    cp.cuda.runtime.getDeviceCount()
except Exception:  # pragma: no cover - depends on the machine
    pytest.skip("no GPU", allow_module_level=True)

#: Agreement with scipy, relative to the largest entry (different summation orders).
RTOL = 1e-10


@pytest.fixture
def data():
    rng = np.random.default_rng(5)
    X = sp.random(800, 12, density=0.2, format="csr", random_state=5) * 0.5
    weight = rng.uniform(0.2, 3.0, size=800)
    params = np.append(rng.normal(size=12) * 0.3, 0.5)
    return rng, X.tocsr(), weight, params


def on_device(X, *vectors):
    return (cupyx_sparse.csr_matrix(X), *(None if v is None else cp.asarray(v) for v in vectors))


def close(got, expected):
    got = cp.asnumpy(got) if isinstance(got, cp.ndarray) else np.asarray(got)
    np.testing.assert_allclose(got, expected, rtol=0, atol=RTOL * np.abs(expected).max())


def test_packing_keeps_cupyx_csr(data):
    _, X, _, _ = data
    packed = as_csr_or_dense(cupyx_sparse.coo_matrix(X))
    assert isinstance(packed, cupyx_sparse.csr_matrix) and packed.has_canonical_format
    close(packed.toarray(), X.toarray())


@pytest.mark.parametrize("family", [Gaussian(), Binomial(), Poisson(), Gamma("log")])
def test_loss_grad_and_hessian(family, data):
    rng, X, weight, params = data
    y = {"binomial": (rng.uniform(size=800) < 0.4) * 1.0,
         "gamma": rng.gamma(2.0, size=800) + 0.1}.get(family.name, rng.poisson(1.0, 800) * 1.0)
    device_part = on_device(X, y, weight)
    for kernel in (loss_grad, loss_grad_hess):
        got, expected = kernel(device_part, params, family, True), kernel((X, y, weight), params,
                                                                          family, True)
        assert isinstance(got.grad, np.ndarray)
        assert got.loss == pytest.approx(expected.loss, rel=RTOL)
        close(got.grad, expected.grad)
        if expected.hess is not None:
            close(got.hess, expected.hess)


def test_gram_and_linear_predictor(data):
    rng, X, weight, params = data
    y = rng.normal(size=800)
    got, expected = gram(on_device(X, y, weight)), gram((X, y, weight))
    for field in ("mean_x", "sxx", "sxy"):
        close(getattr(got, field), getattr(expected, field))
    eta = linear_predictor(on_device(X)[0], params, True)
    assert isinstance(eta, cp.ndarray)
    close(eta, linear_predictor(X, params, True))


def test_multinomial(data):
    rng, X, weight, _ = data
    y = rng.integers(0, 3, size=800).astype(float)
    params = rng.normal(size=13 * 3) * 0.3
    for kernel in (multinomial_loss_grad, multinomial_loss_grad_hess):
        got, expected = kernel(on_device(X, y, weight), params, 3, True), \
            kernel((X, y, weight), params, 3, True)
        close(got.grad, expected.grad)
        if expected.hess is not None:
            close(got.hess, expected.hess)


def test_one_block_per_partition():
    assert list(row_blocks.row_blocks(cupyx_sparse.csr_matrix(sp.eye(5000, 3, format="csr")))) \
        == [(0, 5000)]
