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
from daskglm.solvers.normal import solve_symmetric

from .conftest import make_data


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
