"""GLMCV: a regularisation path with cross-validation for any family (glum's path with CV,
H2O's lambda search), against per-alpha fits made by hand on the same folds."""

import numpy as np
import pytest
from sklearn.model_selection import KFold

import daskglm
from tests.conftest import make_data


def test_the_gaussian_path_is_lasso_cv():
    X, y, _ = make_data("gaussian", n=600, d=8)
    ours = daskglm.GLMCV(family="gaussian", alphas=12, cv=KFold(4), tol=1e-9).fit(X, y)
    lasso = daskglm.LassoCV(alphas=12, cv=KFold(4), tol=1e-9).fit(X, y)
    assert ours.alpha_ == lasso.alpha_
    np.testing.assert_allclose(ours.coef_, lasso.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.deviance_path_, lasso.mse_path_ / 2, rtol=1e-12)


def test_a_poisson_path_chooses_the_alpha_of_least_held_out_deviance():
    X, y, _ = make_data("poisson", n=1500, d=6)
    folds = KFold(3)
    model = daskglm.GLMCV(family="poisson", alphas=8, eps=1e-2, cv=folds, tol=1e-10).fit(X, y)
    assert model.deviance_path_.shape == (8, 3)
    family = daskglm.Poisson()
    by_hand = np.empty((8, 3))
    for k, (train, test) in enumerate(folds.split(X)):
        for a, alpha in enumerate(model.alphas_):
            fit = daskglm.GLM(family="poisson", penalty="l1", alpha=alpha, tol=1e-10,
                              max_iter=10_000).fit(X[train], y[train])
            eta = X[test] @ fit.coef_ + fit.intercept_
            by_hand[a, k] = np.mean(family.pointwise_loss(y[test], eta))
    np.testing.assert_allclose(model.deviance_path_, by_hand, rtol=1e-6)
    assert model.alpha_ == model.alphas_[np.argmin(by_hand.mean(axis=1))]
    # the top of the grid is the smallest alpha that zeroes every coefficient
    top = daskglm.GLM(family="poisson", penalty="l1", alpha=model.alphas_[0], tol=1e-10).fit(X, y)
    below = daskglm.GLM(family="poisson", penalty="l1", alpha=0.9 * model.alphas_[0],
                        tol=1e-10).fit(X, y)
    assert np.abs(top.coef_).max() < 1e-8 < np.abs(below.coef_).max()


@pytest.mark.parametrize("family", ["binomial", "gamma"])
def test_other_families_fit_a_path(family):
    kind = {"binomial": "binomial", "gamma": "poisson"}[family]
    X, y, _ = make_data(kind, n=800, d=5)
    if family == "gamma":
        y = y + 0.5  # positive targets
    model = daskglm.GLMCV(family=family, link="log" if family == "gamma" else None,
                          alphas=6, cv=3).fit(X, y)
    assert model.deviance_path_.shape == (6, 3) and np.isfinite(model.deviance_path_).all()
    assert model.alpha_ in model.alphas_
