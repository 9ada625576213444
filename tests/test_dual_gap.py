"""Lasso and ElasticNet stop on scikit-learn's duality gap and report it as ``dual_gap_``.

References: scikit-learn's own gap, evaluated at daskglm's coefficients (a warm-started
scikit-learn fit with a huge ``tol`` returns its gap at the start point without
iterating), and scikit-learn's coefficients at the same ``tol``.
"""

import dask.array as da
import numpy as np
import pytest
from sklearn import linear_model as sk
from sklearn.datasets import make_regression

import daskglm
from daskglm.solvers.duality_gap import DualityGap

ESTIMATORS = [("Lasso", {"alpha": 0.5}), ("ElasticNet", {"alpha": 0.5, "l1_ratio": 0.3})]


def _regression(weighted, seed=0):
    X, y = make_regression(n_samples=80, n_features=10, n_informative=5, noise=2.0,
                           bias=3.0, random_state=seed)
    y = y / np.std(y)
    weights = np.random.RandomState(seed + 1).uniform(0.2, 3.0, y.shape[0]) if weighted else None
    return X, y, weights


def _sklearn_gap_at(name, params, coef, X, y, weights, fit_intercept):
    """scikit-learn's ``dual_gap_`` at ``coef``: its gap check before the first sweep."""
    reference = getattr(sk, name)(**params, fit_intercept=fit_intercept, warm_start=True,
                                  tol=1e300, max_iter=1)
    reference.coef_ = np.array(coef, dtype=float)
    reference.fit(X, y, sample_weight=weights)
    np.testing.assert_array_equal(reference.coef_, coef)  # it did not iterate
    return reference.dual_gap_


def _tol_scale(y, weights, fit_intercept):
    """``mean_W (y - ybar)^2`` (``mean_W y^2`` without an intercept)."""
    w = np.ones_like(y) if weights is None else weights
    centre = np.average(y, weights=w) if fit_intercept else 0.0
    return np.average((y - centre) ** 2, weights=w)


@pytest.mark.parametrize("name, params", ESTIMATORS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_gap_is_sklearns_and_bounds_the_fit(name, params, weighted, fit_intercept):
    X, y, weights = _regression(weighted)
    ours = getattr(daskglm, name)(**params, fit_intercept=fit_intercept).fit(X, y, weights)
    reference_gap = _sklearn_gap_at(name, params, ours.coef_, X, y, weights, fit_intercept)
    np.testing.assert_allclose(ours.dual_gap_, reference_gap, rtol=1e-10, atol=1e-12)
    assert ours.converged_
    assert -1e-12 <= ours.dual_gap_ <= ours.tol * _tol_scale(y, weights, fit_intercept)


@pytest.mark.parametrize("name, params", ESTIMATORS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_coef_matches_sklearn_at_default_tol(name, params, weighted, fit_intercept):
    X, y, weights = _regression(weighted, seed=3)
    ours = getattr(daskglm, name)(**params, fit_intercept=fit_intercept).fit(X, y, weights)
    reference = getattr(sk, name)(**params, fit_intercept=fit_intercept).fit(X, y, weights)
    # both stop at gap <= tol * scale; their distance is bounded by sqrt(2 * gaps / curvature)
    np.testing.assert_allclose(ours.coef_, reference.coef_, atol=2e-3)
    np.testing.assert_allclose(ours.intercept_, reference.intercept_, atol=2e-3)


def test_sklearn_toy_data_at_default_tol():
    """scikit-learn's test_lasso_toy / test_enet_toy data and their decimal=3 tolerance."""
    X = np.array([[-1.0], [0.0], [1.0]])
    y = np.array([-1.0, 0.0, 1.0])
    T = np.array([[2.0], [3.0], [4.0]])
    for alpha, coef, pred in [(0.1, 0.85, [1.7, 2.55, 3.4]), (0.5, 0.25, [0.5, 0.75, 1.0]),
                              (1.0, 0.0, [0.0, 0.0, 0.0])]:
        model = daskglm.Lasso(alpha=alpha).fit(X, y)
        np.testing.assert_array_almost_equal(model.coef_, [coef], decimal=3)
        np.testing.assert_array_almost_equal(model.predict(T), pred, decimal=3)
        assert model.dual_gap_ >= 0
    X = np.array([[-1.0, 0.0], [0.0, 1.0], [1.0, 2.0]]) * 1.0
    y = np.array([-1.0, 0.0, 1.0])
    model = daskglm.ElasticNet(alpha=0.5, l1_ratio=0.3).fit(X, y)
    reference = sk.ElasticNet(alpha=0.5, l1_ratio=0.3).fit(X, y)
    np.testing.assert_array_almost_equal(model.coef_, reference.coef_, decimal=3)
    assert model.dual_gap_ <= model.tol * np.var(y)


def test_zero_solution_has_zero_gap():
    """Above alpha_max the solution is zero and scikit-learn's gap there is 0 (test_lasso_zero)."""
    X, y, _ = _regression(False)
    model = daskglm.Lasso(alpha=1e3).fit(X, y)
    np.testing.assert_array_equal(model.coef_, 0.0)
    assert model.n_iter_ == 0 and model.converged_
    np.testing.assert_allclose(model.dual_gap_, 0.0, atol=1e-12)
    np.testing.assert_allclose(model.intercept_, np.mean(y), rtol=1e-12)


def test_intercept_is_optimal_for_the_coefficients():
    """The gap is that of the centred problem; the intercept returned is the optimal one for
    ``coef_`` (the weighted mean residual is zero), as scikit-learn's."""
    X, y, weights = _regression(True)
    for start in (None, 0.4):  # a cold start, and a warm start from another alpha's fit
        model = daskglm.Lasso(alpha=0.3, warm_start=True)
        if start is not None:
            model.set_params(alpha=start).fit(X, y, weights)
            model.set_params(alpha=0.3)
        model.fit(X, y, weights)
        residual = y - X @ model.coef_ - model.intercept_
        assert abs(np.average(residual, weights=weights)) <= 1e-12 * np.abs(y).max()


def test_positive_gap_is_sklearns():
    X, y, weights = _regression(True)
    # solver="auto" picks L-BFGS-B for positive=True, which reports no gap
    ours = daskglm.Lasso(alpha=0.1, positive=True, solver="proximal").fit(X, y, weights)
    assert np.all(ours.coef_ >= 0)
    reference = sk.Lasso(alpha=0.1, positive=True, warm_start=True, tol=1e300, max_iter=1)
    reference.coef_ = ours.coef_.copy()
    reference.fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(ours.dual_gap_, reference.dual_gap_, rtol=1e-10, atol=1e-12)


def test_other_families_keep_the_subgradient_rule():
    """Only Gaussian L1 / elastic-net problems get the gap rule."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(100, 3))
    y = rng.poisson(np.exp(X @ [0.3, -0.2, 0.1]))
    model = daskglm.GLM(family="poisson", penalty="l1", alpha=0.01, solver="proximal").fit(X, y)
    assert not hasattr(model, "dual_gap_")
    assert model.history_[-1]["grad_norm"] <= model.tol


def test_scale_from_a_warm_start_costs_one_round():
    """A start with non-zero coefficients needs one gradient round at zero for the scale."""
    X, y, _ = _regression(False)
    model = daskglm.Lasso(alpha=0.05, warm_start=True).fit(X, y)
    cold_gap = model.dual_gap_
    model.set_params(alpha=0.04).fit(X, y)
    reference_gap = _sklearn_gap_at("Lasso", {"alpha": 0.04}, model.coef_, X, y, None, True)
    np.testing.assert_allclose(model.dual_gap_, reference_gap, rtol=1e-10, atol=1e-12)
    assert model.converged_ and cold_gap >= 0


def test_gap_formula_needs_no_intercept_at_its_optimum():
    """The centred residual is recovered from the intercept's gradient: the gap at
    ``(coef, b)`` does not depend on ``b``."""
    X, y, weights = _regression(True)
    means = np.average(X, axis=0, weights=weights)
    gap = DualityGap(0.2, 0.1, False, means, X.shape[0])
    coef = np.linspace(-1, 1, X.shape[1])
    values = []
    for intercept in (0.0, 2.5):
        residual = y - X @ coef - intercept
        loss = 0.5 * np.average(residual ** 2, weights=weights)
        grad = -np.append(X.T @ (weights * residual), (weights * residual).sum()) / weights.sum()
        values.append(gap.gap(np.append(coef, intercept), loss, grad))
    np.testing.assert_allclose(values[0], values[1], rtol=1e-12)


@pytest.mark.parametrize("name, params", ESTIMATORS)
def test_local_cluster_gives_the_same(client, name, params):
    X, y, weights = _regression(True)
    local = getattr(daskglm, name)(**params).fit(X, y, weights)
    distributed = getattr(daskglm, name)(**params, solver="proximal").fit(
        da.from_array(X, chunks=(25, 10)), da.from_array(y, chunks=25),
        da.from_array(weights, chunks=25))
    np.testing.assert_allclose(distributed.coef_, local.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(distributed.dual_gap_, local.dual_gap_, rtol=1e-7, atol=1e-12)
    assert distributed.converged_ and distributed.n_iter_ == local.n_iter_
