"""Per-partition sums of the robust covariances that the inference round cannot give: one
more read of ``X`` after it, at the fitted parameters.

:func:`robust_sums` returns, as additive :class:`RobustStats`:

* the meats of HC2 and HC3, ``X^T diag(w score^2 / (1 - h)) X`` and with ``(1 - h)^2``,
  where ``h`` is each row's leverage, the diagonal of the hat matrix of the design
  weighted by the Fisher weights: ``h_i = d2loss_i x_i^T E^-1 x_i`` with ``E`` the
  expected information (sent with the round, so the rows never leave their partition);
* one :class:`ClusterTable` per clustering: each cluster's score sum ``sum_{i in g} w_i
  score_i x_i`` over the partition's rows, keyed by the cluster's integer code.  Tables
  add by code, so the round's tree merges them on the workers and only the table of
  every cluster (clusters x parameters) reaches the driver.

Frequency weights (the default ``weights_kind``), as in the inference round's HC0 meat: a
row of weight ``w`` counts as ``w`` rows with its values (its leverage is that of one of
them).  Analytic weights and binomial trials: a row is one observation whose score is ``w``
times the unit one and whose leverage carries ``w`` (statsmodels' ``WLS`` and
``var_weights``).
Nothing in this module imports dask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..backend import to_host
from .inference import _information
from .kernels import kernel_matrix, linear_predictor, partition_offset
from .row_blocks import row_blocks, rows_between

__all__ = ["ClusterTable", "RobustStats", "robust_sums"]


@dataclass
class ClusterTable:
    """Score sums per cluster: ``sums[j]`` is the sum over the rows of cluster ``codes[j]``
    (``codes`` sorted, unique)."""

    codes: np.ndarray
    sums: np.ndarray

    def __add__(self, other):
        codes = np.union1d(self.codes, other.codes)
        sums = np.zeros((codes.size, self.sums.shape[1]))
        sums[np.searchsorted(codes, self.codes)] += self.sums
        sums[np.searchsorted(codes, other.codes)] += other.sums
        return ClusterTable(codes, sums)

    @property
    def n_clusters(self):
        return int(self.codes.size)

    def meat(self):
        """``sum_g S_g S_g^T`` of the clusters' score sums ``S_g``."""
        return self.sums.T @ self.sums


@dataclass
class RobustStats:
    """Additive sums of one or more partitions; matrices over the solvers' parameter
    vector (coefficients, then the intercept).  ``hc2`` and ``hc3`` are None when the
    leverage was not asked for; ``max_leverage`` is the largest leverage seen (NaN
    then); ``tables`` holds one :class:`ClusterTable` per clustering."""

    hc2: np.ndarray | None
    hc3: np.ndarray | None
    max_leverage: float
    tables: tuple

    def __add__(self, other):
        def plus(a, b):
            return None if a is None else a + b

        return RobustStats(plus(self.hc2, other.hc2), plus(self.hc3, other.hc3),
                           float(np.fmax(self.max_leverage, other.max_leverage)),
                           tuple(a + b for a, b in zip(self.tables, other.tables)))


def _quadratic_forms(X_b, inverse, n_coef, fit_intercept):
    """``x_i^T inverse x_i`` of each row ``x_i = [X_b[i], 1]`` (the ones column with an
    intercept) of one block."""
    coef_part = inverse[:n_coef, :n_coef]
    products = X_b @ coef_part
    if sp.issparse(X_b):
        forms = np.asarray(X_b.multiply(products).sum(axis=1)).ravel()
    else:
        forms = np.einsum("ij,ij->i", X_b, products)
    if fit_intercept:
        forms = forms + 2.0 * np.asarray(X_b @ inverse[:n_coef, -1]).ravel() + inverse[-1, -1]
    return forms


def _cluster_table(X_b, codes, scores, fit_intercept):
    """The :class:`ClusterTable` of one block's rows: ``scores`` (``w score``) summed
    per code, times the rows."""
    keys, rows_of = np.unique(codes, return_inverse=True)
    n = X_b.shape[0]
    by_cluster = sp.csr_matrix((scores, (rows_of, np.arange(n))), shape=(keys.size, n))
    sums = by_cluster @ X_b
    sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums, dtype=np.float64)
    if fit_intercept:
        sums = np.column_stack([sums, np.bincount(rows_of, weights=scores,
                                                  minlength=keys.size)])
    return ClusterTable(keys.astype(np.int64), sums)


def _host_block(X_b):
    """A block as numpy or scipy, in float64 (the quadratic forms and cluster sums are
    summed over many rows)."""
    X_b = to_host(X_b)
    if sp.issparse(X_b):
        return X_b if X_b.dtype == np.float64 else X_b.astype(np.float64)
    return np.asarray(X_b, dtype=np.float64)


def robust_sums(part, codes, params, family, fit_intercept, inverse, weights_kind="frequency"):
    """HC2 and HC3 meats (when ``inverse``, the inverse expected information at
    ``params``, is given) and cluster tables (when ``codes``, the partition's rows'
    cluster codes of shape (rows, clusterings), is given) of one partition; the row
    weights are ``weights_kind`` (:data:`~daskglm.model.weight_kinds.WEIGHTS_KINDS`)."""
    repeats = weights_kind == "frequency"
    X, y, weight = part[:3]
    X = kernel_matrix(X)
    offset = partition_offset(part)
    n_params = params.shape[0]
    n_coef = n_params - int(fit_intercept)
    leverage = inverse is not None
    hc2 = np.zeros((n_params, n_params)) if leverage else None
    hc3 = np.zeros((n_params, n_params)) if leverage else None
    largest = 0.0 if leverage else np.nan
    n_ways = 0 if codes is None else codes.shape[1]
    tables = tuple(ClusterTable(np.zeros(0, np.int64), np.zeros((0, n_params)))
                   for _ in range(n_ways))
    for start, stop in row_blocks(X, products=True):
        X_b, y_b, w_b = X[start:stop], y[start:stop], rows_between(weight, start, stop)
        eta = linear_predictor(X_b, params, fit_intercept, rows_between(offset, start, stop))
        score = np.asarray(to_host(family.dloss(y_b, eta)), dtype=np.float64)
        w = np.ones_like(score) if w_b is None else np.asarray(to_host(w_b), dtype=np.float64)
        host = _host_block(X_b)
        if leverage:
            fisher = np.asarray(to_host(family.d2loss(y_b, eta, None)), dtype=np.float64)
            h = fisher * _quadratic_forms(host, inverse, n_coef, fit_intercept)
            if not repeats:  # a row of weight w is one observation, its leverage w h
                h = w * h
            if h.size:
                largest = max(largest, float(np.max(h)))
            room = np.maximum(1.0 - h, 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                once = (w if repeats else w * w) * score**2 / room
                twice = once / room
            hc2 += _information(host, once, n_coef, fit_intercept, None)
            hc3 += _information(host, twice, n_coef, fit_intercept, None)
        if n_ways:
            block_codes = np.asarray(codes[start:stop])
            tables = tuple(table + _cluster_table(host, block_codes[:, j], w * score,
                                                  fit_intercept)
                           for j, table in enumerate(tables))
    return RobustStats(hc2, hc3, largest, tables)
