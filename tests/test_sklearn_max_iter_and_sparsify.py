"""scikit-learn conventions its own tests check: ``max_iter=None`` and ``max_iter=0``, list
targets for one-vs-rest SGD, ``n_iter_`` of LogisticRegression, the per-``l1_ratio`` solver
choice of LogisticRegressionCV, and ``sparsify()`` / ``densify()``."""

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import linear_model as sk
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning

import daskglm


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


def test_ridge_max_iter_none_is_the_solvers_default():
    X, y = make_regression(n_samples=200, n_features=5, noise=1.0, random_state=0)
    ours = daskglm.Ridge(alpha=2.0, max_iter=None).fit(X, y)
    theirs = sk.Ridge(alpha=2.0, max_iter=None).fit(X, y)
    assert_allclose(ours.coef_, theirs.coef_, rtol=1e-8, atol=1e-10)
    assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-8, atol=1e-10)
    assert ours.converged_


@pytest.mark.parametrize("solver", ["lbfgs", "newton", "gd", "proximal"])
@pytest.mark.parametrize("multinomial", [False, True])
def test_logistic_max_iter_zero_returns_the_start(iris, solver, multinomial):
    X, y = iris
    y = y if multinomial else y == 2
    with pytest.warns(ConvergenceWarning, match="max_iter=0"):
        model = daskglm.LogisticRegression(max_iter=0, solver=solver).fit(X, y)
    assert not model.converged_
    assert_array_equal(model.n_iter_, [0])
    assert_array_equal(model.coef_, np.zeros_like(model.coef_))
    assert_array_equal(model.intercept_, np.zeros_like(model.intercept_))
    # as scikit-learn's (non-lbfgs solvers, which also stay at the start)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        theirs = sk.LogisticRegression(max_iter=0, solver="newton-cg").fit(X, y)
    assert_allclose(model.predict_proba(X), theirs.predict_proba(X), atol=1e-12)


@pytest.mark.parametrize("max_iter", [-1, 1.5, True, "10"])
def test_bad_max_iter_is_refused(iris, max_iter):
    X, y = iris
    with pytest.raises(ValueError, match="max_iter must be an integer >= 0 or None"):
        daskglm.LogisticRegression(max_iter=max_iter).fit(X, y == 2)


def test_sgd_classifier_list_target_one_vs_rest(iris):
    X, y = iris
    from_list = daskglm.SGDClassifier(random_state=0).fit(X, list(y))
    from_array = daskglm.SGDClassifier(random_state=0).fit(X, y)
    assert from_list.coef_.shape == (3, 4)
    assert_array_equal(from_list.classes_, [0, 1, 2])
    assert_array_equal(from_list.coef_, from_array.coef_)
    assert (from_list.predict(X) == y).mean() > 0.6
    partial_list = daskglm.SGDClassifier(random_state=0).partial_fit(X, list(y), classes=[0, 1, 2])
    partial_array = daskglm.SGDClassifier(random_state=0).partial_fit(X, y, classes=[0, 1, 2])
    assert_array_equal(partial_list.coef_, partial_array.coef_)


@pytest.mark.parametrize("multinomial", [False, True])
def test_logistic_n_iter_shape_matches_scikit_learn(iris, multinomial):
    X, y = iris
    y = y if multinomial else y == 2
    ours = daskglm.LogisticRegression(max_iter=500).fit(X, y)
    theirs = sk.LogisticRegression(max_iter=500).fit(X, y)
    assert isinstance(ours.n_iter_, np.ndarray)
    assert ours.n_iter_.shape == theirs.n_iter_.shape == (1,)
    assert ours.n_iter_.dtype == theirs.n_iter_.dtype
    assert 1 <= ours.n_iter_[0] == len(ours.history_) <= 500


def test_logistic_cv_auto_chooses_the_solver_per_l1_ratio():
    X, y = make_classification(n_samples=300, n_features=6, random_state=0)
    grid = {"Cs": [0.1, 1.0], "l1_ratios": [0.0, 0.5, 1.0], "cv": 3, "tol": 1e-8}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (ConvergenceWarning, FutureWarning))
        ours = daskglm.LogisticRegressionCV(**grid, max_iter=1000).fit(X, y)
        theirs = sk.LogisticRegressionCV(**grid, solver="saga", max_iter=10000).fit(X, y)
    assert ours.n_iter_.shape == theirs.n_iter_.shape == (1, 3, 2, 3)
    assert_allclose(ours.C_, theirs.C_)
    assert_allclose(ours.l1_ratio_, theirs.l1_ratio_)
    assert_allclose(ours.scores_[1], theirs.scores_[1], atol=1e-6)
    assert_allclose(ours.coef_, theirs.coef_, atol=1e-6)
    # each grid point's own solver: the smooth point a smooth solver, the others one that
    # handles L1 (the fits at l1_ratio 0.5 and 1 would fail with the smooth one)
    assert ours.solver_ in {"lbfgs", "newton"}


def _fitted(name, X, y):
    return {
        "logistic": lambda: daskglm.LogisticRegression(max_iter=500).fit(X, y),
        "sgd_classifier": lambda: daskglm.SGDClassifier(random_state=0).fit(X, y),
        "sgd_regressor": lambda: daskglm.SGDRegressor(random_state=0).fit(X, X[:, 0]),
    }[name]()


@pytest.mark.parametrize("name", ["logistic", "sgd_classifier", "sgd_regressor"])
@pytest.mark.parametrize("multiclass", [False, True])
def test_sparsify_and_densify(iris, name, multiclass):
    X, y = iris
    y = y if multiclass else y == 2
    model = _fitted(name, X, y)
    dense, predicted = model.coef_.copy(), model.predict(X)
    scores = model.decision_function(X) if hasattr(model, "decision_function") else None
    assert model.sparsify() is model and sp.issparse(model.coef_)
    assert_array_equal(model.coef_.toarray().reshape(dense.shape), dense)
    for X_kind in (X, sp.csr_matrix(X), da.from_array(X, chunks=50)):
        assert_allclose(np.asarray(model.predict(X_kind)), predicted, rtol=1e-12)
        if scores is not None:
            assert_allclose(np.asarray(model.decision_function(X_kind)), scores, rtol=1e-12)
    assert model.densify() is model
    assert isinstance(model.coef_, np.ndarray)
    assert_array_equal(model.coef_, dense)


def test_sparsify_like_scikit_learn(iris):
    X, y = iris
    ours = daskglm.LogisticRegression(max_iter=500).fit(X, y).sparsify()
    theirs = sk.LogisticRegression(max_iter=500).fit(X, y).sparsify()
    assert type(ours.coef_) is type(theirs.coef_)
    assert ours.coef_.shape == theirs.coef_.shape


def test_warm_start_after_sparsify(iris):
    X, y = iris
    model = daskglm.LogisticRegression(max_iter=500, warm_start=True).fit(X, y == 2)
    first = model.coef_.copy()
    model.sparsify().fit(X, y == 2)
    assert isinstance(model.coef_, np.ndarray)
    assert model.n_iter_[0] <= 1
    assert_allclose(model.coef_, first, atol=1e-4)


@pytest.mark.parametrize("max_iter", [0, None])
@pytest.mark.parametrize("Estimator", [daskglm.SGDClassifier, daskglm.SGDRegressor])
def test_sgd_refuses_max_iter_zero_and_none_as_scikit_learn(Estimator, max_iter):
    X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    with pytest.raises(ValueError, match="max_iter"):
        getattr(sk, Estimator.__name__)(max_iter=max_iter).fit(X, y)
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1"):
        Estimator(max_iter=max_iter).fit(X, y)
