"""fit_grid: many models of one estimator on one data set, their reads shared.  Each
model is the one a fit of its own gives (same optimum, to the stated tolerance), in far
fewer rounds than the separate fits."""

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import daskglm
from daskglm.accounting.kinds import Kind
from daskglm.compute import kernels
from daskglm.compute.kernels import loss_grad, loss_grads
from daskglm.model.families import Binomial, Poisson
from tests.conftest import make_data


def _assert_same_models(grid, separate, rtol):
    for model, alone in zip(grid.models, separate):
        np.testing.assert_allclose(model.coef_, alone.coef_, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(model.intercept_, alone.intercept_, rtol=rtol, atol=rtol)
        assert model.converged_


def test_a_grid_of_c_and_l1_ratio_gives_the_separate_fits_models_in_fewer_rounds(client):
    X, y, _ = make_data("binomial", n=4000, d=8)
    Xd, yd = da.from_array(X, chunks=(1000, 8)), da.from_array(y, chunks=1000)
    estimator = daskglm.LogisticRegression(tol=1e-9, max_iter=500)
    grid = {"C": [0.01, 0.1, 1.0], "l1_ratio": [0.0, 0.5]}
    fitted = daskglm.fit_grid(estimator, grid, Xd, yd)
    assert [model.get_params()["C"] for model in fitted.models] == \
        [setting["C"] for setting in fitted.params]
    separate = [daskglm.LogisticRegression(tol=1e-9, max_iter=500, **setting).fit(Xd, yd)
                for setting in fitted.params]
    # tol=1e-9 on the optimality criterion: the warm-started and the cold fits agree to
    # about its square root
    _assert_same_models(fitted, separate, rtol=1e-5)
    assert fitted.shared and len(fitted.paths) == 2
    assert fitted.comm_.count(Kind.VALIDATE) + fitted.comm_.count(Kind.VALIDATE_GRADIENT) == 1
    separate_rounds = sum(model.comm_.rounds for model in separate)
    assert fitted.comm_.rounds < 0.5 * separate_rounds
    for model in fitted.models:
        assert model.n_features_in_ == 8 and list(model.classes_) == [0, 1]
        assert model.comm_ is fitted.comm_
    assert [row["converged"] for row in fitted.summary()] == [True] * 6


def test_poisson_alpha_paths_on_sparse_rows_in_process():
    X, y, _ = make_data("poisson", n=3000, d=10)
    X[np.abs(X) < 0.8] = 0.0
    Xs = sp.csr_matrix(X)
    estimator = daskglm.PoissonRegressor(tol=1e-10, max_iter=1000)
    fitted = daskglm.fit_grid(estimator, {"alpha": [1.0, 0.1, 0.01]}, Xs, y)
    separate = [daskglm.PoissonRegressor(tol=1e-10, max_iter=1000, alpha=a).fit(Xs, y)
                for a in (1.0, 0.1, 0.01)]
    _assert_same_models(fitted, separate, rtol=1e-6)
    # one path, strongest penalty first, each fit started from the one before
    assert fitted.paths == [[0, 1, 2]]
    assert fitted.models[2].n_iter_ < separate[2].n_iter_


def test_the_multinomial_model_and_sample_weights():
    X, y, _ = make_data("binomial", n=3000, d=5)
    y = (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0).astype(int)
    weight = np.random.default_rng(0).uniform(0.5, 2.0, size=y.shape[0])
    estimator = daskglm.LogisticRegression(tol=1e-9, max_iter=500)
    fitted = daskglm.fit_grid(estimator, {"C": [0.1, 10.0]}, X, y, sample_weight=weight)
    separate = [daskglm.LogisticRegression(tol=1e-9, max_iter=500, C=C)
                .fit(X, y, sample_weight=weight) for C in (0.1, 10.0)]
    _assert_same_models(fitted, separate, rtol=1e-5)
    assert fitted.models[0].coef_.shape == (3, 5)


def test_a_fit_that_misses_tol_warns_and_says_so():
    X, y, _ = make_data("binomial", n=2000, d=6)
    with pytest.warns(ConvergenceWarning):
        fitted = daskglm.fit_grid(daskglm.LogisticRegression(max_iter=2, tol=1e-12),
                                  {"C": [1.0, 10.0]}, X, y)
    assert not any(model.converged_ for model in fitted.models)


def test_bad_grids_are_refused_before_any_work():
    X, y, _ = make_data("binomial", n=500, d=4)
    with pytest.raises(ValueError, match="class_weight"):
        daskglm.fit_grid(daskglm.LogisticRegression(), {"class_weight": [None]}, X, y)
    with pytest.raises(ValueError, match="C must be"):
        daskglm.fit_grid(daskglm.LogisticRegression(), {"C": [1.0, -1.0]}, X, y)
    with pytest.raises(TypeError, match="SGDClassifier"):
        daskglm.fit_grid(daskglm.SGDClassifier(), {"alpha": [1e-4]}, X, y)
    with pytest.raises(ValueError, match="no setting"):
        daskglm.fit_grid(daskglm.LogisticRegression(), [], X, y)


def test_the_estimator_given_is_left_unfitted():
    X, y, _ = make_data("gaussian", n=500, d=4)
    ridge = daskglm.Ridge()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fitted = daskglm.fit_grid(ridge, {"alpha": [0.1, 1.0]}, X, y)
    assert not hasattr(ridge, "coef_")
    assert all(model is not ridge for model in fitted.models)


@pytest.mark.parametrize("family", [Binomial(), Poisson()])
def test_several_models_on_a_csr_partition_are_the_single_models_sums_to_the_bit(family):
    rng = np.random.default_rng(1)
    X = sp.random(400, 30, density=0.2, format="csr", random_state=2)
    y = rng.integers(0, 2, 400).astype(float)
    weights = [None, rng.uniform(0, 2, 400), None, None, rng.uniform(0, 2, 400)]
    params = rng.normal(scale=0.3, size=(5, 31))
    assert kernels._csr_models_together(X) >= 5  # one batch: scipy's products of 5 vectors
    together = loss_grads(X, y, weights, params, family, True)
    for stats, weight, p in zip(together, weights, params):
        alone = loss_grad((X, y, weight), p, family, True)
        assert stats.loss == alone.loss and stats.weight == alone.weight
        np.testing.assert_array_equal(stats.grad, alone.grad)


def test_auto_keeps_a_grid_on_wide_sparse_rows_on_the_whole_vector():
    """From 2^18 columns ``solver="auto"`` fits L-BFGS on column shards, which keep state
    on the workers; in a grid it takes the whole vector, whose rounds the paths share."""
    rng = np.random.default_rng(3)
    # 20 random columns a row, built directly: scipy's sp.random draws its positions
    # from all 3000 x 2^18 cells, which took 90 s
    columns = rng.integers(0, 2**18, size=(3000, 20))
    X = sp.csr_matrix((rng.random(60_000), columns.ravel(), np.arange(0, 60_001, 20)),
                      shape=(3000, 2**18))
    X.sum_duplicates()
    y = (rng.random(3000) < 0.3).astype(float)
    fitted = daskglm.fit_grid(daskglm.LogisticRegression(), {"C": [0.1, 1.0]}, X, y)
    assert fitted.shared
    assert {model.solver_ for model in fitted.models} == {"lbfgs"}
    assert not any(model.solver_options_.get("sharded") for model in fitted.models)
    assert all(model.converged_ for model in fitted.models)
    assert not hasattr(fitted.models[0], "_in_grid")
