"""Every estimator x solver against scikit-learn / statsmodels on the same objective.

Tolerance: relative coefficient error ``max|coef - ref| / max|ref| <= 1e-6`` with both
solvers run to tight tolerances (gradient entries <= 1e-10 here, 1e-12 in the reference).
"""

import numpy as np
import pytest
import scipy.optimize
from sklearn import linear_model as sk
from sklearn.exceptions import ConvergenceWarning

import daskglm
from daskglm.engine import make_engine
from daskglm.model.families import Binomial, Gaussian
from daskglm.model.penalties import L2, ElasticNet, NoPenalty
from daskglm.model.problem import Feature
from daskglm.solvers import SOLVERS, Problem, get_solver
from tests.conftest import make_data

RTOL = 1e-6
TIGHT = {"tol": 1e-10, "max_iter": 5000}


def rel_error(coef, reference):
    return np.max(np.abs(np.ravel(coef) - np.ravel(reference))) / np.max(np.abs(reference))


def check_same(model, reference, rtol=RTOL):
    assert model.converged_
    assert rel_error(model.coef_, reference.coef_) <= rtol
    scale = max(1.0, abs(float(np.ravel(reference.intercept_)[0])))
    assert abs(float(np.ravel(model.intercept_)[0] - np.ravel(reference.intercept_)[0])) <= rtol * scale


@pytest.mark.parametrize("solver", ["normal", "gd", "lbfgs"])
@pytest.mark.parametrize("weights", [False, True], ids=["unweighted", "weighted"])
def test_linear_regression(solver, weights):
    X, y, w = make_data("gaussian", weights=weights)
    model = daskglm.LinearRegression(solver=solver, **TIGHT).fit(X, y, sample_weight=w)
    check_same(model, sk.LinearRegression().fit(X, y, sample_weight=w))


@pytest.mark.parametrize("solver", ["normal", "gd", "lbfgs"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
def test_ridge(solver, fit_intercept):
    X, y, w = make_data("gaussian", weights=True)
    model = daskglm.Ridge(alpha=30.0, solver=solver, fit_intercept=fit_intercept, **TIGHT)
    model.fit(X, y, sample_weight=w)
    reference = sk.Ridge(alpha=30.0, fit_intercept=fit_intercept, solver="cholesky")
    check_same(model, reference.fit(X, y, sample_weight=w))


@pytest.mark.parametrize("solver", ["gd", "lbfgs"])
@pytest.mark.parametrize("C", [0.05, 10.0])
def test_logistic_regression(solver, C):
    X, y, w = make_data("binomial", weights=True)
    model = daskglm.LogisticRegression(C=C, solver=solver, **TIGHT).fit(X, y, sample_weight=w)
    reference = sk.LogisticRegression(C=C, tol=1e-12, max_iter=10_000)
    check_same(model, reference.fit(X, y, sample_weight=w))


@pytest.mark.parametrize("solver", ["gd", "lbfgs"])
def test_unpenalised_logistic_regression(solver):
    X, y, _ = make_data("binomial")
    model = daskglm.LogisticRegression(penalty=None, solver=solver, **TIGHT).fit(X, y)
    reference = sk.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X, y)
    check_same(model, reference)


@pytest.mark.parametrize("solver", ["gd", "lbfgs"])
@pytest.mark.parametrize("alpha", [0.0, 0.1])
def test_poisson_regressor(solver, alpha):
    X, y, w = make_data("poisson", weights=True)
    model = daskglm.PoissonRegressor(alpha=alpha, solver=solver, **TIGHT).fit(X, y, sample_weight=w)
    reference = sk.PoissonRegressor(alpha=alpha, tol=1e-12, max_iter=10_000)
    check_same(model, reference.fit(X, y, sample_weight=w))


@pytest.mark.parametrize("solver", ["gd", "lbfgs"])
def test_poisson_against_statsmodels(solver):
    import statsmodels.api as sm

    X, y, _ = make_data("poisson")
    model = daskglm.PoissonRegressor(alpha=0.0, solver=solver, **TIGHT).fit(X, y)
    result = sm.GLM(y, sm.add_constant(X), family=sm.families.Poisson()).fit(tol=1e-12)
    assert rel_error(model.coef_, result.params[1:]) <= RTOL
    assert model.intercept_ == pytest.approx(result.params[0], rel=RTOL)


@pytest.mark.parametrize("solver", ["normal", "lbfgs"])
def test_glm_gaussian_elastic_convention(solver):
    X, y, _ = make_data("gaussian")
    model = daskglm.GLM("gaussian", "l2", alpha=0.5, solver=solver, **TIGHT).fit(X, y)
    # glmnet convention: mean loss + alpha / 2 |coef|^2  ==  Ridge(alpha * n)
    check_same(model, sk.Ridge(alpha=0.5 * len(y)).fit(X, y))


def test_normal_equations_rank_deficient_gives_minimum_norm():
    X, y, _ = make_data("gaussian", d=4)
    X = np.column_stack([X, X[:, 0] + X[:, 1], 2 * X[:, 2]])
    model = daskglm.LinearRegression(solver="normal").fit(X, y)
    centred = X - X.mean(0)
    expected = np.linalg.lstsq(centred, y - y.mean(), rcond=None)[0]
    np.testing.assert_allclose(model.coef_, expected, rtol=1e-8, atol=1e-10)
    assert model.history_[0]["rank_deficient"]
    reference = sk.LinearRegression().fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-6, atol=1e-8)


def test_normal_takes_exactly_one_round():
    X, y, _ = make_data("gaussian")
    model = daskglm.LinearRegression(solver="normal").fit(X, y)
    kinds = [r.kind for r in model.comm_.records]
    assert kinds == ["validate_gram"]  # the data check and the Gram: ONE round
    assert model.n_iter_ == 1


def test_lbfgs_takes_one_round_per_evaluation(monkeypatch):
    X, y, _ = make_data("binomial")
    evaluations = []
    minimize = scipy.optimize.minimize

    def counting_minimize(*args, **kwargs):
        result = minimize(*args, **kwargs)
        evaluations.append(result.nfev)
        return result

    monkeypatch.setattr(scipy.optimize, "minimize", counting_minimize)
    model = daskglm.LogisticRegression(solver="lbfgs", tol=1e-8).fit(X, y)
    # the first evaluation is computed in the validation round
    assert evaluations and model.comm_.count("validate_gradient") == 1
    assert model.comm_.count("gradient") + 1 == evaluations[0] == model.comm_.rounds


def _badly_scaled(seed=1, n=5000, d=10):
    """Columns whose scales run from 1e-2 to 1e3 and offsets from 1 to 1e4."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.logspace(-2, 3, d) + np.logspace(0, 4, d)
    eta = ((X - X.mean(0)) / X.std(0)) @ rng.normal(size=d)
    return X, (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)


def test_lbfgs_iterates_in_standardised_coordinates_on_badly_scaled_columns():
    """Unequal scales and offsets stall L-BFGS in the raw coordinates (it runs all 300
    iterations); in standardised ones it converges in a few, to scikit-learn's
    coefficients (unpenalised, so the same objective), with the criterion on the raw
    gradient."""
    X, y = _badly_scaled()
    reference = sk.LogisticRegression(C=np.inf, tol=1e-12, max_iter=100_000,
                                      solver="newton-cholesky").fit(X, y)
    model = daskglm.LogisticRegression(C=np.inf, solver="lbfgs", tol=1e-8, max_iter=300)
    model.fit(X, y)
    assert model.converged_ and model.n_iter_[0] <= 30
    assert model.history_[-1]["grad_norm"] <= 1e-8
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-5)
    raw = daskglm.LogisticRegression(C=np.inf, solver="lbfgs", tol=1e-8, max_iter=300,
                                     solver_options={"standardize": False})
    with pytest.warns(ConvergenceWarning):
        raw.fit(X, y)
    assert not raw.converged_


def test_lbfgs_standardize_is_checked():
    X, y, _ = make_data("binomial", n=50)
    with pytest.raises(ValueError, match="standardize"):
        daskglm.LogisticRegression(solver="lbfgs",
                                   solver_options={"standardize": "yes"}).fit(X, y)


def test_every_gd_trial_point_is_a_round():
    X, y, _ = make_data("binomial")
    model = daskglm.LogisticRegression(solver="gd", tol=1e-8, max_iter=500).fit(X, y)
    assert model.comm_.count("gradient") >= model.n_iter_ + 1
    assert model.history_[-1]["rounds"] == model.comm_.rounds


def test_unsupported_solver_names_the_able_ones():
    X, y, _ = make_data("binomial")
    with pytest.raises(ValueError, match=r"normal.*squared error.*binomial.*solvers that can: \[.*lbfgs"):
        daskglm.LogisticRegression(solver="normal").fit(X, y)
    problem = Problem(Gaussian(), L2(1.0), True, 3)
    with pytest.raises(ValueError, match="Unknown option"):
        get_solver("lbfgs", problem, tol=1e-4, max_iter=10, options={"memroy": 3})


def test_history_records_every_iteration():
    X, y, _ = make_data("binomial")
    model = daskglm.LogisticRegression(solver="lbfgs", tol=1e-8).fit(X, y)
    assert len(model.history_) == model.n_iter_
    objectives = [h["objective"] for h in model.history_]
    assert all(b <= a + 1e-12 for a, b in zip(objectives, objectives[1:]))
    assert set(model.history_[0]) >= {"objective", "grad_norm", "step", "seconds", "rounds"}
    # scipy also stops when the objective no longer changes in its 14th digit
    assert model.history_[-1]["grad_norm"] <= 1e-7


def test_solver_registry_declares_capabilities():
    smooth_binomial = Problem(Binomial(), NoPenalty(), True, 3)
    able = {name for name, cls in SOLVERS.items() if cls.unsupported(smooth_binomial) is None}
    assert {"gd", "lbfgs"} <= able and "normal" not in able
    lasso = Problem(Gaussian(), ElasticNet(0.1, 1.0), True, 3)
    assert lasso.features() == {Feature.NON_QUADRATIC_PENALTY, Feature.NONSMOOTH_PENALTY}
    able = {name for name, cls in SOLVERS.items() if cls.unsupported(lasso) is None}
    assert able == {name for name, cls in SOLVERS.items()
                    if Feature.NONSMOOTH_PENALTY in cls.handles}
    assert able >= {"proximal", "admm", "newton"} and not able & {"normal", "lbfgs", "gd"}
    assert Problem(Gaussian(), L2(1.0), True, 3).features() == frozenset()


def test_solvers_run_on_an_engine_directly():
    X, y, _ = make_data("binomial")
    problem = Problem(Binomial(), L2(0.01), True, X.shape[1])
    with make_engine(X, y, family=problem.family, client=None, n_partitions=3) as engine:
        result = get_solver("lbfgs", problem, tol=1e-10, max_iter=500).solve(
            problem, engine, np.zeros(problem.n_params)
        )
    assert result.converged
    reference = sk.LogisticRegression(C=1 / (0.01 * len(y)), tol=1e-12, max_iter=10_000).fit(X, y)
    assert rel_error(result.params[:-1], reference.coef_) <= RTOL
