"""Coefficients kept in column shards, and the partition kernel that pulls from and pushes to them.

A :class:`ColumnShard` holds one contiguous range ``[lo, hi)`` of the parameter vector
(coefficients, then the intercept) together with everything an L-BFGS iteration needs
on that range: the iterate ``x``, the search direction ``d``, the gradient ``g`` at
``x``, the gradient ``g_trial`` at the last trial point ``x + alpha d``, and the
correction pairs ``(s_i, y_i)`` as the rows of one array ``basis`` (rows ``0..m-1`` the
``s`` slots, rows ``m..2m-1`` the ``y`` slots).  It answers three kinds of calls:

* from the workers' :class:`~daskglm.compute.worker_columns.WorkerColumns` (one per
  worker, speaking for its partitions): :meth:`~ColumnShard.register` (the union of the
  worker's touched columns in the shard's range, once), :meth:`~ColumnShard.pull`
  (``x + alpha d`` on those columns only) and :meth:`~ColumnShard.push` (the worker's
  summed gradient on them);
* from the coordinator (the driver), small commands whose arguments and answers are
  scalars or vectors of length ``2 m``: :meth:`~ColumnShard.finish` (sum the pushes of a
  round in contributor order into ``g_trial``; the shard's parts of the penalty value,
  ``g_trial . d``, ``max |g_trial|`` and the intercept's gradient),
  :meth:`~ColumnShard.accept` (move to the trial point, store a correction pair, return
  shard-local dot products with the basis) and :meth:`~ColumnShard.direction` (``d =
  basis^T c + c_g g``).  The coordinator fills the
  slots from 0 up and reuses them in turn once all are full, so the slots holding pairs
  are always ``0..k-1``, and the rows it names are two contiguous blocks (no copies);
* :meth:`~ColumnShard.load` and :meth:`~ColumnShard.values`: the full range, at the
  start and the end of a fit only.

:func:`touched_columns` builds a partition's state once (its touched columns, and its
``X`` as it is).  Pure numpy/scipy: the kernels that use it are in
:mod:`daskglm.compute.worker_columns`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .kernels import kernel_matrix

__all__ = [
    "ColumnShard", "PartitionColumns", "shard_bounds", "touched_columns", "mark_columns",
]


def shard_bounds(n_params, n_shards):
    """Boundaries ``[0, b_1, ..., n_params]`` of ``n_shards`` contiguous, near-equal ranges."""
    n_shards = max(1, min(int(n_shards), int(n_params)))
    return np.linspace(0, int(n_params), n_shards + 1).round().astype(np.int64)


class ColumnShard:
    """One contiguous range of the parameters and the L-BFGS vectors on it.

    Parameters
    ----------
    lo, hi : int
        The range ``[lo, hi)`` of parameter indices held.
    n_features : int
        Parameters below this index are coefficients (penalised); at or above it, the
        intercept (not penalised).
    penalty : Penalty
        A smooth penalty, separable over coordinates (its value and gradient are computed
        on the shard's coefficients alone).
    memory : int
        Correction pairs kept (``m``).
    criterion_scales : ndarray, optional
        Each parameter's factor in the optimality test on the range (see
        :meth:`daskglm.solvers.base.Objective.optimality`): ``max |g|`` is then the
        largest of ``|g| * criterion_scales``.
    units : ndarray, optional
        Each parameter's unit: the iteration runs in ``theta = params / units`` (the
        iterate ``x``, the direction, the gradients and the pairs are ``theta``'s), as
        on columns scaled to unit size, while pulls, :meth:`values`, the penalty and the
        optimality test see the parameters themselves.  None: the parameters.
    means : ndarray, optional
        The weighted means ``mu_j`` of the range's columns, for a fit with an intercept:
        the iteration then also runs as on centred columns.  With ``m_j = mu_j *
        units_j``, coefficient ``j`` is ``units_j theta_j`` and the intercept
        ``theta_b - m . theta`` (up to a constant), so the gradient in ``theta`` is
        ``units_j (g_j - mu_j g_b)`` and ``g_b``: each shard needs the scalars ``g_b``
        (given to :meth:`accept`) and ``m . d`` (given to :meth:`direction`), and the
        shard holding the intercept keeps ``m . (x - x_0)`` (its :attr:`shift`).  None:
        not centred.
    """

    def __init__(self, lo, hi, n_features, penalty, memory, criterion_scales=None,
                 units=None, means=None):
        self.lo, self.hi = int(lo), int(hi)
        size = self.hi - self.lo
        self.n_coef = max(0, min(int(n_features), self.hi) - self.lo)
        self.penalty = penalty
        self.memory = int(memory)
        self.x = np.zeros(size)
        self.d = np.zeros(size)
        self.g = np.zeros(size)
        self.g_trial = np.zeros(size)
        self.basis = np.zeros((2 * self.memory, size))
        self._stacked = np.empty((3, size))  # g and the newest pair, for accept's products
        self.criterion_scales = (None if criterion_scales is None
                                 else np.asarray(criterion_scales, dtype=np.float64))
        self.units = None if units is None else np.asarray(units, dtype=np.float64)
        self.holds_intercept = self.n_coef < size
        self.centring = None  # m = means * units on the coefficients, when centred
        if means is not None:
            coef_units = np.ones(self.n_coef) if units is None else self.units[: self.n_coef]
            self.centring = np.asarray(means, dtype=np.float64)[: self.n_coef] * coef_units
        self.shift = 0.0  # m . (x - x_0), on the shard holding the intercept
        self.shift_step = 0.0  # m . d
        self._registered = {}
        self._pending = {}
        self._lock = threading.Lock()

    # contributors: the workers' columns (row partitions) or the tiles (column blocks) -----
    def register(self, part, columns):
        """Remember contributor ``part``'s touched columns in this range (sorted global
        indices, no repeats)."""
        local = np.asarray(columns, dtype=np.int64) - self.lo
        size = self.hi - self.lo
        if local.size and (local[0] < 0 or local[-1] >= size):
            raise ValueError(f"columns outside the shard's range [{self.lo}, {self.hi})")
        with self._lock:
            # all of them (hashed features at n z >> d): a slice, read without a gather
            self._registered[int(part)] = slice(0, size) if local.size == size else local

    def register_range(self, parts):
        """Register each of ``parts`` with the whole range (column blocks: a tile of a
        feature block touches every column of it)."""
        with self._lock:
            for part in parts:
                self._registered[int(part)] = slice(0, self.hi - self.lo)

    def pull(self, part, alpha):
        """The parameters at ``x + alpha d`` on contributor ``part``'s registered columns."""
        local = self._registered[int(part)]
        theta = self.x[local] + alpha * self.d[local]
        values = theta if self.units is None else self.units[local] * theta
        if self._centred_intercept() and _holds_last(local, self.hi - self.lo):
            values[-1] -= self.shift + alpha * self.shift_step
        return values

    def _centred_intercept(self):
        return self.centring is not None and self.holds_intercept

    def push(self, part, round_id, values):
        """Keep contributor ``part``'s gradient sums on its columns for round ``round_id``."""
        values = np.asarray(values, dtype=np.float64)
        local = self._registered[int(part)]
        count = local.stop - local.start if isinstance(local, slice) else local.size
        if values.shape != (count,):
            raise ValueError("pushed values do not match the registered columns")
        with self._lock:
            self._pending.setdefault(int(round_id), {})[int(part)] = values

    # coordinator commands -------------------------------------------------------------
    def load(self, values):
        """Start from the parameters ``values``; forget the direction and every push.  The
        pairs need no clearing: a slot's rows are read only once the coordinator stored a
        pair in it (and writing zeros to ``2 m`` rows of the range would cost more than an
        iteration's work on them)."""
        self.x = np.array(values, dtype=np.float64)
        if self.units is not None:
            self.x /= self.units
        self.shift = self.shift_step = 0.0
        self.d = np.zeros_like(self.x)
        self._pending.clear()

    def values(self):
        """The parameters on the range (the iterate ``x`` in their units)."""
        values = self.x.copy() if self.units is None else self.units * self.x
        if self._centred_intercept():
            values[-1] -= self.shift
        return values

    def finish(self, round_id, alpha, total_weight):
        """Sum round ``round_id``'s pushes in contributor order into the gradient at ``x +
        alpha d``; return the shard's ``[penalty value, g_trial . d, max |g_trial|, g_b]``
        (each entry of the gradient in the parameters times its criterion scale in the
        third; ``g_b`` the intercept's gradient on the shard holding it, else 0).  When
        centred, ``g_trial`` is the gradient in ``theta`` but for ``- m g_b`` on the
        coefficients, which :meth:`accept` subtracts (``g_trial . d`` is whole).

        Raises
        ------
        LookupError
            When some registered contributor did not push in that round.
        """
        with self._lock:
            pushes = self._pending.pop(int(round_id), {})
            for stale in [r for r in self._pending if r < int(round_id)]:
                del self._pending[stale]
        missing = sorted(set(self._registered) - set(pushes))
        if missing:
            raise LookupError(f"contributors {missing[:5]} pushed no gradient in round "
                               f"{round_id} to the shard [{self.lo}, {self.hi})")
        grad = np.zeros_like(self.x)
        for part in sorted(pushes):
            local = self._registered[part]
            grad[local] += pushes[part]
        grad /= float(total_weight)
        coef = self.x[: self.n_coef] + alpha * self.d[: self.n_coef]
        if self.units is not None:
            coef = coef * self.units[: self.n_coef]
        grad[: self.n_coef] += self.penalty.grad(coef)
        penalty_value = self.penalty.smooth_value(coef) if self.n_coef else 0.0
        violation = np.abs(grad)
        if self.criterion_scales is not None:
            violation *= self.criterion_scales
        largest = float(np.max(violation, initial=0.0))
        if self.units is not None:  # the gradient in theta
            grad *= self.units
        self.g_trial = grad
        slope = float(grad @ self.d)
        intercept_grad = float(grad[-1]) if self.holds_intercept else 0.0
        if self._centred_intercept():
            slope -= intercept_grad * self.shift_step
        return np.array([penalty_value, slope, largest, intercept_grad])

    def accept(self, alpha, slot, used, intercept_grad=0.0):
        """Move to ``x + alpha d`` with gradient ``g_trial`` (centred: less ``m g_b``, with
        ``g_b`` the ``intercept_grad`` of the last :meth:`finish`); with ``slot`` (not
        None) store the pair ``s = alpha d``, ``y = g_trial - g`` in that slot first.

        Returns the shard's dot products of the basis rows of the ``used`` slots (``s``
        rows ``0..used-1``, then ``y`` rows ``m..m+used-1``, after the store) with
        ``[g_new, s, y]`` as a ``(2 used, 3)`` array (the last two columns zero without a
        pair), and ``[g_new . g_new, m . g_new, m . s, m . y]`` (the last three 0 when not
        centred, the last two without a pair).
        """
        step = alpha * self.d
        self.x = self.x + step
        if self.centring is not None:
            self.g_trial[: self.n_coef] -= self.centring * float(intercept_grad)
            if self.holds_intercept:
                self.shift += alpha * self.shift_step
        if slot is not None:
            self.basis[slot] = step
            self.basis[self.memory + slot] = self.g_trial - self.g
        self.g = self.g_trial
        stacked = self._stacked  # kept: a new array of 3 rows each time costs page faults
        stacked[0] = self.g
        if slot is not None:
            stacked[1] = self.basis[slot]
            stacked[2] = self.basis[self.memory + slot]
        else:
            stacked[1:] = 0.0
        s_rows, y_rows = self._used_rows(used)
        dots = np.concatenate([s_rows @ stacked.T, y_rows @ stacked.T])
        centred = np.zeros(3)
        if self.centring is not None:
            centred = stacked[:, : self.n_coef] @ self.centring
        return dots, np.concatenate([[float(self.g @ self.g)], centred])

    def direction(self, used, coefficients, coefficient_of_g, shift_step=0.0):
        """``d = basis^T coefficients + coefficient_of_g g`` over the rows of the ``used``
        slots (``coefficients``: ``used`` for the ``s`` rows, then ``used`` for ``y``);
        ``shift_step`` is ``m . d`` (the coordinator's, from the dot products of ``m``
        with the basis that :meth:`accept` returns), when centred."""
        self.shift_step = float(shift_step)
        used = int(used)
        s_rows, y_rows = self._used_rows(used)
        coefficients = np.asarray(coefficients, dtype=np.float64)
        d = coefficient_of_g * self.g
        if used:
            d += coefficients[:used] @ s_rows
            d += coefficients[used:] @ y_rows
        self.d = d

    def _used_rows(self, used):
        """Views (no copies) of the ``s`` and ``y`` rows of slots ``0..used-1``."""
        used = int(used)
        return self.basis[:used], self.basis[self.memory:self.memory + used]


def _holds_last(local, size):
    """Whether the registered columns ``local`` (a slice or sorted positions) include the
    range's last parameter."""
    if isinstance(local, slice):
        return local.stop == size and local.stop > local.start
    return bool(local.size) and int(local[-1]) == size - 1


@dataclass
class PartitionColumns:
    """A partition's state in a sharded fit: who it is and which columns it touches.

    Attributes
    ----------
    index : int
        The partition's index (the order in which its worker sums the gradients).
    columns : ndarray of int64
        Sorted parameter indices its rows touch (the intercept's last, when fitted).
    X : scipy CSR matrix or ndarray
        The partition's ``X`` (its column ``j`` at ``j``), or, once ``numbered``, ``X``
        with its columns at their positions in its worker's union of columns (the data
        arrays shared with the partition, not copied).
    hub : int
        The :class:`~daskglm.compute.worker_columns.WorkerColumns` it registered with
        (the one on its worker): its pulls and pushes go there.
    numbered : bool
        Whether ``X`` is numbered in the union.
    """

    index: int
    columns: np.ndarray
    X: object
    hub: int = 0
    numbered: bool = False


def mark_columns(indices, size):
    """``(marked, position)``: a mask of the columns in ``indices`` among ``size``, and
    each column's position among the marked ones (a mark and a running count: linear in
    the indices and ``size``, where sorting them, as ``np.unique`` does, is not)."""
    marked = np.zeros(int(size), dtype=bool)
    marked[indices] = True
    position = np.cumsum(marked, dtype=np.int64) - 1
    return marked, position


def touched_columns(part, index, fit_intercept, hub=0):
    """The :class:`PartitionColumns` of a partition ``(X, y, weight[, offset])``: for CSR ``X`` the
    columns holding a stored entry, for dense ``X`` all of them; its ``X`` as it is."""
    X = kernel_matrix(part[0])
    n_features = X.shape[1]
    if sp.issparse(X):
        marked = np.zeros(n_features, dtype=bool)
        marked[X.indices] = True
        columns = np.flatnonzero(marked)
    else:
        columns = np.arange(n_features)
    columns = columns.astype(np.int64)
    if fit_intercept:
        columns = np.append(columns, n_features)
    return PartitionColumns(int(index), columns, X, int(hub))
