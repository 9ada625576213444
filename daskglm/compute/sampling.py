"""Which rows a stochastic step reads: epochs without replacement, reproducible.

An epoch visits every row once in a random order, ``batch_size`` rows per step (or, with
``shuffle=False``, in the rows' own order: partition after partition, each from its first
row, scikit-learn's ``shuffle=False``).  The
split of each mini-batch over the partitions is a sequence of multivariate
hypergeometric draws that depends only on ``(seed, epoch)``, and the order of a
partition's own rows only on ``(seed, epoch, partition index)``: a run does not depend on
how many workers there are or which finishes first.
"""

from __future__ import annotations

import numpy as np

from ..backend import from_host, to_host
from .kernels import kernel_matrix

__all__ = ["partition_size", "epoch_counts", "epoch_order", "batch_rows", "draw_rows", "take_rows",
           "take_rows_to_host"]


def _rng(seed, *key):
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def partition_size(part):
    """``(rows, total sample weight)`` of a partition, the weight summed as validation does."""
    X, weight = part[0], part[2]
    return int(X.shape[0]), (float(X.shape[0]) if weight is None else float(weight.sum()))


def epoch_counts(rows, batch_size, seed, epoch, shuffle=True):
    """Rows each partition gives to each step of an epoch, every row once.

    The split over the partitions of the consecutive ``batch_size`` slices of a uniformly
    random order of all rows: the partition of every position of that order (a shuffle of
    each row's partition index), counted per slice.  Each step's split is thus a
    multivariate hypergeometric draw from the rows each partition has left, for the cost of
    one shuffle of ``sum(rows)`` small integers.

    Parameters
    ----------
    rows : sequence of int
        Rows of each partition.
    batch_size : int
    seed : int
    epoch : int
        The step at which the epoch begins; it names the epoch's random stream.
    shuffle : bool, default=True
        False splits the consecutive slices of the rows in their order (partition after
        partition) instead of a random order.

    Returns
    -------
    ndarray of int, shape (ceil(sum(rows) / batch_size), len(rows))
        Its rows sum to ``batch_size`` (the last one to what is left), its columns to
        ``rows``.
    """
    left = np.array(rows, dtype=np.int64)
    total = int(left.sum())
    n_steps = -(-total // batch_size)
    counts = np.zeros((n_steps, left.shape[0]), dtype=np.int64)
    if left.shape[0] == 1:
        counts[:, 0] = batch_size
        counts[-1, 0] = total - (n_steps - 1) * batch_size
        return counts
    n_parts = left.shape[0]
    labels = np.repeat(np.arange(n_parts, dtype=np.min_scalar_type(n_parts)), left)
    if shuffle:
        _rng(seed, epoch).shuffle(labels)
    slots = np.arange(total, dtype=np.int64) // batch_size * n_parts
    slots += labels
    return np.bincount(slots, minlength=n_steps * n_parts).reshape(n_steps, n_parts)


def batch_rows(config, epoch, step):
    """Rows over all partitions at ``step`` of the epoch that began at step ``epoch``."""
    return min(config.batch_size, config.n_rows - (step - epoch) * config.batch_size)


#: The latest epoch's order of each partition's rows, ``{(seed, index, rows): (epoch,
#: order)}``, so that the steps of an epoch do not shuffle the partition again.
_ORDERS: dict[tuple, tuple[int, np.ndarray]] = {}
_MAX_ORDERS = 1024


def epoch_order(n_rows, seed, epoch, index, shuffle=True):
    """The random order of a partition's ``n_rows`` rows in the epoch that began at step
    ``epoch`` (seeded by ``seed`` and the partition's ``index``; cached, read-only); with
    ``shuffle=False`` the rows in their order, ``0, 1, ..., n_rows - 1``."""
    key = (seed, index, n_rows, bool(shuffle))
    cached = _ORDERS.get(key)
    if cached is not None and (cached[0] == epoch or not shuffle):
        return cached[1]
    dtype = np.int32 if n_rows <= np.iinfo(np.int32).max else np.int64
    if shuffle:
        order = _rng(seed, epoch, index).permutation(n_rows).astype(dtype, copy=False)
    else:
        order = np.arange(n_rows, dtype=dtype)
    order.flags.writeable = False
    if len(_ORDERS) >= _MAX_ORDERS:
        _ORDERS.pop(next(iter(_ORDERS)), None)
    _ORDERS[key] = (epoch, order)
    return order


def draw_rows(n_rows, count, seed, epoch, index, offset=0, shuffle=True):
    """Partition ``index``'s rows ``offset`` to ``offset + count`` of its epoch order, sorted.

    The order is a uniformly random permutation of the partition's ``n_rows`` rows, drawn
    from ``(seed, epoch, index)`` (the identity with ``shuffle=False``): the steps of an
    epoch take consecutive slices of it, so they visit every row once.
    """
    rows = np.sort(epoch_order(int(n_rows), seed, epoch, index, shuffle)[offset : offset + count])
    return rows


def take_rows(part, rows):
    """``(X, y, weight)`` of a partition at the row numbers ``rows`` (a numpy array), where
    the partition lives: the numbers go to the partition's device first."""
    X, y, weight = part[:3]
    X = kernel_matrix(X)
    rows = from_host(rows, X)
    return X[rows], y[rows], None if weight is None else weight[rows]


def take_rows_to_host(part, rows):
    """:func:`take_rows` as numpy (for code that runs on the CPU, such as Hogwild's
    threads): a device partition's rows are copied to the host."""
    return tuple(to_host(a) for a in take_rows(part, rows))
