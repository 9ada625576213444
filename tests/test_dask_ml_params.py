"""dask-ml's linear models' parameters on daskglm's (:mod:`daskglm.estimators.dask_ml_params`):
dask-ml's own tests and documented example (``dask_ml/tests/linear_model/test_glm.py``,
``docs/source/glm.rst``) with the import line switched, then the translation of its
penalty against scikit-learn's parametrisation of the same objectives."""

import dask.array as da
import numpy as np
import pytest
import sklearn.linear_model as slm
from sklearn import datasets
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from daskglm import LinearRegression, LogisticRegression, PoissonRegression

SOLVERS = ["admm", "newton", "lbfgs", "proximal_grad", "gradient_descent"]


# dask_ml.datasets' generators: scikit-learn's, as Dask arrays chunked by rows
def make_classification(n_samples=100, n_features=20, chunks=None, random_state=None,
                        **kwargs):
    X, y = datasets.make_classification(n_samples=n_samples, n_features=n_features,
                                        random_state=random_state, **kwargs)
    return da.from_array(X, chunks=chunks or n_samples), da.from_array(y, chunks=chunks
                                                                       or n_samples)


def make_regression(n_samples=100, n_features=100, chunks=None, random_state=None, **kwargs):
    X, y = datasets.make_regression(n_samples=n_samples, n_features=n_features,
                                    random_state=random_state, **kwargs)
    return da.from_array(X, chunks=chunks or n_samples), da.from_array(y, chunks=chunks
                                                                       or n_samples)


def make_counts(n_samples=1000, n_features=100, n_informative=2, scale=1.0, chunks=100,
                random_state=None):
    rng = np.random.RandomState(random_state)
    X = rng.normal(0, 1, size=(n_samples, n_features))
    coef = np.zeros(n_features)
    coef[rng.choice(n_features, n_informative, replace=False)] = rng.normal(0, scale,
                                                                           n_informative)
    y = rng.poisson(np.exp(X @ coef))
    return da.from_array(X, chunks=chunks), da.from_array(y, chunks=chunks)


class DoNothingTransformer:
    def fit(self, X, y=None):
        return self

    def transform(self, X, y=None):
        return X

    def fit_transform(self, X, y=None):
        return X

    def get_params(self, deep=True):
        return {}


# dask-ml's tests, unchanged but for the generators above ----------------------------------
def test_documented_example():
    X, y = make_classification(chunks=50)
    lr = LogisticRegression()
    lr.fit(X, y)
    assert lr.score(X, y) > 0.8


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", SOLVERS)
def test_fit_solver(solver):
    X, y = make_classification(n_samples=100, n_features=5, chunks=50)
    lr = LogisticRegression(solver=solver)
    lr.fit(X, y)
    assert lr.get_params()["solver"] == solver
    assert lr.solver_ == {"proximal_grad": "proximal", "gradient_descent": "gd"}.get(solver,
                                                                                     solver)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_lm(fit_intercept):
    X, y = make_regression(n_samples=100, n_features=5, chunks=50)
    lr = LinearRegression(fit_intercept=fit_intercept)
    lr.fit(X, y)
    lr.predict(X)
    if fit_intercept:
        assert lr.intercept_ is not None


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_big(fit_intercept):
    X, y = make_classification(chunks=50)
    lr = LogisticRegression(fit_intercept=fit_intercept)
    lr.fit(X, y)
    lr.decision_function(X)
    lr.predict(X)
    lr.predict_proba(X)
    if fit_intercept:
        assert lr.intercept_ is not None


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_poisson_fit(fit_intercept):
    X, y = make_counts(n_samples=100, chunks=500)
    pr = PoissonRegression(fit_intercept=fit_intercept)
    pr.fit(X, y)
    pr.predict(X)
    pr.get_deviance(X, y)
    if fit_intercept:
        assert pr.intercept_ is not None


def test_in_pipeline_and_gridsearch():
    X, y = make_classification(n_samples=100, n_features=5, chunks=50)
    pipe = make_pipeline(DoNothingTransformer(), LogisticRegression())
    pipe.fit(X, y)
    grid = {"logisticregression__C": [1000, 100, 10, 2]}
    search = GridSearchCV(pipe, grid, cv=3)
    search.fit(X.compute(), y.compute())
    assert search.best_params_["logisticregression__C"] in grid["logisticregression__C"]


def test_lr_score():
    X = da.from_array(np.arange(1000).reshape(1000, 1))
    lr = LinearRegression()
    lr.fit(X, X)
    assert lr.score(X, X) == pytest.approx(1, 0.001)


def test_logistic_predict_proba_shape():
    X, y = make_classification(n_samples=100, n_features=5, chunks=50)
    lr = LogisticRegression()
    lr.fit(X, y)
    assert lr.predict_proba(X).shape == (100, 2)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("reg_type, skl_reg_type, skl_params, data", [
    (LinearRegression, slm.LinearRegression, {}, "regression"),
    (LogisticRegression, slm.LogisticRegression, {"C": np.inf}, "classification"),
    (PoissonRegression, slm.PoissonRegressor, {"alpha": 0}, "counts"),
])
def test_model_against_sklearn(reg_type, skl_reg_type, skl_params, data, fit_intercept):
    """dask-ml's test (``penalty="none"`` is scikit-learn's ``C=inf`` today): its own
    tolerance, 1e-3, for a penalty of ``1 / C = 1e-8``."""
    make = {"regression": make_regression, "classification": make_classification,
            "counts": make_counts}[data]
    X, y = make(n_samples=100, n_features=5, chunks=100, random_state=0)
    model = reg_type(fit_intercept=fit_intercept, solver="newton", penalty="l2", C=1e8,
                     tol=1e-8)
    reference = skl_reg_type(fit_intercept=fit_intercept, **skl_params)
    model.fit(X, y)
    reference.fit(X.compute(), y.compute())
    np.testing.assert_allclose(model.predict(X), reference.predict(X.compute()), rtol=1e-3,
                               atol=1e-3)


@pytest.mark.parametrize("reg_type", [LinearRegression, LogisticRegression, PoissonRegression])
def test_model_coef_dask_numpy(reg_type):
    make = {LinearRegression: make_regression, LogisticRegression: make_classification,
            PoissonRegression: make_counts}[reg_type]
    X, y = make(n_samples=300, n_features=5, chunks=100, random_state=0)
    da_mod, np_mod = reg_type(fit_intercept=True, tol=1e-10), reg_type(fit_intercept=True,
                                                                       tol=1e-10)
    da_mod.fit(X, y)
    np_mod.fit(X.compute(), y.compute())
    # both to the same gradient tolerance from different partitions: 1e-6 relative
    np.testing.assert_allclose(da_mod.coef_, np_mod.coef_, rtol=1e-6)
    # (make_regression's intercept is zero: to rounding, absolutely)
    np.testing.assert_allclose(da_mod.intercept_, np_mod.intercept_, rtol=1e-6, atol=1e-10)


# the translation, against scikit-learn's parametrisation of dask-ml's objectives ----------
def _regression(n=400, seed=0):
    X, y = datasets.make_regression(n_samples=n, n_features=4, noise=5.0, random_state=seed)
    return X, y


@pytest.mark.parametrize("as_dask", [False, True])
def test_linear_l2_is_ridge_with_alpha_one_over_two_c(as_dask):
    X, y = _regression()
    C = 0.01
    data = (da.from_array(X, chunks=100), da.from_array(y, chunks=100)) if as_dask else (X, y)
    model = LinearRegression(penalty="l2", C=C).fit(*data)
    # dask-glm's loss is the residual sum of squares and its L2 regularizer |coef|^2 / 2
    reference = slm.Ridge(alpha=1 / (2 * C)).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-9)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, rtol=1e-9)
    through_kwargs = LinearRegression(solver_kwargs={"lamduh": 1 / C, "regularizer": "l2"})
    np.testing.assert_allclose(through_kwargs.fit(*data).coef_, reference.coef_, rtol=1e-9)


def test_linear_l1_is_lasso_with_alpha_one_over_two_n_c():
    X, y = _regression()
    C = 0.002
    model = LinearRegression(penalty="l1", C=C, solver="proximal_grad", tol=1e-10,
                             max_iter=5000).fit(X, y)
    reference = slm.Lasso(alpha=1 / (2 * len(y) * C), tol=1e-12, max_iter=100_000).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-6)


def test_poisson_regression_is_poisson_regressor_with_alpha_one_over_n_c():
    X, y = make_counts(n_samples=600, n_features=4, n_informative=2, chunks=150,
                       random_state=1)
    C = 0.05
    model = PoissonRegression(C=C, tol=1e-10).fit(X, y)
    reference = slm.PoissonRegressor(alpha=1 / (600 * C), tol=1e-12, max_iter=10_000).fit(
        X.compute(), y.compute())
    # both to their gradient tolerances: 1e-6 relative
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-6)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, rtol=1e-6)


def test_elastic_net_is_the_mean_of_l1_and_l2():
    X, y = _regression()
    C = 0.002
    model = LinearRegression(penalty="elastic_net", C=C, solver="proximal_grad", tol=1e-10,
                             max_iter=5000).fit(X, y)
    # (1 / C) (|coef|_1 + |coef|^2 / 2) / 2 against the residual sum of squares
    reference = slm.ElasticNet(alpha=1 / (2 * len(y) * C), l1_ratio=0.5, tol=1e-12,
                               max_iter=100_000).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-6)
    classifier = LogisticRegression(solver_kwargs={"regularizer": "elastic_net"})
    X, y = make_classification(n_samples=200, n_features=4, chunks=50, random_state=5)
    assert classifier.fit(X, y).get_params()["l1_ratio"] == LogisticRegression().l1_ratio


def test_logistic_c_and_lamduh_are_scikit_learns_c():
    X, y = make_classification(n_samples=500, n_features=4, chunks=125, random_state=2)
    reference = slm.LogisticRegression(C=0.1, tol=1e-12, max_iter=10_000).fit(X.compute(),
                                                                              y.compute())
    model = LogisticRegression(solver="lbfgs", tol=1e-10,
                               solver_kwargs={"lamduh": 10.0, "normalize": False}).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-6)


def test_parameters_are_stored_as_given_and_cloned():
    model = LogisticRegression(solver="proximal_grad", dual=True, intercept_scaling=3.0,
                               random_state=1, multi_class="ovr", n_jobs=4,
                               solver_kwargs={"max_iter": 7, "regularizer": "l1"})
    params = model.get_params()
    X, y = make_classification(n_samples=200, n_features=4, chunks=50, random_state=3)
    with pytest.warns(Warning):  # proximal gradient stops after the 7 iterations asked for
        model.fit(X, y)
    assert model.get_params() == params and clone(model).get_params() == params
    assert model.solver_ == "proximal" and model.n_iter_[0] <= 7
    assert model.set_params(solver="gradient_descent").get_params()["solver"] \
        == "gradient_descent"


@pytest.mark.parametrize("kwargs, message", [
    ({"rho": 2.0}, r"'rho'=2.0 has no daskglm equivalent: use solver_options"),
    ({"over_relax": 1.5}, r"adapts rho by residual balancing"),
    ({"abstol": 1e-3}, r"use tol"),
    ({"reltol": 1e-3}, r"use tol"),
    ({"normalize": True}, r"standardise X first"),
    ({"family": "Logistic"}, r"daskglm.GLM\(family=...\)"),
    ({"step": 1}, r"Unknown solver_kwargs key 'step'"),
])
def test_dask_glm_keywords_without_equivalent_are_refused_before_any_work(kwargs, message):
    X, y = make_classification(n_samples=50, n_features=4, n_informative=2, chunks=25)
    with pytest.raises(ValueError, match=message):
        LogisticRegression(solver="admm", solver_kwargs=kwargs).fit(X, y)


def test_our_solver_options_pass_through_solver_kwargs():
    X, y = make_classification(n_samples=200, n_features=4, chunks=50, random_state=4)
    model = LogisticRegression(solver="lbfgs", solver_kwargs={"memory": 3}).fit(X, y)
    assert model.solver_options_["memory"] == 3


def test_multi_class_ovr_refuses_three_classes_and_regressors_refuse_class_weight():
    X, y = make_classification(n_samples=300, n_features=5, n_informative=3, n_classes=3,
                               chunks=100, random_state=0)
    with pytest.raises(ValueError, match="OneVsRestClassifier"):
        LogisticRegression(multi_class="ovr").fit(X, y)
    assert LogisticRegression(multi_class="ovr").fit(X, (y > 0).astype(int)).coef_.shape \
        == (1, 5)
    with pytest.raises(ValueError, match="class_weight is for classifiers"):
        LinearRegression(class_weight="balanced").fit(X, y)
