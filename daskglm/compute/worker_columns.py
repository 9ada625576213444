"""One worker's partitions towards the column shards: one pull and one push per round.

In a sharded L-BFGS fit (:mod:`daskglm.solvers.sharded_lbfgs`) every worker holds one
:class:`WorkerColumns`, beside its column shard.  Its partitions register their touched
columns with it once (:func:`register_columns`); :meth:`WorkerColumns.seal` then takes the
union of them and registers that union, split by shard range, with the shards.  In each
evaluation round (:func:`sharded_loss_grad`):

* the first of the worker's partitions to ask pulls ``x + alpha d`` on the union, one call
  per shard it reaches; every partition of the worker reads its own columns from that one
  copy;
* each partition hands its gradient sums to the :class:`WorkerColumns`; the last of them
  sums all of them in partition order (bit for bit the same sum for a fixed layout,
  whichever thread arrives first) and pushes the sum, one call per shard.

So the bytes of a round scale with the union of the columns each worker's partitions
touch, and the calls with the workers, not the partitions.  A partition task reaches the
:class:`WorkerColumns` of its own worker, and the shard there, by direct calls (nothing
serialised); see :class:`~daskglm.engine.shards.ShardClients`.  Pure numpy: the shard
handles are duck-typed.
"""

from __future__ import annotations

import threading

import numpy as np

from .column_shards import PartitionColumns, mark_columns, touched_columns
from .kernels import partition_offset

__all__ = ["WorkerColumns", "register_columns", "sharded_loss_grad", "TRAFFIC_FIELDS"]

#: What :func:`sharded_loss_grad` returns, summed over partitions, in this order: the
#: weight and the loss, then the values pulled from and pushed to the shards and the
#: calls made to them (each of the pulls and again of the pushes; counted by the
#: partition that made them for its worker).
TRAFFIC_FIELDS = ("weight", "loss", "pulled", "pushed", "calls")


class WorkerColumns:
    """The union of one worker's partitions' touched columns, and their traffic with the
    shards.

    Parameters
    ----------
    hub : int
        Its number: the shards know it by this (and sum the pushes in its order).
    shards : ShardClients
        The shards to pull from and push to.
    """

    def __init__(self, hub, shards):
        self.hub = int(hub)
        self.shards = shards
        self._columns = {}  # partition -> its columns (global parameter indices)
        self._positions = {}  # partition -> positions of its columns in the union
        self.union = np.zeros(0, dtype=np.int64)
        self._pieces = []  # (shard, slice of the union in its range)
        self._pulled = (None, None)  # (round, x + alpha d on the union)
        self._pushes = {}  # round -> {partition: gradient sums}
        self._lock = threading.Lock()

    def add(self, part, columns):
        """Remember partition ``part``'s touched columns (sorted parameter indices)."""
        with self._lock:
            self._columns[int(part)] = np.asarray(columns, dtype=np.int64)

    def partitions(self):
        """The partitions registered, in order."""
        return sorted(self._columns)

    def seal(self):
        """Take the union of the registered columns and register it with the shards.

        Returns
        -------
        ndarray
            ``[columns in the union, calls made]`` (one call per shard it reaches).
        """
        bounds = self.shards.bounds
        if self._columns:
            marked, position = mark_columns(np.concatenate(list(self._columns.values())),
                                            bounds[-1])
            self.union = np.flatnonzero(marked)
            self._positions = {p: position[c] for p, c in self._columns.items()}
        splits = np.searchsorted(self.union, bounds)
        self._pieces = [(k, slice(splits[k], splits[k + 1])) for k in range(len(bounds) - 1)
                        if splits[k + 1] > splits[k]]
        self.shards.call_each("register", [(k, (self.hub, self.union[s]))
                                           for k, s in self._pieces])
        return np.array([self.union.size, len(self._pieces)], dtype=np.float64)

    def pull(self, part, round_id, alpha):
        """``x + alpha d`` on partition ``part``'s columns, from this worker's one pull of
        round ``round_id``; with ``[values pulled, calls made]`` (zeros when another
        partition made the pull)."""
        with self._lock:
            fresh = self._pulled[0] != round_id
            if fresh:
                pieces = self.shards.call_each("pull", [(k, (self.hub, alpha))
                                                        for k, _ in self._pieces])
                values = np.concatenate(pieces) if pieces else np.zeros(0)
                self._pulled = (round_id, values)
            values = self._pulled[1]
        traffic = [values.size, len(self._pieces)] if fresh else [0, 0]
        return values[self._positions[int(part)]], traffic

    def push(self, part, round_id, values):
        """Keep partition ``part``'s gradient sums for round ``round_id``; once every
        registered partition has, push their sum (in partition order) to the shards.

        Returns ``[values pushed, calls made]`` (zeros but for the last partition)."""
        part, round_id = int(part), int(round_id)
        with self._lock:
            pending = self._pushes.setdefault(round_id, {})
            pending[part] = np.asarray(values, dtype=np.float64)
            if len(pending) < len(self._positions):
                return [0, 0]
            del self._pushes[round_id]
            for stale in [r for r in self._pushes if r < round_id]:
                del self._pushes[stale]
        total = np.zeros(self.union.size)
        for p in sorted(pending):
            total[self._positions[p]] += pending[p]
        self.shards.call_each("push", [(k, (self.hub, round_id, total[s]))
                                       for k, s in self._pieces])
        return [total.size, len(self._pieces)]


def register_columns(part, state, shards, fit_intercept):
    """A partition's registration round: find its touched columns (its state from now
    on) and give them to the :class:`WorkerColumns` of its worker.  ``state`` is the
    partition's index.  Returns ``([1, columns], state)``."""
    hub = shards.local_hub()
    state = touched_columns(part, state, fit_intercept, hub)
    shards.call_hub(hub, "add", state.index, state.columns)
    return np.array([1.0, state.columns.size]), state


def sharded_loss_grad(part, state, shards, alpha, round_id, family, fit_intercept):
    """One partition's part of an evaluation at ``x + alpha d``, the vectors on ``shards``.

    ``state`` is the partition's :class:`PartitionColumns`.  Reads ``x + alpha d`` on its
    columns from its worker's pull, computes the loss and the gradient sums there, hands
    those to its worker's :class:`WorkerColumns` for round ``round_id`` and returns
    ``(traffic, state)`` with ``traffic`` the array of :data:`TRAFFIC_FIELDS`.  A lost
    state (None) returns NaN traffic.
    """
    if state is None:  # lost with its worker: the coordinator sees it in the round's reset
        return np.full(len(TRAFFIC_FIELDS), np.nan), None
    if not isinstance(state, PartitionColumns):
        raise TypeError("The partition's touched columns were not registered.")
    y, weight, offset = part[1], part[2], partition_offset(part)
    coef, pulled = shards.call_hub(state.hub, "pull", state.index, round_id, alpha)
    n_coef = state.X.shape[1]
    eta = np.asarray(state.X @ coef[:n_coef]).ravel()
    if fit_intercept:
        eta = eta + coef[-1]
    if offset is not None:
        eta = eta + offset
    loss, r = family.loss_and_dloss(y, eta, weight)
    grad = np.asarray(state.X.T @ r).ravel()
    if fit_intercept:
        grad = np.append(grad, r.sum())
    pushed = shards.call_hub(state.hub, "push", state.index, round_id, grad)
    total = float(y.shape[0]) if weight is None else float(weight.sum())
    return np.array([total, float(loss), pulled[0], pushed[0], pulled[1]],
                    dtype=np.float64), state
