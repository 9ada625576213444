"""Pure per-partition computations: ``(partition, broadcast arguments) -> additive statistics``.

A partition is the tuple ``(X, y, weight)`` of one block of rows, co-located on one worker;
``weight`` is None when every row weighs 1.  The parameter vector is the coefficients
followed, when an intercept is fitted, by the intercept: no column of ones is ever added
to ``X``.  Dense partitions are processed in cache-sized row blocks so that each row of
``X`` is read from memory once per evaluation: ``X_b @ coef`` and ``X_b.T @ r`` run while
``X_b`` is still in cache.

Sparse partitions are scipy CSR matrices (:func:`as_csr_or_dense` converts any other sparse
layout once, when a partition is packed) and every kernel works on them without densifying
``X``: products with ``X`` and ``X.T`` are sparse products, and second moments ``X^T W X``
are accumulated from each row's non-zeros into a dense array (:mod:`daskglm.csr_products`).

Every statistic returned here is a sum over rows and supports ``+``; :func:`tree_sum`
adds a list of them in a fixed order, which is how every engine reduces them.  Nothing in
this module imports dask.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .backend import array_module, is_device, to_host
from .csr_products import csr_weighted_gram

__all__ = [
    "Stats",
    "GramStats",
    "PartitionSummary",
    "loss_grad",
    "loss_grad_hess",
    "gram",
    "ColumnMoments",
    "column_moments",
    "summarize",
    "tree_sum",
    "linear_predictor",
    "as_csr_or_dense",
    "all_finite",
    "ColumnMaxima",
    "column_max_abs",
    "scale_columns",
    "complete_nodes",
    "combine_nodes",
    "tree_root",
    "tree_children",
    "node_start",
    "run_group",
    "run_stateful_group",
    "partial_tree_sum",
    "partition_weight",
]

#: Bytes of ``X`` processed per block: a quarter of a typical 2 MiB L2 cache.
BLOCK_BYTES = 1 << 19


def _block_rows(n_features, products=False):
    """Rows per block; ``products``: at least ``n_features``, for blocks that form ``X_b^T X_b``.

    A second-moment product of a block with fewer rows than columns does less arithmetic
    per byte than BLAS needs to run at speed (at 1,000 columns, 65-row blocks take three
    times as long as one ``X.T @ X``), so those blocks grow past the cache size.
    """
    rows = max(64, BLOCK_BYTES // (8 * max(1, n_features)))
    return max(rows, n_features) if products else rows


def _row_blocks(X, products=False):
    """Yield ``(start, stop)`` row ranges; sparse partitions are one block."""
    n = X.shape[0]
    # sparse partitions, and device arrays (one large launch beats many small ones), are
    # one block
    one_block = sp.issparse(X) or is_device(X) or n == 0
    step = n if one_block else _block_rows(X.shape[1], products)
    for start in range(0, n, max(step, 1)):
        yield start, min(start + step, n)


def _take(weight, start, stop):
    return None if weight is None else weight[start:stop]


def as_csr_or_dense(X):
    """``X`` in a layout every kernel accepts: a scipy CSR matrix or a C-contiguous ndarray.

    Engines call this once per partition, when they pack it, so that the kernels never
    convert.  CSR is the one sparse layout of the kernels: its row slices (cache blocks,
    mini-batches) cost only the rows' non-zeros, ``X @ v`` and ``X.T @ r`` are compiled
    loops over the stored entries, scikit-learn's text vectorisers produce it, and Dask
    concatenates scipy matrices natively.  pydata ``sparse`` arrays (COO, GCXS) are
    converted rather than supported twice: their products are slower and their row
    indexing copies.

    Parameters
    ----------
    X : ndarray, scipy.sparse matrix or array, or pydata ``sparse`` array, 2-D

    Returns
    -------
    scipy.sparse CSR matrix or ndarray
        Sparse input becomes CSR in canonical form (sorted column indices, no duplicate
        entries; the input is never modified); anything else a C-contiguous ndarray.  A
        float32 or float64 dtype is kept; other dtypes become float64.
    """
    if not sp.issparse(X) and hasattr(X, "to_scipy_sparse"):  # pydata sparse
        X = X.to_scipy_sparse()
    if sp.issparse(X):
        csr = X.tocsr()
        if csr.dtype not in (np.float32, np.float64):
            csr = csr.astype(np.float64)
        if not csr.has_canonical_format:
            csr = csr.copy() if csr is X else csr
            csr.sum_duplicates()  # also sorts the column indices of every row
        return csr
    xp = array_module(X)
    X = xp.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    return xp.ascontiguousarray(X)


def linear_predictor(X, params, fit_intercept):
    """``X @ coef (+ intercept)`` for one block of rows."""
    xp = array_module(X)
    params = xp.asarray(params)
    if fit_intercept:
        return xp.asarray(X @ params[:-1]).ravel() + params[-1]
    return xp.asarray(X @ params).ravel()


@dataclass
class Stats:
    """Additive sums over rows: total weight, loss, gradient and optionally Hessian.

    ``grad`` and ``hess`` are with respect to the parameter vector (coefficients, then the
    intercept when one is fitted).  They are sums, not means.
    """

    weight: float
    loss: float
    grad: np.ndarray
    hess: np.ndarray | None = None

    def __add__(self, other):
        hess = None if self.hess is None else self.hess + other.hess
        return Stats(self.weight + other.weight, self.loss + other.loss, self.grad + other.grad, hess)


def _transpose_product(X, r):
    """``X.T @ r`` as a flat dense vector, for dense or sparse ``X``."""
    return array_module(X).asarray(X.T @ r).ravel()


def loss_grad(part, params, family, fit_intercept):
    """Loss and gradient sums of one partition at ``params``: one read of ``X``."""
    X, y, weight = part
    n_params = params.shape[0]
    grad = array_module(X).zeros(n_params)
    loss = 0.0
    for start, stop in _row_blocks(X):
        X_b = X[start:stop]
        eta = linear_predictor(X_b, params, fit_intercept)
        block_loss, r = family.loss_and_dloss(y[start:stop], eta, _take(weight, start, stop))
        loss += block_loss
        if fit_intercept:
            grad[:-1] += _transpose_product(X_b, r)
            grad[-1] += r.sum()
        else:
            grad += _transpose_product(X_b, r)
    total = float(X.shape[0]) if weight is None else float(weight.sum())
    return Stats(total, float(loss), to_host(grad))


def _weighted_gram(X_b, h, scratch):
    """``X_b.T @ diag(h) @ X_b`` and ``X_b.T @ h`` for a block (``scratch``: a block buffer)."""
    if sp.issparse(X_b):
        return csr_weighted_gram(X_b, h), _transpose_product(X_b, h)
    # X_b^T diag(h) X_b as S^T S with S = diag(sqrt(h)) X_b: numpy hands a product of an
    # array with its own transpose to BLAS's symmetric rank-k update, half the work of a
    # general product.  Curvatures h are never negative (convex canonical losses, Fisher
    # weights for other links, weights >= 0).
    xp = array_module(X_b)
    scaled = xp.multiply(X_b, xp.sqrt(h)[:, None], out=scratch[: X_b.shape[0]])
    return scaled.T @ scaled, X_b.T @ h


def loss_grad_hess(part, params, family, fit_intercept):
    """Loss, gradient and Hessian sums of one partition at ``params``: one read of ``X``."""
    X, y, weight = part
    n_params = params.shape[0]
    n_coef = n_params - 1 if fit_intercept else n_params
    xp = array_module(X)
    grad = xp.zeros(n_params)
    hess = xp.zeros((n_params, n_params))
    loss = 0.0
    scratch = _scratch(X, products=True)
    for start, stop in _row_blocks(X, products=True):
        X_b = X[start:stop]
        y_b, w_b = y[start:stop], _take(weight, start, stop)
        eta = linear_predictor(X_b, params, fit_intercept)
        block_loss, r = family.loss_and_dloss(y_b, eta, w_b)
        h = family.d2loss(y_b, eta, w_b)
        loss += block_loss
        gram_b, col_sums = _weighted_gram(X_b, h, scratch)
        grad[:n_coef] += _transpose_product(X_b, r)
        hess[:n_coef, :n_coef] += gram_b
        if fit_intercept:
            grad[-1] += r.sum()
            hess[:n_coef, -1] += col_sums
            hess[-1, :n_coef] += col_sums
            hess[-1, -1] += h.sum()
    total = float(X.shape[0]) if weight is None else float(weight.sum())
    return Stats(total, float(loss), to_host(grad), to_host(hess))


@dataclass
class GramStats:
    """Weighted centred second moments of ``(X, y)``, merged exactly and stably.

    Holds the total weight, weighted means of the columns of ``X`` and of ``y``, and the
    centred cross-products ``Sxx = sum w (x - mean_x)(x - mean_x)^T``, ``Sxy``, ``Syy``.
    ``+`` merges two sets of rows with the pairwise update of Chan, Golub and LeVeque,
    which avoids the cancellation of the one-pass ``X^T X - n mean mean^T``.
    """

    weight: float
    mean_x: np.ndarray
    mean_y: float
    sxx: np.ndarray
    sxy: np.ndarray
    syy: float

    @classmethod
    def empty(cls, n_features):
        d = n_features
        return cls(0.0, np.zeros(d), 0.0, np.zeros((d, d)), np.zeros(d), 0.0)

    def __add__(self, other):
        if other.weight == 0:
            return self
        if self.weight == 0:
            return other
        total = self.weight + other.weight
        dx = other.mean_x - self.mean_x
        dy = other.mean_y - self.mean_y
        factor = self.weight * other.weight / total
        return GramStats(
            total,
            self.mean_x + dx * (other.weight / total),
            self.mean_y + dy * (other.weight / total),
            self.sxx + other.sxx + factor * np.outer(dx, dx),
            self.sxy + other.sxy + factor * dx * dy,
            self.syy + other.syy + factor * dy * dy,
        )

    def uncentred(self):
        """``(X^T W X, X^T W y)`` about the origin, for fits without an intercept."""
        xtx = self.sxx + self.weight * np.outer(self.mean_x, self.mean_x)
        xty = self.sxy + self.weight * self.mean_x * self.mean_y
        return xtx, xty


def _scratch(X, products=False):
    """One reusable block-sized buffer for a kernel call on dense ``X``.

    Reusing it keeps every block's temporaries out of the allocator: with the small
    ``MALLOC_TRIM_THRESHOLD_`` that Dask's nanny sets, a fresh 512 KiB temporary per block
    costs a new memory mapping and its page faults each time.
    """
    if sp.issparse(X):
        return None
    rows = X.shape[0] if is_device(X) else min(X.shape[0], _block_rows(X.shape[1], products))
    return array_module(X).empty((rows, X.shape[1]))


def _sparse_gram(X, y, weight):
    """Centred weighted Gram statistics of a CSR partition, ``X`` never densified.

    With ``W`` the total weight and ``m = X^T w / W`` the weighted column means,
    ``Sxx = X^T W X - W m m^T``, with ``X^T W X`` summed from the rows' non-zeros;
    ``Sxy = X^T (w * (y - mean_y))`` and ``Syy`` are exact.  Unlike the dense kernel's
    centred products, the subtraction in ``Sxx`` loses relative accuracy of about
    ``eps * max(m^2) / var`` for a column whose mean is large against its spread; sparse
    columns, mostly zeros, have small means.  Partitions are still merged exactly by
    :class:`GramStats`.
    """
    weight = np.ones(X.shape[0]) if weight is None else weight
    total = float(weight.sum())
    if total == 0:
        return GramStats.empty(X.shape[1])
    mean_x = _transpose_product(X, weight) / total
    mean_y = float(weight @ y) / total
    yc = y - mean_y
    wyc = yc * weight
    sxx = csr_weighted_gram(X, weight) - total * np.outer(mean_x, mean_x)
    return GramStats(total, mean_x, mean_y, sxx, _transpose_product(X, wyc), float(wyc @ yc))


def gram(part):
    """Centred weighted Gram statistics of one partition: one read of ``X``."""
    X, y, weight = part
    if sp.issparse(X):
        return _sparse_gram(X, y, weight)
    total = GramStats.empty(X.shape[1])
    centred = _scratch(X, products=True)
    weighted = None if weight is None else _scratch(X, products=True)
    for start, stop in _row_blocks(X, products=True):
        X_b, y_b = X[start:stop], y[start:stop]
        w_b = _take(weight, start, stop)
        block_weight = float(stop - start) if w_b is None else float(w_b.sum())
        if block_weight == 0:
            continue
        xc = centred[: stop - start]
        if w_b is None:
            mean_x = X_b.mean(axis=0)
            mean_y = float(y_b.mean())
        else:
            mean_x = (w_b @ X_b) / block_weight
            mean_y = float(w_b @ y_b) / block_weight
        np.subtract(X_b, mean_x, out=xc)
        yc = y_b - mean_y
        wyc = yc if w_b is None else yc * w_b
        if w_b is None:
            sxx = xc.T @ xc
        else:
            wxc = weighted[: stop - start] if weighted is not None else np.empty_like(xc)
            sxx = np.multiply(xc, w_b[:, None], out=wxc).T @ xc
        total = total + GramStats(block_weight, to_host(mean_x), mean_y, to_host(sxx),
                                  to_host(xc.T @ wyc), float(wyc @ yc))
    return total


@dataclass
class ColumnMoments:
    """Total weight, weighted column sums and weighted column sums of squares of ``X``."""

    weight: float
    sums: np.ndarray
    squares: np.ndarray

    def __add__(self, other):
        return ColumnMoments(
            self.weight + other.weight, self.sums + other.sums, self.squares + other.squares
        )


def column_moments(part):
    """Weighted first and second column moments (as sums) of one partition: one read of ``X``."""
    X, _, weight = part
    xp = array_module(X)
    weight = xp.ones(X.shape[0]) if weight is None else weight
    sums = xp.zeros(X.shape[1])
    squares = xp.zeros(X.shape[1])
    scratch = _scratch(X)
    for start, stop in _row_blocks(X):
        X_b, w_b = X[start:stop], weight[start:stop]
        sums += _transpose_product(X_b, w_b)
        if sp.issparse(X_b):
            squared = type(X_b)((np.square(X_b.data, dtype=np.float64), X_b.indices, X_b.indptr),
                                shape=X_b.shape)
        else:
            squared = np.square(X_b, out=scratch[: stop - start], dtype=np.float64)
        squares += _transpose_product(squared, w_b)
    return ColumnMoments(float(weight.sum()), to_host(sums), to_host(squares))


@dataclass
class ColumnMaxima:
    """Largest absolute value of each column of ``X``."""

    values: np.ndarray

    def __add__(self, other):
        return ColumnMaxima(np.maximum(self.values, other.values))


def column_max_abs(part):
    """Largest absolute value of each column of one partition."""
    X = part[0]
    if X.shape[0] == 0:
        return ColumnMaxima(np.zeros(X.shape[1]))
    if sp.issparse(X):
        return ColumnMaxima(np.asarray(abs(X).max(axis=0).todense(), dtype=float).ravel())
    return ColumnMaxima(to_host(abs(X).max(axis=0).astype(float)))


def scale_columns(part, scale):
    """The partition with column ``j`` of ``X`` multiplied by ``scale[j]``."""
    X, y, weight = part
    if sp.issparse(X):
        X = X.copy()
        X.data *= scale.astype(X.dtype)[X.indices]
    else:
        X = X * scale.astype(X.dtype)
    return X, y, weight


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

    def __add__(self, other):
        labels = None
        if self.labels is not None and other.labels is not None:
            labels = tuple(sorted(set(self.labels) | set(other.labels)))[:MAX_LABELS]
        moments = None
        if self.moments is not None and other.moments is not None:
            moments = self.moments + other.moments
        return PartitionSummary(
            self.rows + other.rows, self.weight + other.weight, self.problems + other.problems,
            labels, self.nbytes + other.nbytes, moments,
        )


def stored_bytes(a):
    """Bytes an array takes in memory: ``nbytes``, or the three arrays of a CSR matrix."""
    if a is None:
        return 0
    if sp.issparse(a):
        return int(a.data.nbytes + a.indices.nbytes + a.indptr.nbytes)
    return int(a.nbytes)


#: Distinct labels a summary keeps: enough to tell one, two or more than two classes.
MAX_LABELS = 3


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
    X, y, weight = part
    return X, (y == positive).astype(np.float64), weight


def all_finite(a):
    """Whether a dense or sparse array holds no NaN or infinity."""
    if sp.issparse(a):
        a = a.data
    return bool(np.isfinite(a).all())


def summarize(part, family, labels=False):
    """Row count, total weight, column moments and a list of problems (NaN/inf, bad labels,
    bad weights).

    With ``labels``, the distinct target values are collected instead of checking them
    against ``family`` (class labels are encoded after validation).  ``X`` is read once:
    its weighted column sums and sums of squares are finite exactly when every entry is
    (with finite weights), unless a square overflows, so only sums that are not finite
    call for an entry-by-entry check.
    """
    X, y, weight = part
    problems = []
    found = None
    moments = column_moments(part)
    finite_moments = bool(np.isfinite(moments.sums).all() and np.isfinite(moments.squares).all())
    if not finite_moments and not all_finite(X):
        problems.append("Input X contains NaN or infinity.")
    if not all_finite(y):
        problems.append("Input y contains NaN or infinity.")
    elif labels:
        found = distinct_labels(y)
    else:
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
    size = stored_bytes(X) + stored_bytes(y) + stored_bytes(weight)
    return PartitionSummary(int(X.shape[0]), total, problems, found, size, moments)


def tree_sum(items):
    """Sum ``items`` in the fixed-order binary tree over their positions.

    Node ``(level, k)`` of the tree over ``n`` items covers items ``[k 2^level, (k + 1)
    2^level)`` (clipped to ``n``) and is the sum of its two children, left plus right.
    Engines reduce partials in exactly this order, so the result depends on neither which
    worker finished first nor how partitions were grouped into tasks.
    """
    items = list(items)
    if not items:
        raise ValueError("Nothing to sum.")
    leaves = {(0, i): item for i, item in enumerate(items)}
    return complete_nodes(leaves, len(items))[tree_root(len(items))]


def sum_group(*group):
    """Sum the arguments left to right."""
    total = group[0]
    for item in group[1:]:
        total = total + item
    return total


def tree_root(n_leaves):
    """The root node ``(level, 0)`` of the reduction tree over ``n_leaves`` leaves."""
    level = 0
    while 2**level < n_leaves:
        level += 1
    return (level, 0)


def tree_children(node, n_leaves):
    """The children of ``node = (level, k)`` that exist in the tree over ``n_leaves``."""
    level, index = node
    width = 2 ** (level - 1)
    return [(level - 1, j) for j in (2 * index, 2 * index + 1) if j * width < n_leaves]


def node_start(node):
    """The first leaf under ``node``."""
    level, index = node
    return index * 2**level


def complete_nodes(nodes, n_leaves):
    """The largest subtrees of the reduction tree that ``nodes`` complete, with their sums.

    ``nodes`` maps tree nodes (leaves ``(0, i)`` or larger subtrees) to their sums; a
    parent is summed wherever all its children are present.  Returns ``{node: sum}`` for
    the maximal nodes found, ordered by position.  Whoever holds every returned node can
    finish the tree, and the total is the same however the leaves were split up.
    """
    found = dict(nodes)
    top = set(found)
    root_level = tree_root(n_leaves)[0]
    lowest = min((level for level, _ in found), default=root_level)
    for level in range(lowest + 1, root_level + 1):
        parents = sorted({(level, k // 2) for lower, k in found if lower == level - 1})
        for parent in parents:
            children = tree_children(parent, n_leaves)
            if parent not in found and all(child in found for child in children):
                found[parent] = sum_group(*(found[child] for child in children))
                top.difference_update(children)
                top.add(parent)
    return {node: found[node] for node in sorted(top, key=node_start)}


def combine_nodes(n_leaves, *node_sets):
    """One combine task: the complete nodes of the union of the ``node_sets`` it gathers."""
    merged = {}
    for node_set in node_sets:
        merged.update(node_set)
    return complete_nodes(merged, n_leaves)


def run_group(fn, parts, items, args, indices=None, n_leaves=None):
    """Run ``fn`` on the partitions of one task, in order.

    ``fn(part, item, *args)`` when ``items`` holds one item per partition, else
    ``fn(part, *args)``.  Engines run one such call per group of partitions that share a
    worker thread, so a round costs one task per thread, not one per partition.

    Returns the list of results, or with ``indices`` (the partitions' positions among
    ``n_leaves``) the complete nodes of the reduction tree they make
    (:func:`complete_nodes`).
    """
    if items is None:
        results = [fn(part, *args) for part in parts]
    else:
        results = [fn(part, item, *args) for part, item in zip(parts, items)]
    if indices is None:
        return results
    return complete_nodes({(0, i): result for i, result in zip(indices, results)}, n_leaves)


def run_stateful_group(fn, parts, states, args, indices=None, n_leaves=None):
    """Run a stateful kernel on the partitions of one task, in order.

    ``fn(part, state, *args)`` returns ``(result, new_state)``; ``states`` holds each
    partition's state from the previous round (None on the first).  Returns ``(out,
    new_states)``: ``out`` is what :func:`run_group` returns for the results (the list, or
    with ``indices`` the complete nodes of the reduction tree), ``new_states`` the list of
    new states, in the order of ``parts``.
    """
    results, new_states = [], []
    for part, state in zip(parts, states):
        result, new_state = fn(part, state, *args)
        results.append(result)
        new_states.append(new_state)
    if indices is None:
        return results, new_states
    return complete_nodes({(0, i): r for i, r in zip(indices, results)}, n_leaves), new_states


def partial_tree_sum(items, n_leaves):
    """Sum ``items`` (``{leaf index: value}``, some leaves missing) in the fixed-order tree
    over ``n_leaves`` leaves, restricted to the leaves present.

    Every node is the sum of its children that have a present leaf under them, left plus
    right; a node with one such child is that child.  The result is therefore the one the
    full tree (:func:`tree_sum`) gives when the missing leaves are exact zeros, and it
    depends only on which leaves are present, never on the order they came in.  None when
    no leaf is present.
    """
    if not items:
        return None

    def node_sum(level, index):
        if level == 0:
            return items.get(index)
        present = [s for s in (node_sum(level - 1, 2 * index), node_sum(level - 1, 2 * index + 1))
                   if s is not None]
        return sum_group(*present) if present else None

    return node_sum(*tree_root(n_leaves))


def partition_weight(part):
    """Total weight of one partition (its row count when unweighted), as validation counts it."""
    _, y, weight = part
    return float(y.shape[0]) if weight is None else float(weight.sum())
