"""CuPy chunks end to end: the same kernels on the GPU, the same coefficients as on the CPU.

Runs where CuPy finds a GPU, and is skipped elsewhere (CI has none); run it on a machine
with one as ``python -m pytest tests/test_gpu.py``.
"""

import warnings

import dask.array as da
import numpy as np
import pytest

import daskglm
from tests.conftest import make_data

cp = pytest.importorskip("cupy")
try:
    cp.cuda.runtime.getDeviceCount()
except Exception:  # pragma: no cover - depends on the machine
    pytest.skip("no GPU", allow_module_level=True)


def device_chunks(a, rows=500):
    """A Dask array of CuPy chunks holding ``a``."""
    return da.from_array(cp.asarray(a), chunks=(rows,) + a.shape[1:], asarray=False)


#: Coefficients agree to this, relative to the largest: round-off apart, except ADMM,
#: which stops on its residuals (1e-8) and lands within about 1e-7 of the optimum.
AGREEMENT = {"logistic-admm": 1e-6}

CASES = {
    "logistic-lbfgs": (lambda: daskglm.LogisticRegression(solver="lbfgs", tol=1e-10), "binomial"),
    "logistic-newton": (lambda: daskglm.LogisticRegression(solver="newton", tol=1e-10), "binomial"),
    "logistic-gd": (lambda: daskglm.LogisticRegression(solver="gd", tol=1e-8, max_iter=2000),
                    "binomial"),
    "logistic-admm": (lambda: daskglm.LogisticRegression(solver="admm", tol=1e-8, max_iter=500),
                      "binomial"),
    "ridge-normal": (lambda: daskglm.Ridge(alpha=1.0, solver="normal"), "gaussian"),
    "poisson-lbfgs": (lambda: daskglm.PoissonRegressor(alpha=0.1, tol=1e-10), "poisson"),
    "lasso-proximal": (lambda: daskglm.Lasso(alpha=0.01, tol=1e-8), "gaussian"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_cupy_chunks_give_the_coefficients_of_numpy_chunks(case):
    """Every solver on a Dask array of CuPy chunks: numpy coefficients (1e-8 relative to
    the largest, see AGREEMENT), predictions stay on the GPU."""
    make, family = CASES[case]
    X, y, w = make_data(family, n=4000, weights=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = make().fit(da.from_array(X, chunks=(500, -1)), y, sample_weight=w)
        model = make().fit(device_chunks(X), device_chunks(y), sample_weight=device_chunks(w))
    assert isinstance(model.coef_, np.ndarray)
    scale = np.abs(reference.coef_).max()
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=0,
                               atol=AGREEMENT.get(case, 1e-8) * scale)
    assert model.comm_.records[0].kind == "validate"
    predictions = model.predict(device_chunks(X))
    assert isinstance(predictions._meta, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(predictions.compute()),
                               np.asarray(reference.predict(X)), rtol=1e-7)


def test_the_ledger_counts_cupy_bytes():
    from daskglm.accounting.bytemodel import nbytes

    assert nbytes(cp.zeros(1000)) == 8000
