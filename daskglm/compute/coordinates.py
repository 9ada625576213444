"""Standardised and whitened coordinates: changes of variables that undo column offsets
and scales (:class:`Standardised`), and also the columns' correlations (:class:`Whitened`).

First-order methods (proximal gradient, ADMM's consensus) converge at a rate set by the
conditioning of the problem, which column offsets (with an intercept) and unequal column
scales ruin.  Rather than forming a standardised copy of ``X``, they run in the
coordinates

    theta = (coef * scales, intercept + means @ coef)

in which the model ``X coef + intercept`` reads ``((X - means) / scales) theta_coef +
theta_0``: the loss is as well conditioned as on standardised data.  The penalty acts on
``coef = theta_coef / scales``; its proximal operator in ``theta`` is the penalty's own,
with one step per coordinate (:meth:`Standardised.prox`), exact for every separable
penalty (none, L2, L1, elastic net).  The solution is mapped back to ``(coef,
intercept)``.  L-BFGS and gradient descent also undo the columns' correlations where
the validation round sampled rows (:class:`Whitened`).  Pure numpy; used on the driver
and, inside local solves, on the workers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular

__all__ = ["Standardised", "Whitened"]


def _safe_sqrt(values):
    """Square roots, with 1 where a value is not clearly positive (no spread, no curvature)."""
    roots = np.sqrt(np.maximum(values, 0.0))
    roots[~(roots > 1e-12 * max(float(roots.max(initial=0.0)), 1e-300))] = 1.0
    return roots


class _ShiftedMap:
    """What both maps share: ``theta = (A coef, intercept + means @ coef)`` for a linear
    map ``A`` of the coefficients (:meth:`_forward`, its inverse :meth:`_inverse` and
    their transposes), ``means`` None without an intercept."""

    means: np.ndarray | None

    def _n_coef(self, vector):
        return vector.shape[0] - int(self.means is not None)

    def to_params(self, theta):
        """``theta -> (coef, intercept)``."""
        params = np.array(theta, dtype=float, copy=True)
        n = self._n_coef(params)
        params[:n] = self._inverse(params[:n])
        if self.means is not None:
            params[-1] -= self.means @ params[:n]
        return params

    def to_theta(self, params):
        """``(coef, intercept) -> theta``."""
        theta = np.array(params, dtype=float, copy=True)
        n = self._n_coef(theta)
        if self.means is not None:
            theta[-1] += self.means @ theta[:n]
        theta[:n] = self._forward(theta[:n])
        return theta

    def grad_to_theta(self, grad):
        """The chain rule: a gradient with respect to ``params`` as one in ``theta``."""
        grad = np.array(grad, dtype=float, copy=True)
        n = self._n_coef(grad)
        if self.means is not None:
            grad[:n] -= self.means * grad[-1]
        grad[:n] = self._inverse_transposed(grad[:n])
        return grad

    def grad_to_params(self, theta_grad):
        """The inverse of :meth:`grad_to_theta`."""
        grad = np.array(theta_grad, dtype=float, copy=True)
        n = self._n_coef(grad)
        grad[:n] = self._forward_transposed(grad[:n])
        if self.means is not None:
            grad[:n] += self.means * grad[-1]
        return grad


@dataclass
class Standardised(_ShiftedMap):
    """The map between ``params = (coef[, intercept])`` and ``theta``.

    Attributes
    ----------
    scales : ndarray or None
        Positive per-coefficient scales (None: all 1).
    means : ndarray or None
        Column offsets moved into the intercept; None without an intercept.
    """

    scales: np.ndarray | None = None
    means: np.ndarray | None = None

    @classmethod
    def from_moments(cls, means, mean_squares, fit_intercept):
        """From weighted column means and mean squares of ``X``.

        With an intercept the scales are the standard deviations, else the root mean
        squares; a column without spread keeps scale 1.
        """
        spread = mean_squares - means**2 if fit_intercept else mean_squares
        return cls(_safe_sqrt(spread), means if fit_intercept else None)

    @classmethod
    def from_hessian(cls, hess, fit_intercept):
        """From a Hessian: its curvature-weighted centre and per-coefficient curvatures.

        The scales make every coefficient's curvature (after centring) equal to the
        intercept's, or to 1 without an intercept.
        """
        n_coef = hess.shape[0] - int(fit_intercept)
        if fit_intercept and hess[-1, -1] > 0:
            means = hess[:n_coef, -1] / hess[-1, -1]
            curvature = (np.diag(hess)[:n_coef] - hess[:n_coef, -1] * means) / hess[-1, -1]
            return cls(_safe_sqrt(curvature), means)
        return cls(_safe_sqrt(np.diag(hess)[:n_coef]), None)

    def _forward(self, coef):
        return coef if self.scales is None else coef * self.scales

    def _inverse(self, coef):
        return coef if self.scales is None else coef / self.scales

    _forward_transposed = _forward
    _inverse_transposed = _inverse

    def gradient_factor(self):
        """An upper bound on the largest entry of a gradient in ``params`` over the
        largest of the same gradient in ``theta``."""
        factor = 1.0
        if self.scales is not None:
            factor = max(factor, float(np.max(self.scales, initial=1.0)))
        if self.means is not None:
            factor += float(np.max(np.abs(self.means), initial=0.0))
        return factor

    def prox(self, penalty, theta, step):
        """Proximal operator in ``theta`` of ``penalty(coef)``; the intercept passes through.

        ``argmin_v penalty(v / scales) + |v - theta|^2 / (2 step)`` is the penalty's own
        proximal operator at ``theta / scales`` with the per-coordinate steps
        ``step / scales**2`` (every penalty's ``prox`` broadcasts an array of steps).
        """
        out = np.array(theta, dtype=float, copy=True)
        n = self._n_coef(out)
        if self.scales is None:
            out[:n] = penalty.prox(out[:n], step)
        else:
            out[:n] = self.scales * penalty.prox(out[:n] / self.scales, step / self.scales**2)
        return out

    def jacobian(self, n_params):
        """``d params / d theta``."""
        jacobian = np.eye(n_params)
        n = n_params - int(self.means is not None)
        if self.scales is not None:
            jacobian[:n, :n] = np.diag(1.0 / self.scales)
        if self.means is not None:
            jacobian[-1, :n] = -self.means @ jacobian[:n, :n]
        return jacobian


@dataclass
class Whitened(_ShiftedMap):
    """Coordinates in which the columns are centred and decorrelated:

        theta = (U coef, intercept + means @ coef)

    with ``U`` upper triangular, ``U^T U`` the columns' covariance (with an intercept,
    else their second moments), widened by the penalty's curvature relative to the
    loss's.  Where the loss's Hessian is close to a multiple of that covariance (a GLM
    near its start point), it is close to a multiple of the identity in ``theta``:
    correlated columns, which slow a first-order method in :class:`Standardised`
    coordinates down by their condition number, do not.  Not for a proximal method (the
    penalty is not separable in ``theta``) nor for bounds on ``coef``.

    Attributes
    ----------
    factor : ndarray
        ``U``, upper triangular, shape (n_coef, n_coef).
    means : ndarray or None
        Column offsets moved into the intercept; None without an intercept.
    """

    factor: np.ndarray
    means: np.ndarray | None = None

    @classmethod
    def from_moments(cls, means, covariance, fit_intercept, widening=None):
        """From weighted column ``means`` and the columns' ``covariance`` (centred with
        an intercept, else their second moments: a sample's,
        :meth:`~daskglm.compute.row_sample.RowSample.covariance`); ``widening`` is
        added to its diagonal.  None when the covariance is not positive definite."""
        covariance = np.array(covariance, dtype=float, copy=True)
        diagonal = np.diag_indices_from(covariance)
        if widening is not None:
            covariance[diagonal] += widening
        covariance[diagonal] *= 1.0 + 1e-10  # keeps columns that coincide invertible
        try:
            lower = np.linalg.cholesky(covariance)
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(lower)) or not np.all(np.diag(lower) > 0):
            return None
        return cls(np.ascontiguousarray(lower.T), means if fit_intercept else None)

    def _forward(self, coef):
        return self.factor @ coef

    def _inverse(self, coef):
        return solve_triangular(self.factor, coef)

    def _forward_transposed(self, coef):
        return self.factor.T @ coef

    def _inverse_transposed(self, coef):
        return solve_triangular(self.factor, coef, trans="T")

    def gradient_factor(self):
        """An upper bound on the largest entry of a gradient in ``params`` over the
        largest of the same gradient in ``theta``."""
        columns = np.abs(self.factor).sum(axis=0)
        if self.means is not None:
            columns = columns + np.abs(self.means)
        return max(1.0, float(np.max(columns, initial=1.0)))
