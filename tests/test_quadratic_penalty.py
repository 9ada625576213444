"""A quadratic penalty defined only here is solved by the normal equations as it is
written: none of its weights dropped (before, any quadratic penalty but ``L2`` was solved
with no penalty at all, silently)."""

import numpy as np
import pytest

from daskglm.accounting.ledger import CommReport
from daskglm.engine.local import LocalEngine
from daskglm.model.families import Gaussian
from daskglm.model.penalties import NonNegative, Penalty
from daskglm.solvers import Problem, get_solver


class ShiftedWeightedL2(Penalty):
    """``sum_j w_j / 2 (coef_j - c_j)^2``: weighted ridge towards a centre ``c``."""

    name = "shifted-weighted-l2"
    quadratic = True

    def __init__(self, weights, centre):
        self.weights, self.centre = np.asarray(weights, float), np.asarray(centre, float)

    def value(self, coef):
        return 0.5 * float(self.weights @ (coef - self.centre) ** 2) - self._at_zero()

    def _at_zero(self):
        return 0.5 * float(self.weights @ self.centre**2)

    def grad(self, coef):
        return self.weights * (coef - self.centre)

    def hess_diag(self, coef):
        return self.weights + 0.0 * coef

    def prox(self, coef, step):
        return (coef + step * self.weights * self.centre) / (1.0 + step * self.weights)


def _data(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) + rng.normal(size=d)
    y = X @ rng.normal(size=d) + 0.5 + rng.normal(size=n)
    return X, y


def _solve(problem, X, y):
    parts = [(X[:200], y[:200], None), (X[200:], y[200:], None)]
    engine = LocalEngine(parts, 2, ledger=CommReport())
    engine.validate(problem.family)
    return get_solver("normal", problem, tol=1e-10, max_iter=1).solve(
        problem, engine, np.zeros(problem.n_params))


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_normal_equations_take_any_quadratic_penalty(fit_intercept):
    X, y = _data()
    n, d = X.shape
    weights, centre = np.array([0.0, 0.5, 2.0, 0.1, 5.0]), np.array([1.0, -1.0, 0.0, 2.0, 0.5])
    problem = Problem(Gaussian(), ShiftedWeightedL2(weights, centre), fit_intercept, d)
    result = _solve(problem, X, y)
    # the minimiser of |y - X coef - b|^2 / (2 n) + sum w (coef - c)^2 / 2, in closed form
    A = np.column_stack([X, np.ones(n)]) if fit_intercept else X
    penalty = np.diag(np.append(weights, 0.0) if fit_intercept else weights) * n
    shift = (np.append(weights * centre, 0.0) if fit_intercept else weights * centre) * n
    expected = np.linalg.solve(A.T @ A + penalty, A.T @ y + shift)
    np.testing.assert_allclose(result.params, expected, rtol=1e-10, atol=1e-10)
    assert result.converged


def test_with_nonnegative_coefficients_the_penalty_is_kept_too():
    X, y = _data(seed=1)
    d = X.shape[1]
    inner = ShiftedWeightedL2(np.full(d, 50.0), np.full(d, 0.3))
    result = _solve(Problem(Gaussian(), NonNegative(inner), True, d), X, y)
    # a strong pull towards 0.3 keeps every coefficient near it, inside the orthant
    coef = result.params[:d]
    assert np.all(coef > 0) and np.max(np.abs(coef - 0.3)) < 0.2
    unconstrained = _solve(Problem(Gaussian(), inner, True, d), X, y)
    np.testing.assert_allclose(coef, unconstrained.params[:d], rtol=1e-8)
