"""The rounds that set a regularisation path's grid: the gradient of the mean loss at
the model with no coefficients, whose largest entry is the smallest penalty that keeps
every coefficient at zero (:func:`null_model_gradient`; for squared loss,
:func:`squared_loss_gradient_at_zero`)."""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..compute.kernels import loss_grad
from ..model.families import Gaussian
from .inference import null_model_with_offset, target_and_offset_sums

__all__ = ["null_model_gradient", "squared_loss_gradient_at_zero"]


def null_model_gradient(engine, family, fit_intercept, has_offset=False):
    """The gradient of the mean loss with respect to the coefficients (``d`` entries) at
    the model with no coefficients: the intercept at ``g(weighted mean of y)``, the
    intercept-only optimum of every family and link (with an offset, that optimum found
    by Newton steps on the intercept, one ``Kind.NULL_MODEL`` round each; zero without an
    intercept).  One ``Kind.GRADIENT`` round, and one ``Kind.TARGET_MEAN`` round when the
    validation round's target sums are gone."""
    d = engine.n_features
    params = np.zeros(d + 1 if fit_intercept else d)
    if fit_intercept:
        target, offset, _ = target_and_offset_sums(engine)
        means = (float(target) / engine.sum_weight, float(offset) / engine.sum_weight)
        if has_offset:
            params[-1] = null_model_with_offset(engine, family, means)[0]
        else:
            params[-1] = float(np.asarray(family.link.link(np.array([means[0]])))[0])
    stats = engine.reduce(loss_grad, params, family, fit_intercept, kind=Kind.GRADIENT)
    return stats.grad[:d] / engine.sum_weight


def squared_loss_gradient_at_zero(engine):
    """The gradient of ``sum(w (y - X coef - intercept)^2) / 2`` (the Gaussian family,
    with an intercept) at every parameter zero: ``-X^T W y``, then ``-sum(w y)`` (``d +
    1`` entries, the intercept's last).  One ``Kind.GRADIENT`` round."""
    zero = np.zeros(engine.n_features + 1)
    return engine.reduce(loss_grad, zero, Gaussian(), True, kind=Kind.GRADIENT).grad
