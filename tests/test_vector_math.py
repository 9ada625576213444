"""The vectorisable ``exp`` and ``log1p`` against the C library (numpy), and the chunked
gradient loop against the one-pass loop for every family with a compiled loss."""

import numpy as np
import pytest

from daskglm.compute import fused_loops, loss_codes
from daskglm.compute.vector_math import EXP_FLOOR, exp_into, log1p_unit
from daskglm.model.families import Binomial, Gamma, Gaussian, NegativeBinomial, Poisson, Tweedie


def _exp(values):
    x = np.array(values, dtype=np.float64)
    exp_into(x, x.size, np.empty(x.size), np.empty(x.size, dtype=np.int64))
    return x


def _ulps(actual, expected):
    return np.abs(actual - expected) / np.spacing(np.abs(expected))


def test_exp_is_within_one_ulp_of_the_c_library():
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.uniform(EXP_FLOOR, 709.0, 200_000), rng.normal(scale=3.0, size=200_000),
        rng.uniform(-1e-8, 1e-8, 1000),
        # around the reduction's rounding points k ln 2 +- ln 2 / 2, and the ends
        np.log(2.0) * (np.arange(-1021, 1023) + 0.5), [0.0, -0.0, 1e-300, -1e-300, EXP_FLOOR, 709.0],
    ])
    x = x[(x >= EXP_FLOOR) & (x <= 709.0)]
    assert _ulps(_exp(x), np.exp(x)).max() <= 1.0


def test_exp_is_zero_below_its_floor_and_keeps_nan():
    x = [EXP_FLOOR - 1e-9, -745.0, -1e5, -np.inf, np.nan]
    result = _exp(x)
    assert np.array_equal(result[:4], np.zeros(4))
    assert np.isnan(result[4])
    # what the C library gives there: below 3.4e-308, or 0
    assert np.exp(EXP_FLOOR) < 3.4e-308


def test_exp_handles_a_part_of_a_buffer():
    x = np.array([1.0, 2.0, 3.0])
    exp_into(x, 2, np.empty(3), np.empty(3, dtype=np.int64))
    np.testing.assert_allclose(x, [np.e, np.e ** 2, 3.0], rtol=1e-15)


def test_log1p_is_within_one_ulp_of_the_c_library():
    rng = np.random.default_rng(1)
    edge = np.sqrt(2.0) - 1.0
    e = np.concatenate([
        rng.uniform(0.0, 1.0, 200_000), np.exp(-rng.uniform(0.0, 40.0, 100_000)),
        np.nextafter(edge, 0.0) - np.arange(50) * 1e-16, edge + np.arange(50) * 1e-16,
        [0.0, 5e-324, 1e-300, 1e-17, 2 ** -53, 0.5, 1.0],
    ])
    result = np.array([log1p_unit(value) for value in e])
    expected = np.log1p(e)
    positive = expected > 0
    assert _ulps(result[positive], expected[positive]).max() <= 1.0
    assert np.array_equal(result[~positive], expected[~positive])
    assert np.isnan(log1p_unit(np.nan))


def _loops(family, n, d, dtype, weighted, offset, scale):
    rng = np.random.default_rng(family)
    X = rng.normal(size=(n, d)).astype(dtype)
    coef = rng.normal(scale=scale / np.sqrt(d), size=d)
    eta = X @ coef
    counts = rng.poisson(np.exp(np.minimum(eta, 5.0))).astype(float)
    y = {loss_codes.GAUSSIAN: eta + rng.normal(size=n),
         loss_codes.BINOMIAL: (rng.uniform(size=n) < 0.5).astype(float),
         loss_codes.POISSON: counts,
         loss_codes.GAMMA_LOG: counts + 0.5,
         loss_codes.TWEEDIE_LOG: counts,
         loss_codes.NEGATIVE_BINOMIAL_LOG: counts}[family]
    parameters = {loss_codes.TWEEDIE_LOG: 1.5, loss_codes.NEGATIVE_BINOMIAL_LOG: 0.7}
    parameter = parameters.get(family, 0.0)  # the Tweedie power, the negative binomial's alpha
    weight = rng.uniform(0.0, 2.0, size=n) if weighted else np.empty(0)
    offsets = rng.uniform(-1.0, 1.0, size=n) if offset else np.empty(0)
    grad = np.zeros(d)
    loss, intercept_grad = fused_loops.rows_in_chunks(X, y, weight, offsets, coef, 0.3, family,
                                                      parameter, grad)
    # the family's own array code, in float64 and numpy's order of summation
    model = {loss_codes.GAUSSIAN: Gaussian(), loss_codes.BINOMIAL: Binomial(),
             loss_codes.POISSON: Poisson(), loss_codes.GAMMA_LOG: Gamma("log"),
             loss_codes.TWEEDIE_LOG: Tweedie(power=1.5),
             loss_codes.NEGATIVE_BINOMIAL_LOG: NegativeBinomial(alpha=0.7)}[family]
    eta = X.astype(np.float64) @ coef + 0.3
    if offset:
        eta += offsets
    expected_loss, residual = model.loss_and_dloss(y, eta, weight if weighted else None)
    expected = (float(expected_loss), X.astype(np.float64).T @ residual, float(residual.sum()))
    return expected, (loss, grad, intercept_grad)


@pytest.mark.parametrize("family", [loss_codes.GAUSSIAN, loss_codes.BINOMIAL,
                                    loss_codes.POISSON, loss_codes.GAMMA_LOG,
                                    loss_codes.TWEEDIE_LOG,
                                    loss_codes.NEGATIVE_BINOMIAL_LOG])
@pytest.mark.parametrize("shape", [(1, 3), (1001, 7), (777, 300)])  # 300 columns: chunks of 54 rows
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted, offset", [(False, False), (True, True)])
def test_chunked_loop_equals_the_family_array_code(family, shape, dtype, weighted, offset):
    (loss, grad, intercept_grad), (loss2, grad2, intercept_grad2) = _loops(
        family, *shape, dtype, weighted, offset, scale=2.0)
    np.testing.assert_allclose(loss2, loss, rtol=1e-13)
    np.testing.assert_allclose(grad2, grad, rtol=1e-13, atol=1e-13 * np.abs(grad).max())
    np.testing.assert_allclose(intercept_grad2, intercept_grad, rtol=1e-13,
                               atol=1e-13 * np.abs(grad).max())


@pytest.mark.parametrize("family", [loss_codes.BINOMIAL, loss_codes.POISSON])
def test_chunked_loop_at_extreme_predictors(family):
    # predictors up to about +-900: the binomial's exp underflows, Poisson's is continued
    (loss, grad, intercept_grad), (loss2, grad2, intercept_grad2) = _loops(
        family, 2000, 10, np.float64, True, False, scale=300.0)
    np.testing.assert_allclose(loss2, loss, rtol=1e-13)
    np.testing.assert_allclose(grad2, grad, rtol=1e-13, atol=1e-13 * np.abs(grad).max())
    np.testing.assert_allclose(intercept_grad2, intercept_grad, rtol=1e-13,
                               atol=1e-13 * np.abs(grad).max())
