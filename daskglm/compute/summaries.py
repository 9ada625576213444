"""Kernels of the validation round and of the transformations of the partitions.

One pass over each partition checks it (finite values, labels, the support of the
target), sums its weight and column moments (:func:`summarize`), and the transformations
that the engine applies where the partitions live: labels encoded as 0/1
(:func:`encode_positive`) and columns of extreme scale multiplied by powers of two
(:func:`column_max_abs`, :func:`scale_columns`).

A solver's first evaluation can share the validation read (:func:`summarize_gram`,
:func:`summarize_and_evaluate`): the round returns a :class:`FusedSummary`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..backend import from_host, is_numpy_namespace, is_sparse, namespace, to_host
from .categorical_matrix import CategoricalMatrix, categorical_moments, is_categorical_matrix
from .kernels import GramStats, gram
from .row_blocks import block_scratch, row_blocks, transpose_product
from .row_sample import RowSample, row_sample, sample_floats
from .tree import row_additive

__all__ = [
    "PartitionSummary", "ColumnMoments", "column_moments", "summarize", "all_finite",
    "ColumnMaxima", "column_max_abs", "scale_columns", "partition_weight",
    "FusedSummary", "summarize_gram", "summarize_and_evaluate", "gram_moments",
]


@dataclass
class ColumnMoments:
    """Total weight, weighted column sums and weighted column sums of squares of ``X``,
    and the second moments of a sample of its rows (a
    :class:`~.row_sample.RowSample`, None beyond
    :data:`~.row_sample.SAMPLE_MAX_FEATURES` columns)."""

    weight: float
    sums: np.ndarray
    squares: np.ndarray
    sample: RowSample | None = None

    def __add__(self, other):
        sample = None
        if self.sample is not None and other.sample is not None:
            sample = self.sample + other.sample
        return ColumnMoments(self.weight + other.weight, self.sums + other.sums,
                             self.squares + other.squares, sample)


@row_additive
def column_moments(part, sample_rows=True):
    """Weighted first and second column moments (as sums) of one partition, one read of
    ``X``, and with ``sample_rows`` the second moments of a sample of its rows
    (:func:`~.row_sample.row_sample`)."""
    moments = _column_moments(part)
    moments.sample = row_sample(part[0], part[2]) if sample_rows else None
    return moments


def _column_moments(part):
    """:func:`column_moments` without the sample, by the layout of ``X``."""
    X, weight = part[0], part[2]
    if type(X) is np.ndarray and X.ndim == 2 and X.dtype in (np.float32, np.float64):
        return _dense_column_moments(X, weight)
    if sp.issparse(X) and X.format == "csr" and X.dtype in (np.float32, np.float64):
        return _csr_column_moments(X, weight)
    if is_categorical_matrix(X):
        return _categorical_column_moments(X, weight)
    xp = namespace(X)
    fast = is_numpy_namespace(xp)
    weight = xp.ones(X.shape[0], dtype=xp.float64) if weight is None else weight
    sums = xp.zeros(X.shape[1], dtype=xp.float64)
    squares = xp.zeros(X.shape[1], dtype=xp.float64)
    scratch = block_scratch(X) if fast else None
    # squares of columns beyond 1e154 overflow to inf, which the scale check then reports
    with np.errstate(over="ignore"):
        for start, stop in row_blocks(X):
            X_b, w_b = X[start:stop, ...], weight[start:stop]
            sums += transpose_product(X_b, w_b)
            if is_sparse(X_b):  # scipy's CSR or cupyx's
                squared = type(X_b)((X_b.data.astype(np.float64) ** 2, X_b.indices,
                                     X_b.indptr), shape=X_b.shape)
            elif fast:
                squared = np.square(X_b, out=scratch[: stop - start], dtype=np.float64)
            else:  # one temporary: X_b itself when it is float64 already
                wide = X_b if X_b.dtype == xp.float64 else xp.astype(X_b, xp.float64)
                squared = wide * wide
            squares += transpose_product(squared, w_b)
    return ColumnMoments(float(xp.sum(weight)), to_host(sums), to_host(squares))


def _dense_column_moments(X, weight):
    """:func:`column_moments` of a numpy partition, in one compiled read of ``X``."""
    from .moment_loops import weighted_moments  # numba, on first use

    sums = np.zeros(X.shape[1])
    squares = np.zeros(X.shape[1])
    row_weight = np.empty(0) if weight is None else np.ascontiguousarray(weight,
                                                                         dtype=np.float64)
    weighted_moments(X, row_weight, np.empty(0, dtype=np.intp), sums[None], squares[None])
    total = float(X.shape[0]) if weight is None else float(np.sum(weight))
    return ColumnMoments(total, sums, squares)


def _csr_column_moments(X, weight):
    """:func:`column_moments` of a scipy CSR partition: scipy's ``X.T @ w`` and, on the
    squared values, ``(X ** 2).T @ w``, each row's products added in row order (the bits of
    :func:`~.moment_loops.csr_weighted_moments`).  Two passes that each write one vector
    at random were measured 1.3 to 2.3 times as fast as that one compiled pass writing
    both in turn, on hashed rows of 2**20 columns."""
    row_weight = np.ones(X.shape[0]) if weight is None else np.asarray(weight,
                                                                       dtype=np.float64)
    data = X.data.astype(np.float64, copy=False)
    with np.errstate(over="ignore"):
        sums = np.asarray(X.T @ row_weight, dtype=np.float64).ravel()
        squared = sp.csr_matrix((data * data, X.indices, X.indptr), shape=X.shape)
        squares = np.asarray(squared.T @ row_weight, dtype=np.float64).ravel()
    total = float(X.shape[0]) if weight is None else float(np.sum(weight))
    return ColumnMoments(total, sums, squares)


def _categorical_column_moments(X, weight):
    """:func:`column_moments` of a categorical block (:func:`~.categorical_matrix.categorical_moments`)."""
    sums, squares = categorical_moments(X, weight, np.empty(0, dtype=np.intp), 1)
    total = float(X.shape[0]) if weight is None else float(np.sum(weight))
    return ColumnMoments(total, sums[0], squares[0])


@dataclass
class ColumnMaxima:
    """Largest absolute value of each column of ``X``."""

    values: np.ndarray

    def __add__(self, other):
        return ColumnMaxima(np.maximum(self.values, other.values))


@row_additive
def column_max_abs(part):
    """Largest absolute value of each column of one partition."""
    X = part[0]
    if X.shape[0] == 0:
        return ColumnMaxima(np.zeros(X.shape[1]))
    if is_categorical_matrix(X):
        values = np.zeros(X.shape[1])
        values[:X.numeric.shape[1]] = np.abs(X.numeric).max(axis=0)
        values[X.columns[X.columns >= 0]] = 1.0
        return ColumnMaxima(values)
    if is_sparse(X):
        return ColumnMaxima(np.asarray(to_host(abs(X).max(axis=0).toarray()),
                                       dtype=float).ravel())
    return ColumnMaxima(to_host(abs(X).max(axis=0).astype(float)))


def scale_columns(part, scale):
    """The partition with column ``j`` of ``X`` multiplied by ``scale[j]``."""
    X = part[0]
    if is_categorical_matrix(X):
        p = X.numeric.shape[1]
        if np.all(np.asarray(scale)[p:] == 1):  # the levels' columns keep their codes
            numeric = X.numeric * np.asarray(scale[:p]).astype(X.dtype)
            return (CategoricalMatrix(numeric, X.columns, X.n_features), *part[1:])
        X = X.kept_csr()
    scale = from_host(np.asarray(scale).astype(X.dtype), X)
    if is_sparse(X):
        X = X.copy()
        X.data *= scale[X.indices]
    else:
        X = X * scale
    return (X, *part[1:])


@dataclass
class PartitionSummary:
    """What validation needs to know of a partition, gathered in the same read."""

    rows: int
    weight: float
    problems: list = field(default_factory=list)
    #: Distinct target values (at most ``MAX_LABELS``), when asked for.
    labels: tuple | None = None
    #: Bytes the partition takes in memory (X as stored: dense, or CSR's three arrays).
    nbytes: int = 0
    #: Weighted column sums and sums of squares of ``X`` (the same read).
    moments: ColumnMoments | None = None
    #: The labels' weighted counts (:class:`~daskglm.compute.label_counts.LabelCounts`),
    #: with ``labels="counts"`` or ``"moments"``.
    label_counts: object = None
    #: ``sum w y`` and ``sum w offset`` (:func:`~daskglm.compute.inference.target_moments`;
    #: 0 where ``y`` is not finite): the start and the null model of some families.
    target: float = 0.0
    offset: float = 0.0

    def __add__(self, other):
        labels = None
        if self.labels is not None and other.labels is not None:
            labels = tuple(sorted(set(self.labels) | set(other.labels)))[:MAX_LABELS]
        moments = None
        if self.moments is not None and other.moments is not None:
            moments = self.moments + other.moments
        label_counts = None
        if self.label_counts is not None and other.label_counts is not None:
            label_counts = self.label_counts + other.label_counts
        return PartitionSummary(
            self.rows + other.rows, self.weight + other.weight, self.problems + other.problems,
            labels, self.nbytes + other.nbytes, moments, label_counts,
            self.target + other.target, self.offset + other.offset,
        )


def stored_bytes(a):
    """Bytes an array takes in memory: ``nbytes``, or the three arrays of a CSR matrix."""
    if a is None:
        return 0
    if is_sparse(a):
        return int(a.data.nbytes + a.indices.nbytes + a.indptr.nbytes)
    if hasattr(a, "nbytes"):
        return int(a.nbytes)
    return int(a.size) * _itemsize(a)  # a standard array: no nbytes


def _itemsize(a):
    """Bytes of one element of a standard array, from its namespace's dtype information."""
    xp = namespace(a)
    if a.dtype == xp.bool:
        return 1
    if xp.isdtype(a.dtype, "complex floating"):
        return 2 * xp.finfo(a.dtype).bits // 8
    if xp.isdtype(a.dtype, "real floating"):
        return xp.finfo(a.dtype).bits // 8
    return xp.iinfo(a.dtype).bits // 8


#: Distinct labels a summary keeps: every class of a classification problem of up to
#: ``MAX_LABELS - 1`` classes, and enough to tell that there are more.
MAX_LABELS = 1001


def distinct_labels(y):
    """Up to :data:`MAX_LABELS` distinct values of ``y``, sorted (one pass when binary)."""
    if y.size == 0:
        return ()
    low, high = y.min(), y.max()
    if low == high:
        return (float(low),)
    if np.all((y == low) | (y == high)):
        return float(low), float(high)
    return tuple(float(v) for v in np.unique(y)[:MAX_LABELS])


def encode_positive(part, positive):
    """The partition with ``y`` replaced by ``1.0`` where it equals ``positive``, else ``0.0``."""
    return (part[0], (part[1] == positive).astype(np.float64), *part[2:])


def all_finite(a):
    """Whether a dense or sparse array (or a categorical block) holds no NaN or infinity."""
    if is_sparse(a):
        a = a.data
    elif is_categorical_matrix(a):
        a = a.numeric
    return bool(namespace(a).all(namespace(a).isfinite(a)))


@row_additive
def summarize(part, family, labels=False, sums_finite=None, sample_rows=True):
    """Row count, total weight, column moments and a list of problems (NaN/inf, bad labels,
    bad weights).

    With ``labels``, the distinct target values are collected instead of checking them
    against ``family`` (class labels are encoded after validation); ``labels="counts"``
    also sums the weight of each label, ``"moments"`` also the column moments of each
    (:func:`~daskglm.compute.label_counts.count_labels`), which then sum to the column
    moments of the partition.  ``X`` is read once:
    its weighted column sums and sums of squares are finite exactly when every entry is
    (with finite weights), unless a square overflows, so only sums that are not finite
    call for an entry-by-entry check.  A caller that has already summed the partition's
    products (:func:`summarize_gram`) passes whether those sums were finite as
    ``sums_finite``: the column moments are then not computed (``moments`` is None).
    ``sample_rows`` says whether the moments include a sample of the rows' products
    (:func:`column_moments`), which only some solvers read.
    """
    X, y, weight = part[:3]
    offset = part[3] if len(part) > 3 else None
    problems = []
    found = None
    moments = None
    y_finite = all_finite(y)
    counts = None
    if labels in ("counts", "moments") and y_finite:
        from .label_counts import count_labels

        counts = count_labels(part, labels == "moments", MAX_LABELS)
        if sums_finite is None and counts.has_moments():  # the same read, by class
            moments = ColumnMoments(partition_weight(part), counts.sums.sum(axis=0),
                                    counts.squares.sum(axis=0),
                                    row_sample(X, weight) if sample_rows else None)
    if sums_finite is None:
        moments = column_moments(part, sample_rows) if moments is None else moments
        sums_finite = bool(np.isfinite(moments.sums).all()
                           and np.isfinite(moments.squares).all())
    if not sums_finite and not all_finite(X):
        problems.append(non_finite_message(X))
    if not y_finite:
        problems.append("Input y contains NaN or infinity.")
    elif labels:
        found = distinct_labels(y)
    if counts is None:
        try:
            family.check_target(y)
        except ValueError as exc:
            problems.append(str(exc))
    total = float(X.shape[0])
    if weight is not None:
        if not all_finite(weight):
            problems.append("sample_weight contains NaN or infinity.")
        elif weight.size and weight.min() < 0:
            problems.append("sample_weight has negative values; weights must be >= 0.")
        total = float(weight.sum())
    if offset is not None and not all_finite(offset):
        problems.append("offset contains NaN or infinity.")
    size = stored_bytes(X) + stored_bytes(y) + stored_bytes(weight) + stored_bytes(offset)
    target = offset_sum = 0.0
    if y_finite:
        from .inference import target_moments

        sums = target_moments(part)
        target, offset_sum = sums.target, sums.offset
    return PartitionSummary(int(X.shape[0]), total, problems, found, size, moments, counts,
                            target, offset_sum)


def non_finite_message(X):
    """What validation says of an ``X`` with NaN or infinite entries; for missing values
    (NaN) in dense ``X``, also how to fill them."""
    message = "Input X contains NaN or infinity."
    dense = X.numeric if is_categorical_matrix(X) else None if is_sparse(X) else X
    if dense is not None:
        xp = namespace(dense)
        if bool(xp.any(xp.isnan(dense))):
            message += " " + MISSING_HINT
    return message


#: How to fill missing values, said where they are found.
MISSING_HINT = ("Its missing values (NaN) can be filled with their columns' means: fit with "
                "missing='mean'.")


def partition_weight(part):
    """Total weight of one partition (its row count when unweighted), as validation counts it."""
    y, weight = part[1], part[2]
    return float(y.shape[0]) if weight is None else float(weight.sum())


@dataclass
class FusedSummary:
    """A validation summary and a solver's first evaluation, from the same read.

    ``result`` is None when any partition found a problem: the fit stops on the
    validation error, and a kernel is never run on data that failed validation.
    """

    summary: PartitionSummary
    result: object = None

    def __add__(self, other):
        result = None
        if self.result is not None and other.result is not None:
            result = self.result + other.result
        return FusedSummary(self.summary + other.summary, result)


@row_additive
def summarize_gram(part, family):
    """:func:`summarize` and the Gram statistics (:func:`~daskglm.compute.kernels.gram`) of
    one partition in one read of ``X``: the column moments are left to the driver, which
    derives them from the summed Gram statistics (:func:`gram_moments`).

    The Gram statistics are finite exactly when every entry of ``X`` is (unless a
    product overflows), which stands in for the moments' finiteness test.
    """
    with np.errstate(all="ignore"):  # NaN/inf in X is reported as a problem, not a warning
        stats = gram(tuple(part[:3]))
    sums_finite = bool(np.isfinite(stats.mean_x).all() and np.isfinite(stats.sxx).all())
    summary = summarize(part, family, sums_finite=sums_finite)
    return FusedSummary(summary, None if summary.problems else stats)


def gram_moments(stats: GramStats) -> ColumnMoments:
    """The weighted column sums and sums of squares of ``X`` from its Gram statistics."""
    sums = stats.weight * stats.mean_x
    squares = np.diag(stats.sxx) + stats.weight * stats.mean_x**2
    sample = None
    if sample_floats(sums.shape[0]):
        products = stats.sxx + stats.weight * np.outer(stats.mean_x, stats.mean_x)
        sample = RowSample.of(stats.weight, sums, products)
    return ColumnMoments(float(stats.weight), sums, squares, sample)


@row_additive
def summarize_and_evaluate(part, family, sample_rows, kernel, *args):
    """:func:`summarize` (with a sample of the rows when ``sample_rows``) and
    ``kernel(part, *args)`` (a solver's first evaluation) in the same task; the kernel
    runs only on a partition without problems."""
    summary = summarize(part, family, sample_rows=sample_rows)
    return FusedSummary(summary, None if summary.problems else kernel(part, *args))
