"""The fused one-read kernels against straightforward formulas, in float64 and float32.

``loss_grad``, ``loss_grad_hess`` and ``gram`` on dense partitions run cache-blocked,
fused kernels (:mod:`daskglm.compute.blocked`); here they are held to the textbook
formulas on whole arrays: ``eta = X @ coef + b + offset``, ``family.loss_and_dloss``,
``X.T @ r``, ``X.T @ diag(h) @ X`` and the weighted centred moments.
"""

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from daskglm.compute import blocked, kernels, row_blocks
from daskglm.compute.kernels import gram, loss_grad, loss_grad_hess
from daskglm.model.families import (
    Binomial,
    Gamma,
    Gaussian,
    InverseGaussian,
    NegativeBinomial,
    Poisson,
    Tweedie,
)

FAMILIES = [
    Gaussian(), Gaussian("log"), Binomial(), Binomial("probit"), Poisson(), Poisson("identity"),
    Gamma(), Gamma("log"), InverseGaussian(), Tweedie(power=1.5), Tweedie(power=3.0),
    NegativeBinomial(alpha=0.5),
]

#: Rows around the block sizes: one row, fewer rows than a block, exactly one gradient
#: block, and sizes that are not multiples of the gradient or the Gram block.
D = 7
ROWS = [1, 5, row_blocks.block_rows(D), blocked.gram_block_rows(D) + 1, 2 * row_blocks.block_rows(D, True) + 3]


def _target(family, mu, rng):
    name = type(family).__name__
    if name == "Binomial":
        return (rng.uniform(size=mu.shape) < 1 / (1 + np.exp(-mu))).astype(float)
    if name in ("Poisson", "NegativeBinomial"):
        return rng.poisson(np.exp(mu)).astype(float)
    if name == "Gaussian":
        return mu + rng.normal(size=mu.shape)
    positive = rng.gamma(2.0, np.exp(mu) / 2.0)
    if name == "Tweedie" and family.power < 2:  # compound Poisson-Gamma: zeros too
        positive[::3] = 0.0
    return positive


def _partition(family, n, dtype, weighted, offset, seed=0):
    """A partition with linear predictors in every link's domain (all positive, about 1)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.5, 1.5, size=(n, D)).astype(dtype)
    y = _target(family, rng.normal(scale=0.3, size=n), rng)
    w = rng.uniform(0.0, 2.0, size=n) if weighted else None
    part = (np.ascontiguousarray(X), y, w)
    return part + (rng.uniform(0.0, 0.2, size=n),) if offset else part


def _params(fit_intercept, seed=1):
    rng = np.random.default_rng(seed)
    coef = rng.uniform(0.05, 0.15, size=D)
    return np.append(coef, 0.2) if fit_intercept else coef


def _reference(part, params, family, fit_intercept, hessian=False):
    """Loss, gradient (and Hessian) from whole-array float64 formulas."""
    X = np.asarray(part[0], dtype=np.float64)
    y, w = part[1], part[2]
    Z = np.hstack([X, np.ones((X.shape[0], 1))]) if fit_intercept else X
    eta = Z @ params + (part[3] if len(part) > 3 else 0.0)
    loss, r = family.loss_and_dloss(y, eta, w)
    if not hessian:
        return loss, Z.T @ r
    h = family.hessian_d2loss(y, eta, w)  # Newton's weights (exact for Gamma's log link)
    return loss, Z.T @ r, Z.T @ (h[:, None] * Z)


def _tolerance(dtype):
    # float32 X: the fused loop converts elements exactly, but block products (the
    # generic families' path, Hessians) run in float32
    return 1e-12 if dtype == np.float64 else 2e-6


@pytest.mark.parametrize("family", FAMILIES, ids=repr)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted,offset,fit_intercept",
                         [(False, False, False), (True, False, True), (True, True, True),
                          (False, True, False)])
def test_loss_grad_equals_the_whole_array_formulas(family, dtype, weighted, offset, fit_intercept):
    params = _params(fit_intercept)
    for n in ROWS:
        part = _partition(family, n, dtype, weighted, offset)
        stats = loss_grad(part, params, family, fit_intercept)
        loss, grad = _reference(part, params, family, fit_intercept)
        rtol = _tolerance(dtype)
        assert stats.grad.dtype == np.float64
        np.testing.assert_allclose(stats.loss, loss, rtol=rtol)
        np.testing.assert_allclose(stats.grad, grad, rtol=rtol, atol=rtol * np.abs(grad).max())
        expected_weight = n if part[2] is None else part[2].sum()
        np.testing.assert_allclose(stats.weight, expected_weight, rtol=1e-15)


@pytest.mark.parametrize("family", [Gamma("log"), Tweedie(power=1.5), Binomial("probit")],
                         ids=repr)
def test_generic_block_path_accumulates_float32_x_in_float64(family):
    # families without a compiled loop widen each float32 block to float64: their loss and
    # gradient are those of the same values in float64 (a float32 product would round the
    # predictors and the gradient to float32, and L-BFGS could stall on that noise)
    params = _params(True)
    for n in ROWS:
        part = _partition(family, n, np.float32, weighted=True, offset=True)
        widened = (part[0].astype(np.float64),) + part[1:]
        ours, exact = (loss_grad(p, params, family, True) for p in (part, widened))
        np.testing.assert_allclose(ours.loss, exact.loss, rtol=1e-14)
        np.testing.assert_allclose(ours.grad, exact.grad, rtol=1e-14, atol=1e-14)
        ours, exact = (loss_grad_hess(p, params, family, True) for p in (part, widened))
        np.testing.assert_allclose(ours.grad, exact.grad, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(ours.hess, exact.hess, rtol=2e-6)  # the Gram in float32


@pytest.mark.parametrize("family", [Gaussian(), Binomial(), Poisson(), Gamma("log"),
                                    Tweedie(power=1.5), Tweedie(power=3.0),
                                    NegativeBinomial(alpha=0.5)], ids=repr)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted,offset,fit_intercept",
                         [(True, True, True), (False, False, False), (False, True, True)])
def test_loss_grad_hess_equals_the_whole_array_formulas(family, dtype, weighted, offset,
                                                        fit_intercept):
    params = _params(fit_intercept)
    for n in ROWS:
        part = _partition(family, n, dtype, weighted=weighted, offset=offset)
        stats = loss_grad_hess(part, params, family, fit_intercept)
        loss, grad, hess = _reference(part, params, family, fit_intercept, hessian=True)
        rtol = _tolerance(dtype)
        assert stats.grad.dtype == stats.hess.dtype == np.float64
        np.testing.assert_allclose(stats.loss, loss, rtol=rtol)
        np.testing.assert_allclose(stats.grad, grad, rtol=rtol, atol=rtol * np.abs(grad).max())
        np.testing.assert_allclose(stats.hess, hess, rtol=rtol, atol=rtol * np.abs(hess).max())


@pytest.mark.parametrize("family", [Binomial(), Poisson()], ids=repr)
def test_fused_hessian_with_more_columns_than_a_chunk_holds_rows(family):
    # past 128 float64 columns a compiled chunk holds fewer rows than a summing block
    rng = np.random.default_rng(5)
    n, d = 700, 300
    X = rng.uniform(-0.05, 0.05, size=(n, d))
    y = _target(family, rng.normal(scale=0.3, size=n), rng)
    part = (X, y, rng.uniform(0.0, 2.0, size=n), rng.uniform(0.0, 0.2, size=n))
    params = np.append(rng.normal(scale=0.1, size=d), 0.2)
    stats = loss_grad_hess(part, params, family, True)
    loss, grad, hess = _reference(part, params, family, True, hessian=True)
    np.testing.assert_allclose(stats.weight, part[2].sum(), rtol=1e-15)
    np.testing.assert_allclose(stats.loss, loss, rtol=1e-12)
    np.testing.assert_allclose(stats.grad, grad, rtol=1e-12, atol=1e-12 * np.abs(grad).max())
    np.testing.assert_allclose(stats.hess, hess, rtol=1e-12, atol=1e-12 * np.abs(hess).max())


def test_fused_gradient_covers_the_common_families_and_only_them():
    for family in (Gaussian(), Binomial(), Poisson(), Gamma("log"), Tweedie(power=2.0),
                   Tweedie(power=1.5), Tweedie(power=3.0), NegativeBinomial(alpha=0.5)):
        assert blocked.pointwise_for(family) is not None
    for family in (Binomial("probit"), Poisson("identity"), Gamma(), Tweedie(power=1.0),
                   Tweedie(power=0.0), Tweedie(power=2.0, link="identity"),
                   Tweedie(power=11.0), NegativeBinomial(alpha=0.5, link="sqrt")):
        assert blocked.pointwise_for(family) is None


def test_families_name_their_compiled_loss_and_subclasses_lose_it():
    """Each family names its loop (:meth:`Family.compiled_loss`); the codes are the
    loops' own; a subclass, which may change the loss, takes the generic path."""
    from daskglm.compute import loss_codes

    expected = {Gaussian(): (loss_codes.GAUSSIAN, 0.0), Binomial(): (loss_codes.BINOMIAL, 0.0),
                Poisson(): (loss_codes.POISSON, 0.0), Gamma("log"): (loss_codes.GAMMA_LOG, 0.0),
                Tweedie(power=2.0): (loss_codes.GAMMA_LOG, 0.0),
                Tweedie(power=1.5): (loss_codes.TWEEDIE_LOG, 1.5),
                Tweedie(power=10.0): (loss_codes.TWEEDIE_LOG, 10.0),
                NegativeBinomial(alpha=0.5): (loss_codes.NEGATIVE_BINOMIAL_LOG, 0.5)}
    for family, code in expected.items():
        assert loss_codes.loss_code(family) == code, family

    class ChangedLoss(Binomial):
        pass

    assert ChangedLoss().compiled_loss() is None and blocked.pointwise_for(ChangedLoss()) is None


@pytest.mark.parametrize("family", [Binomial(), Poisson(), Gamma("log"), Tweedie(power=1.5),
                                    Tweedie(power=3.0), NegativeBinomial(alpha=0.5)], ids=repr)
def test_fused_hessian_at_extreme_predictors(family):
    # predictors from -800 to 800: exp underflows (Binomial's curvature is then 0, not
    # NaN), passes Poisson's quadratic continuation at 500, and the log link's mean (Gamma,
    # Tweedie) is clipped at 2^-52 below and its predictor at 300 above
    X = np.linspace(-2.0, 2.0, 41)[:, None] * np.ones((1, 3))
    y = (np.arange(41) % 2).astype(float)
    if family.name in ("gamma", "tweedie"):
        y += 0.5
    params = np.array([400.0, -100.0, 100.0, 0.5])
    stats = loss_grad_hess((X, y, None), params, family, True)
    loss, grad, hess = _reference((X, y, None), params, family, True, hessian=True)
    assert np.all(np.isfinite(stats.hess))
    np.testing.assert_allclose(stats.loss, loss, rtol=1e-12)
    np.testing.assert_allclose(stats.grad, grad, rtol=1e-12, atol=1e-12 * np.abs(grad).max())
    np.testing.assert_allclose(stats.hess, hess, rtol=1e-12, atol=1e-12 * np.abs(hess).max())


def test_poisson_fused_gradient_continues_exp_above_the_safe_limit():
    family = Poisson()
    X = np.array([[1.0], [2.0], [0.5]])
    part = (X, np.array([3.0, 0.0, 1.0]), None)
    params = np.array([400.0])  # eta up to 800, past the quadratic continuation at 500
    stats = loss_grad(part, params, family, False)
    loss, grad = _reference(part, params, family, False)
    np.testing.assert_allclose([stats.loss, *stats.grad], [loss, *grad], rtol=1e-12)


def _reference_gram(part):
    X = np.asarray(part[0], dtype=np.float64)
    y = part[1]
    w = np.ones(X.shape[0]) if part[2] is None else part[2]
    total = w.sum()
    mean_x = w @ X / total
    mean_y = w @ y / total
    Xc, yc = X - mean_x, y - mean_y
    return total, mean_x, mean_y, Xc.T @ (w[:, None] * Xc), Xc.T @ (w * yc), yc @ (w * yc)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("location", [0.0, 1e4])
def test_gram_equals_the_centred_moments(dtype, weighted, location):
    rtol = 1e-11 if dtype == np.float64 else 2e-6
    for n in ROWS:
        rng = np.random.default_rng(n)
        X = (location + rng.normal(size=(n, D))).astype(dtype)
        y = X.astype(np.float64) @ np.linspace(-1, 1, D) + rng.normal(size=n)
        part = (X, y, rng.uniform(0.1, 2.0, size=n) if weighted else None)
        stats = gram(part)
        total, mean_x, mean_y, sxx, sxy, syy = _reference_gram(part)
        np.testing.assert_allclose(stats.weight, total, rtol=1e-14)
        # float32 blocks: the shifted column sums are float32 products
        mean_tol = 1e-13 if dtype == np.float64 else 2e-6
        np.testing.assert_allclose(stats.mean_x, mean_x, rtol=mean_tol,
                                   atol=mean_tol * (1 + abs(location)))
        np.testing.assert_allclose(stats.mean_y, mean_y, rtol=mean_tol,
                                   atol=mean_tol * (1 + abs(location)))
        if n == 1:
            assert np.all(stats.sxx == 0) and stats.syy == 0
            continue
        scale = np.abs(sxx).max()
        np.testing.assert_allclose(stats.sxx, sxx, rtol=rtol, atol=rtol * scale)
        np.testing.assert_allclose(stats.sxy, sxy, rtol=rtol, atol=rtol * np.abs(sxy).max())
        np.testing.assert_allclose(stats.syy, syy, rtol=rtol)


def test_gram_of_partitions_merges_to_the_gram_of_all_rows():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(10_001, D)) + 5.0
    y = rng.normal(size=10_001)
    w = rng.uniform(0.0, 2.0, size=10_001)
    whole = gram((X, y, w))
    merged = gram((X[:4000], y[:4000], w[:4000])) + gram((X[4000:], y[4000:], w[4000:]))
    np.testing.assert_allclose(merged.sxx, whole.sxx, rtol=1e-12, atol=1e-12 * np.abs(whole.sxx).max())
    np.testing.assert_allclose(merged.mean_x, whole.mean_x, rtol=1e-14)


def test_gram_with_zero_weights_is_empty():
    X = np.ones((10, D))
    stats = gram((X, np.ones(10), np.zeros(10)))
    assert stats.weight == 0 and np.all(stats.sxx == 0)


#: Measures one kernel's peak Python-tracked allocation on a float32 partition, in a fresh
#: process: tracemalloc traces every thread, and in the suite's process a cluster's threads
#: allocate at any moment.
_PEAK_SCRIPT = """
import sys, tracemalloc
import numpy as np
from daskglm.compute.kernels import gram, loss_grad, loss_grad_hess
from daskglm.model.families import Binomial
rng = np.random.default_rng(0)
X = rng.normal(size=(40_000, 50)).astype(np.float32)
part = (X, (rng.uniform(size=40_000) < 0.5).astype(float), rng.uniform(size=40_000))
params = np.full(51, 0.01)
call = {"loss_grad": lambda: loss_grad(part, params, Binomial(), True),
        "loss_grad_hess": lambda: loss_grad_hess(part, params, Binomial(), True),
        "gram": lambda: gram(part)}[sys.argv[1]]
call()  # compile and warm up
tracemalloc.start()
call()
print(tracemalloc.get_traced_memory()[1], X.nbytes)
"""


@pytest.mark.parametrize("kernel", ["loss_grad", "loss_grad_hess", "gram"])
def test_float32_partition_is_never_copied_to_float64(kernel):
    output = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, kernel], check=True,
                            capture_output=True, text=True).stdout
    peak, x_bytes = (int(value) for value in output.split())
    # a float64 copy of X would take 2 X.nbytes; the kernels use block buffers only
    assert peak < x_bytes / 4


def test_fused_kernels_are_reproducible_bit_for_bit():
    family = Binomial()
    part = _partition(family, 10_007, np.float64, weighted=True, offset=True)
    params = _params(True)
    first, second = (loss_grad(part, params, family, True) for _ in range(2))
    assert first.loss == second.loss and np.array_equal(first.grad, second.grad)
    first, second = (loss_grad_hess(part, params, family, True) for _ in range(2))
    assert np.array_equal(first.hess, second.hess) and np.array_equal(first.grad, second.grad)
    grams = [gram(part[:3]) for _ in range(2)]
    assert np.array_equal(grams[0].sxx, grams[1].sxx)


def _sparse_partition(family, n, dtype, weighted, offset):
    """``_partition`` with about half its values zero, as a canonical CSR matrix."""
    part = _partition(family, n, dtype, weighted, offset)
    X = part[0].copy()
    X[np.random.default_rng(3).uniform(size=X.shape) < 0.5] = 0
    return (sp.csr_matrix(X),) + part[1:]


@pytest.mark.parametrize("family", [Gaussian(), Binomial(), Poisson(), Gamma("log"),
                                    Tweedie(power=1.5), NegativeBinomial(alpha=0.5)], ids=repr)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted,offset,fit_intercept",
                         [(True, True, True), (False, False, False), (False, True, True)])
def test_compiled_csr_loops_equal_the_whole_array_formulas(family, dtype, weighted, offset,
                                                           fit_intercept):
    """CSR partitions of the families with a compiled loop: the loss and gradient from
    scipy's two products and the compiled formula on all rows (family_rows_of), the
    Hessian in one pass over the stored values (fused_csr_hessian_rows)."""
    params = _params(fit_intercept)
    for n in ROWS + [300]:
        part = _sparse_partition(family, n, dtype, weighted, offset)
        dense = (part[0].toarray(),) + part[1:]
        loss, grad, hess = _reference(dense, params, family, fit_intercept, hessian=True)
        stats = loss_grad(part, params, family, fit_intercept)
        np.testing.assert_allclose(stats.loss, loss, rtol=1e-12)
        np.testing.assert_allclose(stats.grad, grad, rtol=1e-12, atol=1e-12 * np.abs(grad).max())
        stats = loss_grad_hess(part, params, family, fit_intercept)
        np.testing.assert_allclose(stats.loss, loss, rtol=1e-12)
        np.testing.assert_allclose(stats.grad, grad, rtol=1e-12, atol=1e-12 * np.abs(grad).max())
        np.testing.assert_allclose(stats.hess, hess, rtol=1e-12, atol=1e-12 * np.abs(hess).max())
        np.testing.assert_allclose(stats.weight, n if part[2] is None else part[2].sum(),
                                   rtol=1e-15)


def test_csr_loops_run_for_the_compiled_families_only(monkeypatch):
    calls = []
    for name in ("csr_loss_grad", "fused_csr_loss_grad_hess"):
        original = getattr(kernels, name)
        monkeypatch.setattr(kernels, name,
                            lambda *a, _o=original, _n=name: calls.append(_n) or _o(*a))
    params = _params(True)
    for family in (Poisson(), Binomial("probit")):
        part = _sparse_partition(family, 50, np.float64, True, False)
        loss_grad(part, params, family, True)
        loss_grad_hess(part, params, family, True)
    assert calls == ["csr_loss_grad", "fused_csr_loss_grad_hess"]


def test_sparse_partitions_keep_their_path():
    family = Binomial()
    part = _partition(family, 300, np.float64, weighted=True, offset=False)
    sparse = (sp.csr_matrix(part[0]), *part[1:])
    params = _params(True)
    dense_stats, sparse_stats = (loss_grad(p, params, family, True) for p in (part, sparse))
    np.testing.assert_allclose(sparse_stats.grad, dense_stats.grad, rtol=1e-12)
    np.testing.assert_allclose(gram(sparse).sxx, gram(part).sxx, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("estimator", ["logistic", "linear"])
def test_float32_fit_agrees_with_the_float64_fit(estimator):
    import daskglm

    rng = np.random.default_rng(0)
    n, d = 20_000, 10
    X32 = rng.normal(size=(n, d)).astype(np.float32)
    coef = np.linspace(-1, 1, d)
    eta = X32.astype(np.float64) @ coef + 0.5
    if estimator == "logistic":
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
        model = daskglm.LogisticRegression(C=1.0, solver="lbfgs", tol=1e-12, max_iter=1000)
    else:
        y = eta + rng.normal(size=n)
        model = daskglm.LinearRegression(solver="normal")
    fit32 = model.fit(X32, y)
    coef32, intercept32 = fit32.coef_.copy(), fit32.intercept_
    assert fit32.coef_.dtype == np.float32
    fit64 = model.fit(X32.astype(np.float64), y)
    np.testing.assert_allclose(np.ravel(coef32), np.ravel(fit64.coef_), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(intercept32, fit64.intercept_, rtol=1e-5, atol=1e-6)
