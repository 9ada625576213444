"""Optimisation problems: one shared objective each, and a tight reference solution.

Every method of a case is scored by the same numpy function, :meth:`Problem.objective`,
evaluated on the in-memory copy of the data; its relative gap to the reference optimum
(:func:`relative_gap`) is how close the method got.  Objectives are written on the
*sum* scale of scikit-learn's ``LogisticRegression`` (``C * sum loss + ||coef||^2 / 2``,
divided by ``C``); each method maps its own convention onto the problem's parameters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

__all__ = ["Solution", "Problem", "LogisticL2", "LeastSquares", "relative_gap"]

#: Rows per block when a reference solver walks over ``X``.
_BLOCK_ROWS = 65536


@dataclass
class Solution:
    """Coefficients and intercept (0.0 when none is fitted)."""

    coef: np.ndarray
    intercept: float = 0.0


def relative_gap(value, reference):
    """``(value - reference) / |reference|``; at most round-off below zero at the optimum."""
    return (float(value) - float(reference)) / abs(float(reference))


def _linear_predictor(X, solution):
    return X @ solution.coef + solution.intercept


def _blocks(n_rows):
    for start in range(0, n_rows, _BLOCK_ROWS):
        yield start, min(start + _BLOCK_ROWS, n_rows)


def _with_ones(X_block, fit_intercept):
    if not fit_intercept:
        return X_block
    return np.hstack([X_block, np.ones((X_block.shape[0], 1))])


def _split(params, fit_intercept):
    if fit_intercept:
        return Solution(params[:-1].copy(), float(params[-1]))
    return Solution(params.copy(), 0.0)


class Problem:
    """Base class of problems.

    Attributes
    ----------
    name : str
        Short name used in reports.
    target : str
        Which target of the data set the problem fits (see :data:`benchmarks.data.TARGETS`).
    fit_intercept : bool
    """

    name = "problem"
    target = "continuous"
    fit_intercept = False

    def objective(self, X, y, solution: Solution) -> float:
        """The objective at ``solution``, in numpy, on in-memory ``X`` and ``y``."""
        raise NotImplementedError

    def reference(self, X, y) -> Solution:
        """A solution accurate to round-off, computed in numpy independently of every method."""
        raise NotImplementedError

    def to_dict(self):
        """Name, description and parameters, as a plain dict."""
        return {"name": self.name, "description": self.describe(), **asdict(self)}

    def describe(self):
        """One line stating the objective."""
        raise NotImplementedError


@dataclass(frozen=True)
class LogisticL2(Problem):
    """Binary logistic regression with an L2 penalty, as scikit-learn's ``LogisticRegression``.

    Minimises ``sum_i [log(1 + exp(eta_i)) - y_i eta_i] + ||coef||^2 / (2 C)`` with
    ``eta = X @ coef (+ intercept)``; the intercept is not penalised.

    Parameters
    ----------
    C : float
        Inverse regularisation strength (scikit-learn's ``C``).
    fit_intercept : bool
    """

    C: float = 1.0
    fit_intercept: bool = False
    name = "logistic-l2"
    target = "binary"

    def describe(self):
        intercept = " + unpenalised intercept" if self.fit_intercept else ", no intercept"
        return f"sum log-loss + ||coef||^2 / (2 C), C = {self.C:g}{intercept}"

    def objective(self, X, y, solution):
        eta = _linear_predictor(X, solution)
        loss = np.sum(np.logaddexp(0.0, eta)) - float(y @ eta)
        return float(loss + 0.5 * float(solution.coef @ solution.coef) / self.C)

    def _penalty_diagonal(self, n_features):
        diagonal = np.full(n_features + int(self.fit_intercept), 1.0 / self.C)
        if self.fit_intercept:
            diagonal[-1] = 0.0
        return diagonal

    def _grad_hess(self, X, y, params):
        penalty = self._penalty_diagonal(X.shape[1])
        grad = penalty * params
        hess = np.diag(penalty)
        for start, stop in _blocks(X.shape[0]):
            X_b = _with_ones(X[start:stop], self.fit_intercept)
            prob = 0.5 * (1.0 + np.tanh(0.5 * (X_b @ params)))
            grad += X_b.T @ (prob - y[start:stop])
            hess += (X_b * (prob * (1.0 - prob))[:, None]).T @ X_b
        return grad, hess

    def reference(self, X, y, max_iter=50):
        """Damped Newton's method from zero, run until the Newton decrement is round-off."""
        params = np.zeros(X.shape[1] + int(self.fit_intercept))
        value = self.objective(X, y, _split(params, self.fit_intercept))
        for _ in range(max_iter):
            grad, hess = self._grad_hess(X, y, params)
            step = cho_solve(cho_factor(hess), grad)
            if float(grad @ step) <= 1e-15 * abs(value):
                params = params - step  # a last full step: the gap is now round-off
                break
            scale = 1.0
            while True:
                trial = params - scale * step
                trial_value = self.objective(X, y, _split(trial, self.fit_intercept))
                if trial_value <= value or scale < 1e-10:
                    break
                scale *= 0.5
            params, value = trial, trial_value
        return _split(params, self.fit_intercept)


@dataclass(frozen=True)
class LeastSquares(Problem):
    """Ordinary least squares: minimises ``||y - X @ coef - intercept||^2 / 2``.

    Parameters
    ----------
    fit_intercept : bool
    """

    fit_intercept: bool = True
    name = "ols"
    target = "continuous"

    def describe(self):
        intercept = " + intercept" if self.fit_intercept else ", no intercept"
        return f"||y - X coef||^2 / 2{intercept}"

    def objective(self, X, y, solution):
        residual = y - _linear_predictor(X, solution)
        return 0.5 * float(residual @ residual)

    def reference(self, X, y):
        """Least squares by LAPACK's SVD-based solver on ``[X, 1]``."""
        design = _with_ones(X, self.fit_intercept)
        params = np.linalg.lstsq(design, y, rcond=None)[0]
        return _split(params, self.fit_intercept)
