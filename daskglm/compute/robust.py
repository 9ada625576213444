"""Per-partition sums of the robust covariances that the inference round cannot give: one
more read of ``X`` after it, at the fitted parameters.

:func:`robust_sums` returns, as additive :class:`RobustStats`:

* the meats of HC2 and HC3, ``X^T diag(w score^2 / (1 - h)) X`` and with ``(1 - h)^2``,
  where ``h`` is each row's leverage, the diagonal of the hat matrix of the design
  weighted by the Fisher weights: ``h_i = d2loss_i x_i^T E^-1 x_i`` with ``E`` the
  expected information (sent with the round, so the rows never leave their partition);
* one :class:`ClusterTable` per clustering: each cluster's score sum ``sum_{i in g} w_i
  score_i x_i`` over the partition's rows, keyed by the cluster's integer code (ids
  factorised on the driver, :func:`cluster_codes`) or by the ids themselves (ids read
  where the partition lives, :func:`robust_sums_by_id`; two clusterings add the table
  of their intersection, keyed by pairs).  Tables add by key, so the round's tree merges
  them on the workers and only the table of every cluster (clusters x parameters)
  reaches the driver.

Frequency weights (the default ``weights_kind``), as in the inference round's HC0 meat: a
row of weight ``w`` counts as ``w`` rows with its values (its leverage is that of one of
them).  Analytic weights and binomial trials: a row is one observation whose score is ``w``
times the unit one and whose leverage carries ``w`` (statsmodels' ``WLS`` and
``var_weights``).
Nothing in this module imports dask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..backend import to_host
from .inference import information_matrix
from .kernels import kernel_matrix, linear_predictor, partition_offset
from .row_blocks import row_blocks, rows_between

__all__ = ["ClusterTable", "RobustStats", "robust_sums", "robust_sums_by_id", "cluster_codes",
           "ids_summary", "MISSING_IDS"]


#: The error of cluster ids with a missing value.
MISSING_IDS = "groups contains missing ids (NaN or None); every row needs its cluster."


@dataclass
class ClusterTable:
    """Score sums per cluster: ``sums[j]`` is the sum over the rows of cluster
    ``codes[j]``.  ``codes`` are sorted and unique: int64 codes, or the clusters' own ids
    as a pandas ``Index`` (a ``MultiIndex`` of pairs for an intersection; ids that do not
    compare, such as numbers beside text, keep the order they were met in)."""

    codes: Any
    sums: np.ndarray

    def __add__(self, other):
        if not len(other.codes):
            return self
        if not len(self.codes):
            return other
        if isinstance(self.codes, np.ndarray) and isinstance(other.codes, np.ndarray):
            codes = np.union1d(self.codes, other.codes)
            mine, theirs = np.searchsorted(codes, self.codes), np.searchsorted(codes, other.codes)
        else:
            codes = self.codes.union(other.codes)
            mine, theirs = codes.get_indexer(self.codes), codes.get_indexer(other.codes)
        sums = np.zeros((len(codes), self.sums.shape[1]))
        sums[mine] += self.sums
        sums[theirs] += other.sums
        return ClusterTable(codes, sums)

    @property
    def n_clusters(self):
        return len(self.codes)

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


def _cluster_table(X_b, keys, rows_of, scores, fit_intercept):
    """The :class:`ClusterTable` of one block's rows: ``scores`` (``w score``) summed
    per cluster, times the rows; row ``i`` is of cluster ``keys[rows_of[i]]``."""
    n = X_b.shape[0]
    by_cluster = sp.csr_matrix((scores, (rows_of, np.arange(n))), shape=(len(keys), n))
    sums = by_cluster @ X_b
    sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums, dtype=np.float64)
    if fit_intercept:
        sums = np.column_stack([sums, np.bincount(rows_of, weights=scores,
                                                  minlength=len(keys))])
    return ClusterTable(keys, sums)


def _clusters_of_codes(codes):
    """``(keys, rows_of)`` of each column of a block's integer cluster codes."""
    found = []
    for j in range(codes.shape[1]):
        keys, rows_of = np.unique(codes[:, j], return_inverse=True)
        found.append((keys.astype(np.int64), rows_of.ravel()))
    return found


def _clusters_of_ids(columns):
    """``(keys, rows_of)`` of a block's cluster ids (one array per clustering), keys as
    pandas indexes; for two clusterings also of their intersection, keyed by pairs."""
    import pandas as pd

    found = []
    for column in columns:
        try:
            rows_of, keys = pd.factorize(column, sort=True)
        except TypeError:  # ids that do not compare
            rows_of, keys = pd.factorize(column)
        found.append((pd.Index(keys), rows_of.astype(np.int64)))
    if len(found) == 2:
        (first, rows_first), (second, rows_second) = found
        pairs, rows_of = np.unique(rows_first * len(second) + rows_second, return_inverse=True)
        keys = pd.MultiIndex.from_arrays([first[pairs // len(second)],
                                          second[pairs % len(second)]])
        found.append((keys, rows_of.ravel().astype(np.int64)))
    return found


def _host_block(X_b):
    """A block as numpy or scipy, in float64 (the quadratic forms and cluster sums are
    summed over many rows)."""
    X_b = to_host(X_b)
    if sp.issparse(X_b):
        return X_b if X_b.dtype == np.float64 else X_b.astype(np.float64)
    return np.asarray(X_b, dtype=np.float64)


def robust_sums(part, codes, params, family, fit_intercept, inverse, weights_kind="frequency",
                ids=None):
    """HC2 and HC3 meats (when ``inverse``, the inverse expected information at
    ``params``, is given) and cluster tables of one partition: one per column of
    ``codes``, the partition's rows' integer cluster codes of shape (rows, clusterings),
    or, when ``ids`` (one array of the rows' cluster ids per clustering) is given, one
    per clustering and one of the intersection of two.  The row weights are
    ``weights_kind`` (:data:`~daskglm.model.weight_kinds.WEIGHTS_KINDS`)."""
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
    if ids is not None:
        n_ways = 3 if len(ids) == 2 else 1
    else:
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
            hc2 += information_matrix(host, once, n_coef, fit_intercept, None)
            hc3 += information_matrix(host, twice, n_coef, fit_intercept, None)
        if n_ways:
            found = _clusters_of_codes(np.asarray(codes[start:stop])) if ids is None \
                else _clusters_of_ids([column[start:stop] for column in ids])
            tables = tuple(table + _cluster_table(host, keys, rows_of, w * score,
                                                  fit_intercept)
                           for table, (keys, rows_of) in zip(tables, found))
    return RobustStats(hc2, hc3, largest, tables)


def robust_sums_by_id(part, ids, params, family, fit_intercept, inverse,
                      weights_kind="frequency"):
    """:func:`robust_sums` of one partition whose cluster ids ``ids`` (a tuple of one
    array per clustering, the partition's state) were read where it lives, as a stateful
    kernel: ``(sums, ids)``."""
    if ids is None:
        raise RuntimeError("The cluster ids kept beside a partition were lost with its "
                           "worker and could not be computed again.")
    n_rows = part[0].shape[0]
    if any(len(column) != n_rows for column in ids):
        raise ValueError(f"A partition of X has {n_rows} rows but its groups "
                         f"{[len(column) for column in ids]}: a Dask collection's chunk "
                         "sizes do not match the rows its chunks compute to.")
    return robust_sums(part, None, params, family, fit_intercept, inverse, weights_kind,
                       ids=ids), ids


def ids_summary(ids):
    """``[rows, missing ids]`` of one partition's cluster ids (a tuple of arrays)."""
    import pandas as pd

    missing = sum(int(np.count_nonzero(pd.isna(column))) for column in ids)
    return np.array([len(ids[0]) if ids else 0, missing], dtype=np.int64)


def cluster_codes(columns):
    """The cluster codes of id columns (one or two arrays, no missing id): int64 of
    shape (rows, 1), or (rows, 3) for two (the first, the second and their intersection,
    as statsmodels' two-way clustering combines them)."""
    codes = [_factorised(column) for column in columns]
    if len(codes) == 2:
        codes.append(_factorised(codes[0] * (codes[1].max() + 1) + codes[1]))
    return np.column_stack(codes)


def _factorised(column):
    import pandas as pd

    return pd.factorize(column, sort=True)[0].astype(np.int64)
