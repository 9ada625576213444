import numpy as np
import pytest

from daskglm.model.families import Binomial, Gaussian, Poisson, get_family

FAMILIES = [Gaussian(), Binomial(), Poisson()]
IDS = ["gaussian", "binomial", "poisson"]


def _target(family, eta, rng):
    if isinstance(family, Binomial):
        return (rng.uniform(size=eta.size) < 0.5).astype(float)
    if isinstance(family, Poisson):
        return rng.poisson(2.0, size=eta.size).astype(float)
    return rng.normal(size=eta.size)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_derivatives_match_finite_differences(family):
    rng = np.random.default_rng(0)
    eta = rng.normal(scale=2.0, size=50)
    y = _target(family, eta, rng)
    weight = rng.uniform(0.5, 2.0, size=50)
    h = 1e-6
    pointwise = lambda e: family.pointwise_loss(y, e) * weight  # noqa: E731
    numeric_d1 = (pointwise(eta + h) - pointwise(eta - h)) / (2 * h)
    np.testing.assert_allclose(family.dloss(y, eta, weight), numeric_d1, rtol=1e-6, atol=1e-8)
    numeric_d2 = (family.dloss(y, eta + h, weight) - family.dloss(y, eta - h, weight)) / (2 * h)
    np.testing.assert_allclose(family.d2loss(y, eta, weight), numeric_d2, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_fused_loss_and_derivative_agree(family):
    rng = np.random.default_rng(1)
    eta = rng.normal(scale=5.0, size=100)
    y = _target(family, eta, rng)
    loss, dloss = family.loss_and_dloss(y, eta)
    assert loss == pytest.approx(family.loss(y, eta), rel=1e-12)
    np.testing.assert_allclose(dloss, family.dloss(y, eta), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_finite_for_extreme_linear_predictor(family):
    eta = np.array([-1e3, -700.0, -30.0, 0.0, 30.0, 700.0, 1e3])
    y = np.ones_like(eta)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        values = [
            family.loss(y, eta),
            family.dloss(y, eta),
            family.d2loss(y, eta),
            family.loss_and_dloss(y, eta)[1],
            family.mean(eta),
        ]
    for value in values:
        assert np.all(np.isfinite(value))


def test_binomial_loss_is_log_loss():
    eta = np.array([-2.0, 0.0, 3.0])
    y = np.array([0.0, 1.0, 1.0])
    p = 1 / (1 + np.exp(-eta))
    expected = -(y * np.log(p) + (1 - y) * np.log(1 - p)).sum()
    assert Binomial().loss(y, eta) == pytest.approx(expected, rel=1e-12)


def test_poisson_deviance_matches_scikit_learn():
    from sklearn.metrics import mean_poisson_deviance

    rng = np.random.default_rng(2)
    y = rng.poisson(3.0, size=200).astype(float)
    mu = rng.uniform(0.5, 5.0, size=200)
    assert Poisson().deviance(y, mu) / 200 == pytest.approx(mean_poisson_deviance(y, mu), rel=1e-12)


def test_target_checks():
    with pytest.raises(ValueError, match="0, 1"):
        Binomial().check_target(np.array([0.0, 2.0]))
    with pytest.raises(ValueError, match="non-negative"):
        Poisson().check_target(np.array([1.0, -1.0]))
    Gaussian().check_target(np.array([-5.0, 5.0]))


def test_get_family():
    assert isinstance(get_family("logistic"), Binomial)
    assert isinstance(get_family(Poisson()), Poisson)
    with pytest.raises(ValueError, match="Unknown family"):
        get_family("gamma-ish")
