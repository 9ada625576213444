"""The duality gap of a Gaussian L1 / elastic-net problem, as scikit-learn's Lasso and
ElasticNet define it, from what a gradient round already returns.

The problem is ``1/2 mean_W (y - X coef - b)^2 + l1 ||coef||_1 + l2 / 2 ||coef||^2`` with an
unpenalised intercept ``b``.  scikit-learn centres ``X`` and ``y`` (weighted means) and
eliminates the intercept; its coordinate descent stops when the duality gap (of the problem
multiplied by ``n_samples``, the dual point the scaled residual) is at most
``tol * ||y_centred||^2_W`` (the weights rescaled to sum to ``n_samples``), and it reports
the gap divided by ``n_samples`` as ``dual_gap_``.  Dividing both sides by ``n_samples``
gives the rule used here, in means: ``gap <= tol * mean_W (y - ybar)^2``.

At any ``(coef, b)`` the residual of the centred problem is ``r_c = r + delta`` with
``delta = -mean_W r``, which is the loss gradient with respect to ``b``.  Hence, from the
mean loss ``L`` and its gradient ``g`` (coefficients ``g_c``, intercept ``g_b``) and the
column means ``xbar`` of the validation round, without reading ``X`` again:

* ``mean_W r_c^2 = 2 L - g_b^2``;
* ``X_c^T W r_c / sum(W) = -(g_c - xbar g_b)``;
* ``r_c . y_c = r_c . r_c + coef . X_c^T W r_c`` (as ``y_c = r_c + X_c coef``).

The scale ``mean_W (y - ybar)^2`` is ``2 L - g_b^2`` at any point with ``coef = 0``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DualityGap"]


class DualityGap:
    """scikit-learn's duality gap (``dual_gap_``) of a Gaussian L1 / elastic-net problem.

    Parameters
    ----------
    l1, l2 : float
        The penalty ``l1 ||coef||_1 + l2 / 2 ||coef||^2``.
    positive : bool
        Whether the coefficients are constrained to be non-negative.
    column_means : ndarray or None
        Weighted means of the columns of ``X`` (None without an intercept).
    n_samples : int
        Rows of ``X`` (scikit-learn's normalisation of the gap without any penalty).
    """

    def __init__(self, l1, l2, positive, column_means, n_samples):
        self.l1, self.l2 = float(l1), float(l2)
        self.positive = bool(positive)
        self.column_means = column_means
        self.n_samples = int(n_samples)
        #: ``mean_W (y - ybar)^2`` (``mean_W y^2`` without an intercept), once known.
        self.scale = None

    @classmethod
    def for_problem(cls, problem, column_means, n_samples):
        """The gap of ``problem``, or None when it is not a Gaussian L1 / elastic-net problem."""
        penalty = problem.penalty
        positive = bool(getattr(penalty, "nonnegative", False))
        inner = penalty.inner if positive else penalty
        family = problem.family
        if not family.quadratic:
            return None
        strengths = inner.elastic_net_strengths
        if strengths is None or inner.smooth:
            return None
        if getattr(problem, "n_coef", problem.n_features) != problem.n_features:
            return None
        l2, l1 = strengths
        means = column_means if problem.fit_intercept else None
        return cls(l1, l2, positive, means, n_samples)

    def _centred(self, params, loss, loss_grad):
        """``mean_W r_c^2`` and ``X_c^T W r_c / sum(W)`` at ``params``."""
        n_features = loss_grad.shape[0] - (self.column_means is not None)
        grad_coef = np.asarray(loss_grad[:n_features], dtype=float)
        if self.column_means is None:
            return 2.0 * loss, -grad_coef
        grad_intercept = float(loss_grad[-1])
        return (2.0 * loss - grad_intercept ** 2,
                -(grad_coef - self.column_means * grad_intercept))

    def observe_scale(self, params, loss, loss_grad):
        """Take the scale from an evaluation at ``coef = 0``; False at any other point."""
        n_features = loss_grad.shape[0] - (self.column_means is not None)
        if np.any(np.asarray(params[:n_features]) != 0):
            return False
        self.scale = max(self._centred(params, loss, loss_grad)[0], 0.0)
        return True

    def gap(self, params, loss, loss_grad):
        """scikit-learn's ``dual_gap_`` at ``params``, from the mean loss (no penalty) and
        its gradient there."""
        residual_norm2, correlation = self._centred(params, loss, loss_grad)
        coef = np.asarray(params[:correlation.shape[0]], dtype=float)
        coef_norm2 = float(coef @ coef)
        residual_dot_y = residual_norm2 + float(coef @ correlation)
        if self.l1 > 0:  # scikit-learn's "formulation A"
            xta = correlation - self.l2 * coef
            dual_norm = float(np.max(xta) if self.positive else np.max(np.abs(xta))) \
                if xta.size else 0.0
            scale = self.l1 / dual_norm if dual_norm > self.l1 else 1.0
            primal = 0.5 * (residual_norm2 + self.l2 * coef_norm2) \
                + self.l1 * float(np.abs(coef).sum())
            dual = -0.5 * scale ** 2 * (residual_norm2 + self.l2 * coef_norm2) \
                + scale * residual_dot_y
            return primal - dual
        if self.l2 > 0:  # ridge: "formulation B"
            return (residual_norm2 + 0.5 * self.l2 * coef_norm2 - residual_dot_y
                    + float(correlation @ correlation) / (2.0 * self.l2))
        # least squares: no dual; scikit-learn's ||X^T R||^2 divided by n_samples
        return self.n_samples * float(correlation @ correlation)

    def relative(self, gap):
        """``gap / scale``: the gap in units of ``tol`` (the rule is ``relative <= tol``)."""
        if self.scale is None:
            raise RuntimeError("The scale of the duality gap is not known yet.")
        if self.scale > 0:
            return gap / self.scale
        return 0.0 if gap <= 0 else float(gap)
