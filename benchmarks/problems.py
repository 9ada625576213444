"""Optimisation problems: one shared objective each, and a tight reference solution.

Every method of a case is scored by the same numpy function, :meth:`Problem.objective`,
evaluated on the in-memory copy of the data (dense or CSR); its relative gap to the
reference optimum (:func:`relative_gap`) is how close the method got.  Objectives are
written on the *sum* scale (a sum over rows plus the penalty), without additive constants
that would make a relative gap depend on a convention: the log-loss, half the residual sum
of squares, half the Poisson deviance.  Each method maps its own convention onto the
problem's parameters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve
from scipy.special import xlogy

__all__ = ["Solution", "Problem", "LogisticL2", "LeastSquares", "PoissonL2", "relative_gap"]

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
    return np.asarray(X @ solution.coef).ravel() + solution.intercept


def _blocks(n_rows):
    for start in range(0, n_rows, _BLOCK_ROWS):
        yield start, min(start + _BLOCK_ROWS, n_rows)


def _with_ones(X_block, fit_intercept):
    if not fit_intercept:
        return X_block
    ones = np.ones((X_block.shape[0], 1))
    if sp.issparse(X_block):
        return sp.hstack([X_block, sp.csr_matrix(ones)], format="csr")
    return np.hstack([X_block, ones])


def _weighted_gram(X_block, weights):
    """``X_block.T @ diag(weights) @ X_block`` as a dense array (dense or CSR blocks)."""
    if sp.issparse(X_block):
        return np.asarray((X_block.T @ X_block.multiply(weights[:, None])).todense())
    return (X_block * weights[:, None]).T @ X_block


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


class _NewtonReference:
    """Damped Newton's method on the sum-scale objective, for smooth convex problems.

    Subclasses give the per-row first and second derivatives of the loss in the linear
    predictor (:meth:`_derivatives`) and the penalty's diagonal (:meth:`_penalty_diagonal`).
    """

    def _derivatives(self, eta, y):
        raise NotImplementedError

    def _penalty_diagonal(self, n_features, n_samples):
        raise NotImplementedError

    def _grad_hess(self, X, y, params):
        diagonal = self._penalty_diagonal(X.shape[1], X.shape[0])
        grad = diagonal * params
        hess = np.diag(diagonal)
        for start, stop in _blocks(X.shape[0]):
            X_b = _with_ones(X[start:stop], self.fit_intercept)
            first, second = self._derivatives(np.asarray(X_b @ params).ravel(), y[start:stop])
            grad += np.asarray(X_b.T @ first).ravel()
            hess += _weighted_gram(X_b, second)
        return grad, hess

    def reference(self, X, y, max_iter=100):
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
class LogisticL2(_NewtonReference, Problem):
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

    def _derivatives(self, eta, y):
        prob = 0.5 * (1.0 + np.tanh(0.5 * eta))
        return prob - y, prob * (1.0 - prob)

    def _penalty_diagonal(self, n_features, n_samples):
        diagonal = np.full(n_features + int(self.fit_intercept), 1.0 / self.C)
        if self.fit_intercept:
            diagonal[-1] = 0.0
        return diagonal


@dataclass(frozen=True)
class PoissonL2(_NewtonReference, Problem):
    """Poisson regression with a log link and an L2 penalty, as scikit-learn's
    ``PoissonRegressor(alpha)``.

    Minimises ``sum_i [y_i log(y_i / mu_i) - y_i + mu_i] + n alpha ||coef||^2 / 2`` with
    ``mu = exp(X @ coef + intercept)``: half the Poisson deviance plus the penalty, which
    is ``n`` times scikit-learn's objective.

    Parameters
    ----------
    alpha : float
        L2 strength on the mean scale (scikit-learn's ``alpha``).
    fit_intercept : bool
    """

    alpha: float = 1e-4
    fit_intercept: bool = True
    name = "poisson-l2"
    target = "counts"

    def describe(self):
        intercept = " + unpenalised intercept" if self.fit_intercept else ", no intercept"
        return (f"half Poisson deviance + n alpha ||coef||^2 / 2, alpha = {self.alpha:g}"
                f"{intercept}")

    def objective(self, X, y, solution):
        eta = _linear_predictor(X, solution)
        deviance = float(np.sum(xlogy(y, y) - y * eta - y + np.exp(eta)))
        return deviance + 0.5 * X.shape[0] * self.alpha * float(solution.coef @ solution.coef)

    def _derivatives(self, eta, y):
        mu = np.exp(eta)
        return mu - y, mu

    def _penalty_diagonal(self, n_features, n_samples):
        diagonal = np.full(n_features + int(self.fit_intercept), n_samples * self.alpha)
        if self.fit_intercept:
            diagonal[-1] = 0.0
        return diagonal


@dataclass(frozen=True)
class LeastSquares(Problem):
    """Least squares, optionally ridge: minimises ``||y - X @ coef - intercept||^2 / 2 +
    alpha ||coef||^2 / 2``.

    ``alpha = 0`` is ordinary least squares (scikit-learn's ``LinearRegression``), ``alpha >
    0`` scikit-learn's ``Ridge(alpha)`` (whose objective is twice this one).

    Parameters
    ----------
    fit_intercept : bool
    alpha : float
        Ridge strength on the sum scale.
    """

    fit_intercept: bool = True
    alpha: float = 0.0

    @property
    def name(self):
        return "ridge" if self.alpha else "ols"

    target = "continuous"

    def describe(self):
        intercept = " + intercept" if self.fit_intercept else ", no intercept"
        ridge = f" + alpha ||coef||^2 / 2, alpha = {self.alpha:g}" if self.alpha else ""
        return f"||y - X coef||^2 / 2{ridge}{intercept}"

    def objective(self, X, y, solution):
        residual = y - _linear_predictor(X, solution)
        return 0.5 * float(residual @ residual) + 0.5 * self.alpha * float(
            solution.coef @ solution.coef)

    def reference(self, X, y):
        """LAPACK's SVD-based least squares on ``[X, 1]`` (dense, no ridge), else the normal
        equations by Cholesky with one step of iterative refinement."""
        if not sp.issparse(X) and not self.alpha:
            design = _with_ones(X, self.fit_intercept)
            params = np.linalg.lstsq(design, y, rcond=None)[0]
            return _split(params, self.fit_intercept)
        n_params = X.shape[1] + int(self.fit_intercept)
        diagonal = np.full(n_params, float(self.alpha))
        if self.fit_intercept:
            diagonal[-1] = 0.0
        gram = np.diag(diagonal)
        rhs = np.zeros(n_params)
        for start, stop in _blocks(X.shape[0]):
            X_b = _with_ones(X[start:stop], self.fit_intercept)
            gram += _weighted_gram(X_b, np.ones(stop - start))
            rhs += np.asarray(X_b.T @ y[start:stop]).ravel()
        factor = cho_factor(gram)
        params = cho_solve(factor, rhs)
        residual = rhs - gram @ params
        return _split(params + cho_solve(factor, residual), self.fit_intercept)

    def to_dict(self):
        return {"name": self.name, "description": self.describe(), **asdict(self)}
