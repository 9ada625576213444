"""The second moments of a sample of rows, taken in the validation read: the columns'
covariance, from which L-BFGS builds a preconditioner
(:meth:`~daskglm.compute.coordinates.Whitened.from_moments`).

Each partition contributes :data:`SAMPLE_ROWS` evenly spaced rows (all of its rows when
it has fewer); their weighted products ``sum w x x^T`` are ``d (d + 1) / 2`` floats a
partition (the upper triangle), so the sample is taken only up to
:data:`SAMPLE_MAX_FEATURES` columns.  A preconditioner
needs the covariance only roughly: with at least 16 rows a column, sampling noise
leaves the whitened problem's condition number within a small factor of 1.  Pure numpy
on the sampled rows (a GPU partition's are copied to the host: a few hundred kB).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backend import to_host

__all__ = ["RowSample", "row_sample", "SAMPLE_ROWS", "SAMPLE_MAX_FEATURES",
           "sample_floats"]

#: Rows a partition contributes to the sample, evenly spaced through it.
SAMPLE_ROWS = 2048
#: Up to this many columns the validation round samples rows (``d^2 / 2`` floats a task).
SAMPLE_MAX_FEATURES = 128


def sample_floats(n_features):
    """Floats a partition's :class:`RowSample` adds to its validation result (0 beyond
    :data:`SAMPLE_MAX_FEATURES` columns)."""
    p = int(n_features)
    return p * (p + 1) // 2 + p + 1 if p <= SAMPLE_MAX_FEATURES else 0


@dataclass
class RowSample:
    """Total weight, weighted column sums and the upper triangle (row by row) of the
    weighted products ``sum w x x^T`` of a sample of rows."""

    weight: float
    sums: np.ndarray
    upper: np.ndarray

    @classmethod
    def of(cls, weight, sums, products):
        """The sample of total ``weight``, column ``sums`` and symmetric ``products``."""
        return cls(float(weight), sums, products[np.triu_indices(products.shape[0])])

    @property
    def products(self):
        """The weighted products ``sum w x x^T``, a symmetric matrix."""
        p = self.sums.shape[0]
        products = np.zeros((p, p))
        rows, columns = np.triu_indices(p)
        products[rows, columns] = self.upper
        products[columns, rows] = self.upper
        return products

    def __add__(self, other):
        return RowSample(self.weight + other.weight, self.sums + other.sums,
                         self.upper + other.upper)

    def covariance(self, variances, centred):
        """The columns' covariance (with ``centred``, else their second moments) from the
        sample, for columns of the full data's ``variances`` (centred second moments with
        ``centred``, else mean squares).

        The sample's own moments, so that the directions in which the columns nearly
        coincide keep their small variance (mixing in the full data's variances would
        swamp it); a column whose sample spread is not within a factor 4 of its full
        spread (a rare level seen once or never in the sample) has its full variance and
        no covariance with the others.  None when the sample holds nothing usable.
        """
        if not self.weight > 0 or not np.all(np.isfinite(self.upper)):
            return None
        means = self.sums / self.weight
        covariance = self.products / self.weight
        if centred:
            covariance = covariance - np.outer(means, means)
        spread = np.diag(covariance).copy()
        usable = (spread > 0.25 * variances) & (spread < 4.0 * variances) & (variances > 0)
        if not usable.any():
            return None
        covariance[~usable, :] = 0.0
        covariance[:, ~usable] = 0.0
        covariance[~usable, ~usable] = variances[~usable]
        return covariance


def row_sample(X, weight):
    """The :class:`RowSample` of one partition, or None beyond
    :data:`SAMPLE_MAX_FEATURES` columns or for an empty one."""
    n_rows, n_features = X.shape
    if n_features > SAMPLE_MAX_FEATURES or n_rows == 0:
        return None
    step = max(1, n_rows // SAMPLE_ROWS)
    taken = slice(0, min(n_rows, step * SAMPLE_ROWS), step)
    rows = _dense(X[taken] if hasattr(X, "toarray") else X[taken, ...])
    w = np.ones(rows.shape[0]) if weight is None else \
        np.asarray(to_host(weight[taken]), dtype=np.float64)
    weighted = rows * w[:, None]
    with np.errstate(all="ignore"):  # extreme columns are rescaled and sampled again
        return RowSample.of(w.sum(), weighted.sum(axis=0), weighted.T @ rows)


def _dense(rows):
    """Sampled rows as a float64 numpy array (from numpy, CuPy, scipy or pydata sparse,
    or categorical blocks)."""
    if hasattr(rows, "toarray"):
        rows = rows.toarray()
    elif hasattr(rows, "todense"):
        rows = rows.todense()
    return np.asarray(to_host(rows), dtype=np.float64)
