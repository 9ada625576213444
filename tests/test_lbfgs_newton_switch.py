"""``solver="auto"``'s L-BFGS hands over to Newton's method mid-fit where its progress
says Newton's would be cheaper (``newton_after``): on a strong signal (labels nearly
separable, the curvature concentrated on the rows near the boundary, which the columns'
covariance does not see) L-BFGS needed 14 iterations where Newton's method needs 7."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import daskglm
from daskglm.solvers.lbfgs import LBFGS, SwitchToNewton


def _strong_signal(n=200_000, d=30):
    """30 columns, two of them correlated; labels of a logistic model with large
    coefficients."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    X[:, 1] = X[:, 0] + 0.3 * rng.normal(size=n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ (3 * rng.normal(size=d))))))
    return X, y.astype(float)


def _objective(model, X, y):
    """scikit-learn's objective at ``C = 1`` over ``n``: mean log loss + |coef|^2 / (2 n)."""
    coef = model.coef_.ravel()
    eta = X @ coef + model.intercept_[0]
    return float(np.mean(np.logaddexp(0, eta) - y * eta) + coef @ coef / (2 * len(y)))


def test_the_rule_switches_on_slow_progress_only():
    slow = SwitchToNewton(tol=1e-4, ratio=2.5)
    assert not any(slow.after(np.zeros(2), v) for v in (1.0, 0.7, 0.5, 0.35))
    assert slow.after(np.ones(2), 0.25)  # 1.4x an iteration: 24 rounds left > 8.6
    assert "Hessian rounds" in slow.reason and np.array_equal(slow.theta, np.ones(2))
    fast = SwitchToNewton(tol=1e-4, ratio=2.5)
    assert not any(fast.after(np.zeros(2), v) for v in (1.0, 0.1, 1e-2, 1e-3, 5e-4))


def test_auto_switches_to_newton_and_reaches_its_optimum():
    X, y = _strong_signal()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        auto = daskglm.LogisticRegression().fit(X, y)
        newton = daskglm.LogisticRegression(solver="newton", tol=1e-10).fit(X, y)
    assert auto.solver_ == "lbfgs" and auto.converged_
    value, reason = auto.comm_.choices["switch"]
    assert value == "newton" and "Hessian rounds" in reason
    assert auto.comm_.count("hessian") >= 1
    assert auto.solver_options_["newton_after"] == pytest.approx(2 + 31 * 2e9 / (8 * 1.75e10))
    # the stated criterion at the point returned: the largest gradient entry <= tol (the
    # columns' scales are 1); the objective then 4e-5 above the optimum's, relative
    coef = auto.coef_.ravel()
    eta = X @ coef + auto.intercept_[0]
    residual = 1 / (1 + np.exp(-eta)) - y
    grad = np.r_[X.T @ residual + coef, residual.sum()] / len(y)
    assert np.max(np.abs(grad)) <= 1e-4
    assert _objective(auto, X, y) - _objective(newton, X, y) <= 1e-4 * _objective(newton, X, y)
    plain = daskglm.LogisticRegression(solver="lbfgs").fit(X, y)
    assert int(np.max(plain.n_iter_)) > int(np.max(auto.n_iter_)) or \
        plain.comm_.count("gradient") > auto.comm_.count("gradient")


def test_a_well_conditioned_fit_stays_with_lbfgs():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200_000, 10))
    y = (rng.uniform(size=200_000) < 1 / (1 + np.exp(-X @ (rng.normal(size=10) / 3)))).astype(float)
    model = daskglm.LogisticRegression(solver="lbfgs",
                                       solver_options={"newton_after": 2.5}).fit(X, y)
    assert "switch" not in model.comm_.choices
    assert model.comm_.count("hessian") == 0 and model.converged_


def test_the_option_is_checked():
    with pytest.raises(ValueError, match="newton_after"):
        LBFGS(newton_after=0.0)
