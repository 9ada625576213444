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


@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy", "dask"])
def test_a_poisson_path_with_exposure_is_its_fits_by_hand_with_the_offset(as_dask):
    """``GLMCV(family="poisson").fit(X, y, exposure=e)``, as glmnet's and H2O's paths take
    an offset: each fold's held-out deviance is that of the fit by hand on the training
    rows with ``offset = log(e)``, scored with the held-out rows' offset (1e-6); the top
    of the grid zeroes every coefficient of the fit with the offset; the refit is
    ``GLM.fit(X, y, exposure=e)`` at the chosen alpha."""
    import dask.array as da

    X, y, _ = make_data("poisson", n=1500, d=5)
    rng = np.random.default_rng(3)
    exposure = rng.uniform(0.2, 3.0, len(y))
    y = rng.poisson(exposure * np.exp(0.3 * X[:, 0] - 0.2 * X[:, 1] - 0.5)).astype(float)
    folds = KFold(3)
    data = (da.from_array(X, chunks=400), da.from_array(y, chunks=400),
            da.from_array(exposure, chunks=400)) if as_dask else (X, y, exposure)
    model = daskglm.GLMCV(family="poisson", alphas=6, eps=1e-2, cv=folds, tol=1e-10).fit(
        data[0], data[1], exposure=data[2])
    family = daskglm.Poisson()
    offset = np.log(exposure)
    by_hand = np.empty((6, 3))
    for k, (train, test) in enumerate(folds.split(X)):
        for a, alpha in enumerate(model.alphas_):
            fit = daskglm.GLM(family="poisson", penalty="l1", alpha=alpha, tol=1e-10,
                              max_iter=10_000).fit(X[train], y[train], offset=offset[train])
            eta = X[test] @ fit.coef_ + fit.intercept_ + offset[test]
            by_hand[a, k] = np.mean(family.pointwise_loss(y[test], eta))
    np.testing.assert_allclose(model.deviance_path_, by_hand, rtol=1e-6)
    top = daskglm.GLM(family="poisson", penalty="l1", alpha=model.alphas_[0], tol=1e-10).fit(
        X, y, exposure=exposure)
    below = daskglm.GLM(family="poisson", penalty="l1", alpha=0.9 * model.alphas_[0],
                        tol=1e-10).fit(X, y, exposure=exposure)
    assert np.abs(top.coef_).max() < 1e-8 < np.abs(below.coef_).max()
    refit = daskglm.GLM(family="poisson", penalty="l1", alpha=model.alpha_, tol=1e-10).fit(
        X, y, exposure=exposure)
    np.testing.assert_allclose(model.coef_, refit.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(model.predict(X, exposure=exposure)),
                               refit.predict(X, exposure=exposure), rtol=1e-6)


def test_the_gaussian_path_with_an_offset_runs_through_the_engine():
    """The folds' Gram statistics hold no offset: with one, the squared-error path is
    fitted like any family's, and equals the path of ``y - offset`` without one."""
    X, y, _ = make_data("gaussian", n=600, d=6)
    offset = np.random.default_rng(4).normal(size=len(y))
    ours = daskglm.GLMCV(family="gaussian", alphas=6, cv=KFold(3), tol=1e-10).fit(
        X, y, offset=offset)
    shifted = daskglm.GLMCV(family="gaussian", alphas=6, cv=KFold(3), tol=1e-10).fit(
        X, y - offset)
    np.testing.assert_allclose(ours.alphas_, shifted.alphas_, rtol=1e-10)
    np.testing.assert_allclose(ours.deviance_path_, shifted.deviance_path_, rtol=1e-6)
    np.testing.assert_allclose(ours.coef_, shifted.coef_, rtol=1e-6, atol=1e-8)


def test_an_offset_and_an_exposure_together_are_refused():
    X, y, _ = make_data("poisson", n=100, d=3)
    with pytest.raises(ValueError, match="offset or exposure"):
        daskglm.GLMCV(family="poisson", alphas=3).fit(X, y, offset=np.zeros(100),
                                                      exposure=np.ones(100))
