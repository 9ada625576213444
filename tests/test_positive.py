"""``positive=True``: non-negative coefficients, equal to scikit-learn's.

References: scikit-learn's ``positive=True`` fits (its NNLS for LinearRegression, its
coordinate descent at tol=1e-14 for Lasso and ElasticNet), and for Ridge scipy's exact
``nnls`` on the augmented least-squares system (scikit-learn's own positive ridge runs
L-BFGS-B to about 1e-8).  Tolerances: 1e-8 on the coefficients for the exact solvers and
L-BFGS/proximal gradient at tol=1e-10, 1e-6 for ADMM.
"""

import dask.array as da
import numpy as np
import pytest
import scipy.optimize
from sklearn import linear_model as sk
from sklearn.base import clone

import daskglm
from daskglm.model.penalties import L1, L2, NonNegative, NoPenalty
from daskglm.optim.linalg import solve_nonnegative


def _data(n=500, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2, size=d) + rng.normal(size=d)
    y = X @ np.array([1.0, -2.0, 0.5, -0.3, 2.0, -1.0])[:d] + rng.normal(size=n) + 1.0
    return X, y, rng.uniform(0.2, 3.0, size=n)


def _ridge_reference(X, y, w, alpha):
    """Exact positive ridge with an intercept: NNLS on the weighted, centred system."""
    mean_x, mean_y = w @ X / w.sum(), w @ y / w.sum()
    root = np.sqrt(w)[:, None]
    A = np.vstack([root * (X - mean_x), np.sqrt(alpha) * np.eye(X.shape[1])])
    b = np.concatenate([root[:, 0] * (y - mean_y), np.zeros(X.shape[1])])
    coef = scipy.optimize.nnls(A, b)[0]
    return coef, mean_y - mean_x @ coef


CASES = {
    "LinearRegression": (daskglm.LinearRegression(), sk.LinearRegression(positive=True)),
    "Lasso": (daskglm.Lasso(alpha=0.05),
              sk.Lasso(alpha=0.05, positive=True, tol=1e-14, max_iter=100_000)),
    "ElasticNet": (daskglm.ElasticNet(alpha=0.05, l1_ratio=0.3),
                   sk.ElasticNet(alpha=0.05, l1_ratio=0.3, positive=True, tol=1e-14,
                                 max_iter=100_000)),
    "Ridge": (daskglm.Ridge(alpha=10.0), None),
}
SOLVERS = {
    "LinearRegression": ["normal", "lbfgs", "proximal", "admm"],
    "Ridge": ["normal", "lbfgs", "proximal", "admm"],
    "Lasso": ["lbfgs", "proximal", "admm"],
    "ElasticNet": ["lbfgs", "proximal", "admm"],
}


@pytest.mark.parametrize("name,solver", [(n, s) for n in CASES for s in SOLVERS[n]])
def test_positive_coefficients_equal_scikit_learn(name, solver):
    X, y, w = _data()
    ours, reference = CASES[name]
    if reference is None:
        coef, intercept = _ridge_reference(X, y, w, ours.alpha)
    else:
        reference = clone(reference).fit(X, y, sample_weight=w)
        coef, intercept = reference.coef_, reference.intercept_
    assert np.any(coef == 0) and np.all(coef >= 0)  # the constraint is active
    model = clone(ours).set_params(positive=True, solver=solver, tol=1e-10, max_iter=5000)
    model.fit(X, y, sample_weight=w)
    assert model.converged_ and model.solver_ == solver
    assert np.all(model.coef_ >= 0)
    atol = 1e-6 if solver == "admm" else 1e-8
    np.testing.assert_allclose(model.coef_, coef, atol=atol)
    np.testing.assert_allclose(model.intercept_, intercept, atol=10 * atol)


def test_auto_picks_a_solver_that_honours_positive():
    X, y, w = _data()
    assert daskglm.LinearRegression(positive=True).fit(X, y).solver_ == "normal"
    assert daskglm.Ridge(positive=True).fit(X, y).solver_ == "normal"
    assert daskglm.Lasso(alpha=0.05, positive=True).fit(X, y).solver_ == "lbfgs"


def test_positive_normal_equations_take_one_gram_round():
    X, y, _ = _data()
    free = daskglm.LinearRegression().fit(X, y)
    bounded = daskglm.LinearRegression(positive=True).fit(X, y)
    assert [r.kind for r in bounded.comm_.records] == [r.kind for r in free.comm_.records]
    assert bounded.comm_.rounds == 1  # validation and Gram in one round


def test_positive_without_intercept_and_for_a_glm():
    X, y, w = _data()
    ref = sk.LinearRegression(positive=True, fit_intercept=False).fit(X, y, sample_weight=w)
    ours = daskglm.LinearRegression(positive=True, fit_intercept=False).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-9)
    # Poisson with an L2 penalty: scipy's L-BFGS-B on the same objective as the reference
    rng = np.random.default_rng(1)
    Xp = rng.normal(size=(400, 4))
    yp = rng.poisson(np.exp(Xp @ np.array([0.5, -0.5, 0.2, -0.1]) + 0.3)).astype(float)
    alpha = 0.01

    def objective(params):
        eta = Xp @ params[:4] + params[4]
        mu = np.exp(eta)
        value = np.mean(mu - yp * eta) + 0.5 * alpha * params[:4] @ params[:4]
        grad = np.append(Xp.T @ (mu - yp) / len(yp) + alpha * params[:4], np.mean(mu - yp))
        return value, grad

    found = scipy.optimize.minimize(objective, np.zeros(5), jac=True, method="L-BFGS-B",
                                    bounds=[(0, None)] * 4 + [(None, None)],
                                    options={"gtol": 1e-12, "ftol": 0, "maxiter": 10_000})
    model = daskglm.GLM("poisson", alpha=alpha, positive=True, tol=1e-10).fit(Xp, yp)
    assert model.solver_ == "lbfgs" and model.converged_
    np.testing.assert_allclose(model.coef_, found.x[:4], atol=1e-7)
    assert model.coef_[1] == 0 and model.coef_[3] == 0


@pytest.mark.parametrize("solver", ["gd", "newton", "averaging"])
def test_solvers_that_cannot_keep_coefficients_non_negative_say_so(solver):
    X, y, _ = _data()
    with pytest.raises(ValueError, match="non-negative"):
        daskglm.Ridge(positive=True, solver=solver).fit(X, y)


def test_bad_positive_is_rejected():
    X, y, _ = _data()
    with pytest.raises(ValueError, match="positive must be True or False"):
        daskglm.LinearRegression(positive="yes").fit(X, y)


@pytest.mark.parametrize("solver", ["normal", "lbfgs", "proximal"])
def test_positive_on_a_cluster_equals_one_numpy_partition(client, solver):
    X, y, w = _data(n=1200)
    model = daskglm.Lasso(alpha=0.05, positive=True, solver="lbfgs", tol=1e-10) \
        if solver != "normal" else daskglm.Ridge(alpha=3.0, positive=True)
    model.set_params(solver=solver)
    local = clone(model).fit(X, y, sample_weight=w)
    chunks = (300, 500, 400)
    distributed = clone(model).fit(da.from_array(X, chunks=(chunks, -1)),
                                   da.from_array(y, chunks=chunks),
                                   sample_weight=da.from_array(w, chunks=chunks))
    assert distributed.comm_.records[-1].tasks >= 1
    np.testing.assert_allclose(distributed.coef_, local.coef_, atol=1e-9)
    np.testing.assert_allclose(distributed.intercept_, local.intercept_, atol=1e-9)


def test_nonnegative_least_squares_from_the_gram_matrix():
    rng = np.random.default_rng(3)
    for d in (1, 5, 20):
        A = rng.normal(size=(50, d))
        b = rng.normal(size=50)
        expected = scipy.optimize.nnls(A, b)[0]
        found, rank_deficient = solve_nonnegative(A.T @ A, A.T @ b)
        assert not rank_deficient
        np.testing.assert_allclose(found, expected, atol=1e-10)
    # a singular Gram matrix (a repeated column) still gives a feasible minimiser
    A = np.column_stack([A[:, :3], A[:, 0]])
    found, _ = solve_nonnegative(A.T @ A, A.T @ b)
    expected = scipy.optimize.nnls(A, b)[0]
    assert np.all(found >= 0)
    np.testing.assert_allclose(A @ found, A @ expected, atol=1e-10)


def test_nonnegative_penalty_prox_and_optimality():
    coef = np.array([-1.0, 0.05, 2.0])
    for inner in (NoPenalty(), L2(0.5), L1(0.1)):
        penalty = NonNegative(inner)
        np.testing.assert_array_equal(penalty.prox(coef, 1.0),
                                      np.maximum(inner.prox(coef, 1.0), 0.0))
        assert penalty.alpha == getattr(inner, "alpha", 0.0)
    penalty = NonNegative(L1(0.1))
    # at zero a gradient >= -l1 is optimal; away from zero the gradient must be -l1
    np.testing.assert_allclose(penalty.subgradient_distance(np.array([0.0, 0.0, 1.0]),
                                                            np.array([-0.05, -0.3, -0.1])),
                               [0.0, 0.2, 0.0], atol=1e-15)
