"""The model functions and the kernels on ``array_api_strict`` arrays: the same code as for
numpy, the same numbers (to 1e-12, relative to the largest entry), results in the library
they were given.

``array_api_strict`` implements the standard and nothing else (no numpy functions on its
arrays, no implicit conversion, no partial indexing), so passing here means the code
uses only the standard's functions: what any other library (CuPy, ...) is asked for.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.special

from daskglm.backend import from_host, namespace, to_host
from daskglm.compute import kernels, row_blocks
from daskglm.compute.kernels import gram, linear_predictor, loss_grad, loss_grad_hess
from daskglm.compute.multinomial import multinomial_loss_grad, multinomial_loss_grad_hess
from daskglm.model import numerics
from daskglm.model.families import (
    Binomial,
    Gamma,
    Gaussian,
    InverseGaussian,
    NegativeBinomial,
    Poisson,
    Tweedie,
)
from daskglm.model.links import get_link
from daskglm.model.multinomial import Multinomial

xs = pytest.importorskip("array_api_strict")
StrictArray = type(xs.asarray(0.0))

#: Agreement with numpy, relative to the largest entry of the numpy result.
RTOL = 1e-12

FAMILIES = {
    "gaussian": (Gaussian(), "real"),
    "gaussian-log": (Gaussian("log"), "real"),
    "binomial": (Binomial(), "binary"),
    "binomial-probit": (Binomial("probit"), "binary"),
    "binomial-cloglog": (Binomial("cloglog"), "binary"),
    "poisson": (Poisson(), "counts"),
    "poisson-identity": (Poisson("identity"), "counts"),
    "poisson-sqrt": (Poisson("sqrt"), "counts"),
    "negative-binomial": (NegativeBinomial(0.5), "counts"),
    "tweedie-1.5": (Tweedie(1.5), "counts"),
    "gamma": (Gamma(), "positive"),
    "gamma-log": (Gamma("log"), "positive"),
    "inverse-gaussian": (InverseGaussian(), "positive"),
    "tweedie-3": (Tweedie(3.0), "positive"),
}

LINKS = ["identity", "logit", "log", "inverse", "probit", "cloglog", "sqrt", "inverse_squared"]


def targets(kind, n, rng):
    if kind == "real":
        return rng.normal(1.0, 1.0, size=n)
    if kind == "binary":
        return (rng.uniform(size=n) < 0.4).astype(float)
    if kind == "counts":
        return rng.poisson(1.5, size=n).astype(float)
    return rng.gamma(2.0, size=n) + 0.05


def strict(a):
    return None if a is None else xs.asarray(a)


def assert_same(actual, desired):
    """``actual`` (a strict array or a number) equals the numpy ``desired`` to RTOL."""
    if isinstance(desired, np.ndarray):
        assert isinstance(actual, StrictArray), f"expected a strict array, got {type(actual)}"
        actual = np.from_dlpack(actual)
    desired = np.asarray(desired, dtype=float)
    scale = max(float(np.max(np.abs(desired), initial=0.0)), np.finfo(float).tiny)
    np.testing.assert_allclose(np.asarray(actual, dtype=float), desired, rtol=RTOL,
                               atol=RTOL * scale)


@pytest.fixture(autouse=True)
def standard_2024():
    """The 2024.12 standard, the version numpy 2.1+ declares (Python scalars are accepted
    by the elementwise functions from that version on)."""
    with xs.ArrayAPIStrictFlags(api_version="2024.12"):
        yield


@pytest.fixture
def data():
    """Rows whose linear predictors lie near 1 (inside every link's domain)."""
    rng = np.random.default_rng(3)
    n, d = 700, 5
    X = rng.normal(size=(n, d)) * 0.3
    params = np.append(rng.normal(size=d) * 0.3, 1.0)
    weight = rng.uniform(0.2, 3.0, size=n)
    offset = rng.normal(size=n) * 0.05
    return rng, X, params, weight, offset


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 64 rows, so that every kernel's general path runs over several blocks."""
    monkeypatch.setattr(row_blocks, "BLOCK_BYTES", 64)


# --------------------------------------------------------------------------------------
# the seam


def test_namespace_of_each_library():
    assert namespace(np.ones(2)) is np
    assert namespace(sp.csr_matrix(np.eye(2))) is np
    assert namespace(xs.ones(2)) is xs
    back = to_host(xs.asarray([1.0, 2.0]))
    assert isinstance(back, np.ndarray) and back.tolist() == [1.0, 2.0]
    moved = from_host(np.array([3.0]), like=xs.ones(1))
    assert isinstance(moved, StrictArray) and float(moved[0]) == 3.0


@pytest.mark.parametrize("name", ["expit", "logit", "ndtr", "ndtri", "gammaln"])
def test_special_functions_match_scipy(name):
    grid = {"logit": np.linspace(1e-6, 1 - 1e-6, 101), "ndtri": np.linspace(1e-6, 1 - 1e-6, 101),
            "gammaln": np.linspace(0.1, 50.0, 101)}.get(name, np.linspace(-40.0, 40.0, 161))
    result = getattr(numerics, name)(strict(grid))
    assert_same(result, getattr(scipy.special, name)(grid))


def test_xlogy_logsumexp_softmax_match_scipy():
    rng = np.random.default_rng(0)
    x = np.array([0.0, 0.0, 1.5, 2.0])
    y = np.array([0.0, 3.0, 0.5, 7.0])
    assert_same(numerics.xlogy(strict(x), strict(y)), scipy.special.xlogy(x, y))
    eta = rng.normal(size=(50, 4)) * 30 + 600  # exp overflows unless shifted
    assert_same(numerics.logsumexp(strict(eta), axis=1), scipy.special.logsumexp(eta, axis=1))
    assert_same(numerics.softmax(strict(eta), axis=1), scipy.special.softmax(eta, axis=1))


# --------------------------------------------------------------------------------------
# the model functions


@pytest.mark.parametrize("name", LINKS)
def test_links(name):
    link = get_link(name)
    eta = np.linspace(0.05, 3.0, 60) if name in ("sqrt", "inverse_squared", "inverse") \
        else np.linspace(-3.0, 3.0, 60)
    mu = np.linspace(0.01, 0.99, 60)
    for method in ("inverse", "inverse_derivative", "inverse_second_derivative"):
        assert_same(getattr(link, method)(strict(eta)), getattr(link, method)(eta))
    assert_same(link.link(strict(mu)), link.link(mu))


@pytest.mark.parametrize("case", list(FAMILIES))
def test_family_functions(case, data):
    family, kind = FAMILIES[case]
    rng, X, params, weight, _ = data
    eta = X @ params[:-1] + params[-1]
    y = targets(kind, X.shape[0], rng)
    ys, etas, ws = strict(y), strict(eta), strict(weight)
    for method in ("pointwise_loss", "d2loss", "dloss", "observed_d2loss"):
        assert_same(getattr(family, method)(ys, etas), getattr(family, method)(y, eta))
    for method in ("dloss", "d2loss", "observed_d2loss"):
        assert_same(getattr(family, method)(ys, etas, ws), getattr(family, method)(y, eta, weight))
    for method in ("mean", "variance"):
        assert_same(getattr(family, method)(etas), getattr(family, method)(eta))
    assert_same(family.loss(ys, etas, ws), family.loss(y, eta, weight))
    loss, dloss = family.loss_and_dloss(ys, etas, ws)
    loss_np, dloss_np = family.loss_and_dloss(y, eta, weight)
    assert_same(loss, loss_np)
    assert_same(dloss, dloss_np)
    mu = family.mean(eta)
    assert_same(family.deviance(ys, strict(mu), ws), family.deviance(y, mu, weight))
    sums = family.distribution.log_likelihood_sums(ys, strict(mu), ws)
    if sums is not None:
        expected = family.distribution.log_likelihood_sums(y, mu, weight)  # host sums
        np.testing.assert_allclose(sums, expected, rtol=RTOL, atol=0)
    family.check_target(ys)


@pytest.mark.parametrize("family, bad", [
    (Binomial(), 1.5), (Poisson(), -1.0), (Gamma(), 0.0), (NegativeBinomial(1.0), -2.0),
    (Tweedie(1.5), -1.0), (Multinomial(3), 1.5),
])
def test_check_target_refuses_strict_targets_outside_the_support(family, bad):
    with pytest.raises(ValueError, match="targets"):
        family.check_target(xs.asarray([0.0, 1.0, bad]))


# --------------------------------------------------------------------------------------
# the kernels


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("case", list(FAMILIES))
def test_loss_grad_and_hessian_kernels(case, fit_intercept, data, small_blocks):
    """General path on strict partitions (several blocks, weights, an offset) against the
    numpy kernels (the compiled ones for the canonical Gaussian, binomial and Poisson)."""
    family, kind = FAMILIES[case]
    rng, X, params, weight, offset = data
    y = targets(kind, X.shape[0], rng)
    if not fit_intercept:
        X, params = np.column_stack([X, np.ones(X.shape[0])]), params  # intercept as a column
    part = (X, y, weight, offset)
    strict_part = tuple(strict(a) for a in part)
    for kernel in (loss_grad, loss_grad_hess):
        got, expected = kernel(strict_part, params, family, fit_intercept), \
            kernel(part, params, family, fit_intercept)
        assert isinstance(got.grad, np.ndarray)  # statistics return to the driver as numpy
        assert got.weight == pytest.approx(expected.weight, rel=RTOL)
        assert got.loss == pytest.approx(expected.loss, rel=RTOL)
        np.testing.assert_allclose(got.grad, expected.grad, rtol=0,
                                   atol=RTOL * np.abs(expected.grad).max())
        if kernel is loss_grad_hess:
            np.testing.assert_allclose(got.hess, expected.hess, rtol=0,
                                       atol=RTOL * np.abs(expected.hess).max())


@pytest.mark.parametrize("weighted", [True, False])
def test_gram_kernel(weighted, data, small_blocks):
    rng, X, _, weight, _ = data
    y = rng.normal(size=X.shape[0])
    w = weight if weighted else None
    got, expected = gram((strict(X), strict(y), strict(w))), gram((X, y, w))
    assert got.weight == pytest.approx(expected.weight, rel=RTOL)
    for field in ("mean_x", "sxx", "sxy"):
        np.testing.assert_allclose(getattr(got, field), getattr(expected, field), rtol=0,
                                   atol=RTOL * np.abs(getattr(expected, field)).max())
    assert got.mean_y == pytest.approx(expected.mean_y, rel=RTOL)
    assert got.syy == pytest.approx(expected.syy, rel=RTOL)


def test_linear_predictor_stays_in_its_library(data):
    _, X, params, _, offset = data
    eta = linear_predictor(strict(X), params, True, strict(offset))
    assert_same(eta, linear_predictor(X, params, True, offset))
    assert_same(linear_predictor(strict(X), params[:-1], False), X @ params[:-1])


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_multinomial_kernels(fit_intercept, data, small_blocks):
    rng, X, _, weight, _ = data
    K, d = 3, X.shape[1]
    y = rng.integers(0, K, size=X.shape[0]).astype(float)
    params = rng.normal(size=(d + int(fit_intercept)) * K) * 0.5
    part, strict_part = (X, y, weight), (strict(X), strict(y), strict(weight))
    for kernel in (multinomial_loss_grad, multinomial_loss_grad_hess):
        got, expected = kernel(strict_part, params, K, fit_intercept), \
            kernel(part, params, K, fit_intercept)
        assert got.loss == pytest.approx(expected.loss, rel=RTOL)
        np.testing.assert_allclose(got.grad, expected.grad, rtol=0,
                                   atol=RTOL * np.abs(expected.grad).max())
        if expected.hess is not None:
            np.testing.assert_allclose(got.hess, expected.hess, rtol=0,
                                       atol=RTOL * np.abs(expected.hess).max())
    eta = X @ params[: K * d].reshape(K, d).T
    assert_same(Multinomial(K).probabilities(strict(eta)), Multinomial(K).probabilities(eta))


def test_as_csr_or_dense_keeps_the_library():
    X = xs.asarray(np.arange(6, dtype=np.int64).reshape(3, 2))
    packed = kernels.as_csr_or_dense(X)
    assert isinstance(packed, StrictArray) and packed.dtype == xs.float64


# --------------------------------------------------------------------------------------
# a whole fit


@pytest.mark.parametrize("solver", ["lbfgs", "newton", "normal"])
def test_a_fit_on_strict_partitions_in_process(solver):
    """Every round of an in-process fit on strict partitions: the coefficients of numpy's."""
    from daskglm.accounting.ledger import CommReport
    from daskglm.engine import LocalEngine
    from daskglm.model.penalties import make_penalty
    from daskglm.solvers import Problem, get_solver

    family = Gaussian() if solver == "normal" else Binomial()
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 4))
    y = (rng.uniform(size=600) < 0.4).astype(float)
    problem = Problem(family, make_penalty("l2", 0.01), True, 4)

    def fit(convert):
        parts = [(convert(X[:300]), convert(y[:300]), None),
                 (convert(X[300:]), convert(y[300:]), None)]
        engine = LocalEngine(parts, 4, ledger=CommReport())
        engine.validate(family)
        return get_solver(solver, problem, tol=1e-10, max_iter=100).solve(
            problem, engine, np.zeros(5))

    got, expected = fit(xs.asarray), fit(np.asarray)
    assert got.converged and expected.converged
    # Newton and the normal equations land on the optimum to round-off; L-BFGS stops at a
    # gradient of 1e-10, where summation orders of other libraries (seen with numpy 2.5)
    # can move its last step by a few 1e-10.
    agreement = 1e-8 if solver == "lbfgs" else 1e-10
    np.testing.assert_allclose(got.params, expected.params, rtol=0,
                               atol=agreement * np.abs(expected.params).max())
