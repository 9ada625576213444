"""The solvers tell the truth: ``converged_`` means the stated criterion held.

Every solver but averaging states one criterion: the largest violation of the first-order
optimality conditions (the largest gradient entry for smooth penalties) is at most ``tol``
at the returned point.  A solver that stops for any other reason (scipy's relative-decrease
test, a stall at round-off, an unverified average) returns ``converged_=False`` and the
estimator warns.

Tolerances, stated per test: coefficients ``max|coef - ref| / max|ref|`` against
scikit-learn, statsmodels or numpy's least squares run to round-off.
"""

import warnings

import dask.array as da
import numpy as np
import pytest
import statsmodels.api as sm
from sklearn import linear_model as sk
from sklearn.datasets import make_regression
from sklearn.exceptions import ConvergenceWarning

import daskglm
from daskglm.optim.linalg import solve_symmetric
from tests.conftest import make_data


def rel_error(coef, reference):
    return np.max(np.abs(np.ravel(coef) - np.ravel(reference))) / np.max(np.abs(reference))


def fit_quietly(model, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(*args, **kwargs)


def ridge_gradient(X, y, alpha, coef, intercept):
    """Gradient of ``|y - X coef - b|^2 / (2 n) + alpha / (2 n) |coef|^2``, in numpy."""
    n = len(y)
    residual = X @ coef + intercept - y
    return np.append(X.T @ residual / n + alpha / n * coef, residual.mean())


def solver_rounds(model):
    return [r.kind for r in model.comm_.records if r.kind != "validate"]


# 1. L-BFGS ------------------------------------------------------------------------------
def test_lbfgs_converged_means_the_gradient_met_tol():
    X, y = make_regression(100, 50, noise=0, bias=10, random_state=42)
    tol = 1e-12
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = daskglm.Ridge(alpha=1e-16, solver="lbfgs", tol=tol).fit(X, y)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    grad = ridge_gradient(X, y, 1e-16, model.coef_, model.intercept_)
    # converged_ is exactly the stated criterion, checked independently of the solver
    assert model.converged_ == (np.max(np.abs(grad)) <= 2 * tol)
    assert warned == (not model.converged_)
    assert model.history_[-1]["grad_norm"] == pytest.approx(np.max(np.abs(grad)), rel=1e-3,
                                                            abs=1e-14)
    expected = np.linalg.lstsq(np.column_stack([X, np.ones(len(y))]), y, rcond=None)[0]
    assert rel_error(model.coef_, expected[:-1]) <= 1e-9
    assert abs(model.intercept_ - expected[-1]) <= 1e-9 * abs(expected[-1])


# 2. rank decisions on the scaled system ---------------------------------------------------
@pytest.mark.parametrize("solver", ["newton", "gd"])
def test_intercept_moves_under_a_strong_penalty(solver):
    X, y = make_regression(50, 100, noise=0, bias=10, random_state=42)
    model = daskglm.Ridge(alpha=1e16, solver=solver, tol=1e-10, max_iter=500).fit(X, y)
    reference = sk.Ridge(alpha=1e16, solver="cholesky").fit(X, y)
    assert model.converged_
    assert abs(model.intercept_ - y.mean()) <= 1e-12 * abs(y.mean())
    assert abs(model.intercept_ - reference.intercept_) <= 1e-12 * abs(y.mean())
    assert rel_error(model.coef_, reference.coef_) <= 1e-6


def test_solve_symmetric_decides_rank_on_the_jacobi_scaled_matrix():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(30, 5))
    gram = A.T @ A / 30
    # a penalised block 1e16 times stiffer than the unpenalised last coordinate
    matrix = gram + np.diag([1e16] * 4 + [0.0])
    rhs = rng.normal(size=5)
    x, rank_deficient = solve_symmetric(matrix, rhs)
    assert not rank_deficient
    np.testing.assert_allclose(matrix @ x, rhs, rtol=1e-12, atol=1e-12 * np.abs(rhs).max())
    # a genuinely singular matrix still gets numpy's minimum-norm solution
    singular = np.column_stack([A, A[:, 0] + A[:, 1]])
    matrix = singular.T @ singular
    rhs = singular.T @ rng.normal(size=30)
    x, rank_deficient = solve_symmetric(matrix, rhs)
    assert rank_deficient
    np.testing.assert_allclose(x, np.linalg.lstsq(matrix, rhs, rcond=1e-12)[0], rtol=1e-8)


# 3. stalls -------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", ["gd", "newton", "proximal", "admm", "lbfgs"])
def test_solvers_at_tol_zero_stop_when_stalled_and_say_so(solver):
    X, y, _ = make_data("binomial", n=300, d=3)
    max_iter = 1000
    model = daskglm.LogisticRegression(C=1.0, solver=solver, tol=0, max_iter=max_iter)
    with pytest.warns(ConvergenceWarning, match="stalled|ABNORMAL"):
        model.fit(da.from_array(X, chunks=100), da.from_array(y, chunks=100))
    assert not model.converged_
    assert model.n_iter_ <= 200  # well before max_iter
    assert model.comm_.rounds <= 1000
    assert len(model.history_) == model.n_iter_
    reference = sk.LogisticRegression(C=1.0, tol=1e-14, max_iter=10_000).fit(X, y)
    assert rel_error(model.coef_, reference.coef_) <= 1e-6
    assert abs(model.intercept_[0] - reference.intercept_[0]) <= 1e-6


# 4. gd on badly scaled columns -------------------------------------------------------------
def test_gd_matches_statsmodels_on_unscaled_spector():
    data = sm.datasets.spector.load_pandas()
    X = data.exog[["GPA", "TUCE", "PSI"]].to_numpy()
    y = data.endog.to_numpy()
    reference = sm.Logit(y, sm.add_constant(X)).fit(disp=0, method="newton", tol=1e-14)
    model = daskglm.LogisticRegression(penalty=None, solver="gd", tol=1e-8, max_iter=5000)
    model.fit(X, y)
    assert model.converged_
    assert model.n_iter_ <= 300
    assert rel_error(model.coef_, reference.params[1:]) <= 1e-6
    assert abs(model.intercept_[0] - reference.params[0]) <= 1e-6 * abs(reference.params[0])


# 5. averaging ------------------------------------------------------------------------------
def chunked(X, y, n_parts):
    size = -(-len(y) // n_parts)
    return da.from_array(X, chunks=(size, -1)), da.from_array(y, chunks=size)


def test_averaging_without_a_check_does_not_claim_convergence():
    X, y = make_regression(100, 100, noise=1.0, random_state=0)
    with pytest.warns(ConvergenceWarning, match="global optimality not checked"):
        model = daskglm.Ridge(alpha=1.0, solver="averaging", tol=1e-10).fit(*chunked(X, y, 2))
    assert not model.converged_
    assert solver_rounds(model) == ["local_solve"]


def test_averaging_on_one_partition_converges_by_its_local_solve():
    X, y = make_regression(200, 5, noise=1.0, random_state=0)
    model = daskglm.Ridge(alpha=1.0, solver="averaging", tol=1e-10).fit(*chunked(X, y, 1))
    assert model.converged_
    assert rel_error(model.coef_, sk.Ridge(alpha=1.0).fit(X, y).coef_) <= 1e-8


def test_averaging_correction_verifies_global_optimality():
    # least squares: the Newton step from the average lands on the optimum
    X, y = make_regression(400, 5, noise=1.0, random_state=0)
    model = daskglm.Ridge(alpha=1.0, solver="averaging", tol=1e-8,
                          solver_options={"correction": "newton"}).fit(*chunked(X, y, 4))
    assert model.converged_
    assert solver_rounds(model) == ["local_solve", "hessian", "gradient"]
    assert model.history_[-1]["grad_norm"] <= 1e-8
    assert rel_error(model.coef_, sk.Ridge(alpha=1.0).fit(X, y).coef_) <= 1e-8
    # logistic: one Newton step does not reach tol=1e-12, and the check says so
    X, y, _ = make_data("binomial", n=400, d=4)
    model = daskglm.LogisticRegression(solver="averaging", tol=1e-12,
                                       solver_options={"correction": "newton"})
    with pytest.warns(ConvergenceWarning, match="global optimality"):
        model.fit(*chunked(X, y, 4))
    assert not model.converged_
    assert model.history_[-1]["grad_norm"] > 1e-12
