"""Per-partition statistics of inference after a fit: one read of ``X`` for all of them.

:func:`target_moments` sums the weights, targets and offsets (the mean target starts the
fit and defines the null model).  :func:`inference_sums` returns, at the fitted
parameters, the expected information ``X^T diag(w * (dmu/deta)**2 / V) X``, the observed
information (the expected one where the link is natural and the two are equal: one
product with ``X`` fewer), the meat of the sandwich ``X^T diag(w * score**2) X`` (``score`` the
per-row derivative of the loss in ``eta``), the deviance, the null deviance, Pearson's
chi-squared and the sums of the log-likelihood: everything statsmodels' ``GLMResults``
reports, as additive :class:`InferenceStats`.  With an offset, the null model is an
intercept-only fit with that offset: :func:`null_model_sums` gives its Newton steps.
Nothing in this module imports dask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backend import array_module, to_host
from ..model.weight_kinds import weighted_loglik_sums
from .kernels import kernel_matrix, linear_predictor, partition_offset
from .row_blocks import block_scratch, row_blocks, rows_between, weighted_gram
from .tree import row_additive

#: Entries of :attr:`InferenceStats.loglik`: the most sums a distribution's
#: log-likelihood needs (the Gamma's four).
LOGLIK_SLOTS = 4

__all__ = ["TargetMoments", "target_moments", "InferenceStats", "inference_sums",
           "null_model_sums", "information_matrix"]


@dataclass
class TargetMoments:
    """Sums over rows of the weight, the weighted target and the weighted offset."""

    weight: float
    target: float
    offset: float

    def __add__(self, other):
        return TargetMoments(self.weight + other.weight, self.target + other.target,
                             self.offset + other.offset)


@row_additive
def target_moments(part):
    """Total weight, ``sum w y`` and ``sum w offset`` of one partition."""
    y, weight = part[1], part[2]
    offset = partition_offset(part)
    xp = array_module(y)
    weight = xp.ones(y.shape[0]) if weight is None else weight
    offset_sum = 0.0 if offset is None else float(weight @ offset)
    return TargetMoments(float(weight.sum()), float(weight @ y), offset_sum)


@dataclass
class InferenceStats:
    """Additive sums of one or more partitions at the fitted parameters.

    Matrices are over the parameter vector (coefficients, then the intercept when one is
    fitted).  ``loglik`` holds the distribution's ``log_likelihood_sums`` in its first
    entries, padded to :data:`LOGLIK_SLOTS` with zeros so that every family returns the same
    bytes; all NaN when the distribution has no closed form.  ``kind_sums``: the sums
    the log-likelihood of analytic weights or binomial trials needs besides
    (:func:`~daskglm.model.weight_kinds.weighted_loglik_sums`, starting with the count
    of rows of positive weight); None for frequency weights.
    """

    weight: float
    rows: int
    expected: np.ndarray
    observed: np.ndarray
    meat: np.ndarray
    deviance: float
    null_deviance: float
    pearson: float
    loglik: np.ndarray
    kind_sums: np.ndarray | None = None

    def __add__(self, other):
        loglik = self.loglik + other.loglik
        kind_sums = None if self.kind_sums is None else self.kind_sums + other.kind_sums
        return InferenceStats(
            self.weight + other.weight, self.rows + other.rows, self.expected + other.expected,
            self.observed + other.observed, self.meat + other.meat,
            self.deviance + other.deviance, self.null_deviance + other.null_deviance,
            self.pearson + other.pearson, loglik, kind_sums,
        )


def information_matrix(X_b, h, n_coef, fit_intercept, scratch):
    """``[X_b, 1]^T diag(h) [X_b, 1]``, the ones column only with an intercept: the
    information matrix of a row block for the per-row weights ``h``.

    Parameters
    ----------
    X_b : ndarray, sparse matrix or device array of shape (n_rows, n_coef)
        A row block of the features.
    h : ndarray of shape (n_rows,)
        Non-negative per-row weights (:func:`_signed_information` takes either sign).
    n_coef : int
        The columns of ``X_b``.
    fit_intercept : bool
        Whether the parameters end with an intercept.
    scratch : object or None
        The block's scratch buffers (:func:`~daskglm.compute.row_blocks.block_scratch`).

    Returns
    -------
    ndarray of float64 of shape (n_params, n_params)
        On the host; ``n_params = n_coef + fit_intercept``.
    """
    n_params = n_coef + int(fit_intercept)
    out = np.zeros((n_params, n_params))
    gram_b, col_sums = weighted_gram(X_b, h, scratch)
    out[:n_coef, :n_coef] = to_host(gram_b)
    if fit_intercept:
        col_sums = to_host(col_sums)
        out[:n_coef, -1] = col_sums
        out[-1, :n_coef] = col_sums
        out[-1, -1] = float(h.sum())
    return out


def _signed_information(X_b, h, n_coef, fit_intercept, scratch):
    """As :func:`information_matrix` for weights of either sign (the observed information of a
    non-canonical link can have negative rows): the positive and negative parts apart."""
    xp = array_module(h)
    positive = information_matrix(X_b, xp.maximum(h, 0.0), n_coef, fit_intercept, scratch)
    if not (h < 0).any():
        return positive
    return positive - information_matrix(X_b, xp.maximum(-h, 0.0), n_coef, fit_intercept, scratch)


@row_additive
def inference_sums(part, params, family, fit_intercept, null_mean, weights_kind="frequency"):
    """Information matrices, sandwich meat, deviances, Pearson's chi-squared and
    log-likelihood sums of one partition at ``params``; ``null_mean`` is the mean of the
    null model (the weighted mean target); ``weights_kind`` what the weights are
    (:data:`~daskglm.model.weight_kinds.WEIGHTS_KINDS`)."""
    X, y, weight = part[:3]
    X = kernel_matrix(X)
    offset = partition_offset(part)
    n_params = params.shape[0]
    n_coef = n_params - int(fit_intercept)
    expected = np.zeros((n_params, n_params))
    observed = np.zeros((n_params, n_params))
    meat = np.zeros((n_params, n_params))
    deviance = null_deviance = pearson = 0.0
    loglik = np.zeros(LOGLIK_SLOTS)
    distribution = family.distribution
    exact = bool(getattr(family, "exact_d2loss", False))
    kind_sums = None if weights_kind == "frequency" else \
        weighted_loglik_sums(distribution, *[np.zeros(0)] * 3, weights_kind)
    scratch = block_scratch(X, products=True)
    for start, stop in row_blocks(X, products=True):
        X_b, y_b, w_b = X[start:stop], y[start:stop], rows_between(weight, start, stop)
        eta = linear_predictor(X_b, params, fit_intercept, rows_between(offset, start, stop))
        mu = family.mean(eta)
        score = family.dloss(y_b, eta)  # per unit weight
        information = information_matrix(X_b, family.d2loss(y_b, eta, w_b), n_coef, fit_intercept,
                                   scratch)
        expected += information
        if exact:  # the observed information is the expected one
            observed += information
        else:
            observed += _signed_information(X_b, family.observed_d2loss(y_b, eta, w_b),
                                            n_coef, fit_intercept, scratch)
        squares = score**2 if w_b is None else w_b * score**2
        if w_b is not None and weights_kind != "frequency":  # one row, its score w * score
            squares = w_b * squares
        meat += information_matrix(X_b, squares, n_coef, fit_intercept, scratch)
        deviance += family.deviance(y_b, mu, w_b)
        null_deviance += family.deviance(y_b, np.full_like(mu, null_mean), w_b)
        residual = (y_b - mu) ** 2 / distribution.variance(distribution.clip_mean(mu))
        pearson += float(residual.sum() if w_b is None else w_b @ residual)
        sums = distribution.log_likelihood_sums(y_b, mu, w_b)
        if sums is None:
            loglik[:] = np.nan
        else:
            loglik[: len(sums)] += to_host(sums)
        if weights_kind != "frequency":
            kind_sums += weighted_loglik_sums(distribution, to_host(y_b), to_host(mu),
                                              None if w_b is None else to_host(w_b),
                                              weights_kind)
    total = float(X.shape[0]) if weight is None else float(weight.sum())
    return InferenceStats(total, int(X.shape[0]), expected, observed, meat, float(deviance),
                          float(null_deviance), pearson, loglik, kind_sums)


@row_additive
def null_model_sums(part, intercept, family):
    """``[sum w dloss, sum w d2loss, deviance]`` of the intercept-only model with the
    partition's offset, ``eta = intercept + offset``, at ``intercept``: one Newton step of
    the null model of a fit with an offset (``X`` is not read)."""
    y, weight = part[1], part[2]
    offset = partition_offset(part)
    eta = array_module(y).full(y.shape[0], float(intercept))
    if offset is not None:
        eta = eta + offset
    dloss = family.dloss(y, eta, weight)
    d2loss = family.d2loss(y, eta, weight)
    deviance = family.deviance(y, family.mean(eta), weight)
    return np.array([float(dloss.sum()), float(d2loss.sum()), float(deviance)])
