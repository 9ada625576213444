import numpy as np
import pytest
from scipy.optimize import minimize

from daskglm.model.penalties import L1, L2, ElasticNet, NoPenalty, make_penalty

PENALTIES = [NoPenalty(), L2(0.7), L1(0.3), ElasticNet(0.5, 0.4)]
IDS = ["none", "l2", "l1", "elasticnet"]


@pytest.mark.parametrize("penalty", PENALTIES, ids=IDS)
def test_prox_is_the_minimiser(penalty):
    rng = np.random.default_rng(0)
    point = rng.normal(size=7)
    step = 0.8
    prox = penalty.prox(point, step)

    def objective(z):
        return penalty.value(z) + np.sum((z - point) ** 2) / (2 * step)

    best = minimize(objective, point, method="Powell", options={"xtol": 1e-12, "ftol": 1e-14}).x
    assert objective(prox) <= objective(best) + 1e-10
    # any perturbation makes it worse
    for _ in range(20):
        assert objective(prox) <= objective(prox + 1e-4 * rng.normal(size=7)) + 1e-14


@pytest.mark.parametrize("penalty", PENALTIES, ids=IDS)
def test_smooth_gradient(penalty):
    coef = np.array([0.5, -1.5, 2.0])
    h = 1e-6
    numeric = np.array(
        [(penalty.smooth_value(coef + h * e) - penalty.smooth_value(coef - h * e)) / (2 * h)
         for e in np.eye(3)]
    )
    np.testing.assert_allclose(penalty.grad(coef), numeric, rtol=1e-6, atol=1e-9)


def test_elastic_net_value_is_the_mix():
    coef = np.array([1.0, -2.0])
    assert ElasticNet(2.0, 0.25).value(coef) == pytest.approx(2.0 * (0.25 * 3 + 0.75 / 2 * 5))


def test_subgradient_distance_zero_at_lasso_optimum():
    # min 0.5 * (z - 3)^2 + |z|  ->  z = 2; min 0.5 * (z - 0.5)^2 + |z| -> z = 0
    penalty = L1(1.0)
    coef = np.array([2.0, 0.0])
    smooth_grad = coef - np.array([3.0, 0.5])
    np.testing.assert_allclose(penalty.subgradient_distance(coef, smooth_grad), 0.0, atol=1e-15)


def test_make_penalty():
    assert isinstance(make_penalty("l2", 1.0), L2)
    assert isinstance(make_penalty("elasticnet", 1.0, 0.0), L2)
    assert isinstance(make_penalty("elasticnet", 1.0, 1.0), L1)
    assert isinstance(make_penalty("l1", 0.0), NoPenalty)
    with pytest.raises(ValueError, match="l1_ratio"):
        make_penalty("elasticnet", 1.0, 1.5)
    with pytest.raises(ValueError, match=">= 0"):
        make_penalty("l2", -1.0)
    with pytest.raises(ValueError, match="Unknown penalty"):
        make_penalty("l3", 1.0)
