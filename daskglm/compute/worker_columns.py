"""One worker's partitions towards the column shards: one pull and one push per round.

In a sharded L-BFGS fit (:mod:`daskglm.solvers.sharded_lbfgs`) every worker holds one
:class:`WorkerColumns`, beside its column shard.  Its partitions register their touched
columns with it once (:func:`register_columns`: the partition's
:class:`~daskglm.compute.column_shards.PartitionColumns` stays in the
:class:`WorkerColumns`, so the rounds after it carry no partition state through the
engine).  :meth:`WorkerColumns.seal` then takes the union of them and registers it, split
by shard range, with the shards; each partition's ``X`` is renumbered to its columns'
positions in that union once, in its first evaluation (in the partition's own task, so
the workers renumber in parallel): a product with a vector of the union's length touches
less memory than one of the parameters' length.

In each evaluation round (:func:`sharded_loss_grad`):

* the first of the worker's partitions to ask pulls ``x + alpha d`` on the union, one call
  per shard it reaches; every partition of the worker computes on that one copy, with the
  loss-and-gradient kernel of the whole-vector fits
  (:func:`~daskglm.compute.kernels.loss_grad`);
* each partition hands its gradient sums to the :class:`WorkerColumns`; the last of them
  sums all of them in partition order (bit for bit the same sum for a fixed layout,
  whichever thread arrives first) and pushes the sum on the union, one call per shard.

So the bytes of a round scale with the union of the columns each worker's partitions
touch, and the calls with the workers, not the partitions.  A partition task reaches the
:class:`WorkerColumns` of its own worker, and the shard there, by direct calls (nothing
serialised); see :class:`~daskglm.engine.shards.ShardClients`.  Pure numpy: the shard
handles are duck-typed.
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import scipy.sparse as sp

from .column_shards import mark_columns, touched_columns
from .kernels import loss_grad

__all__ = ["WorkerColumns", "UnknownPartition", "register_columns", "sharded_loss_grad",
           "in_union", "TRAFFIC_FIELDS"]

#: What :func:`sharded_loss_grad` returns, summed over partitions, in this order: the
#: weight and the loss, then the values pulled from and pushed to the shards and the
#: calls made to them (each of the pulls and again of the pushes; counted by the
#: partition that made them for its worker).
TRAFFIC_FIELDS = ("weight", "loss", "pulled", "pushed", "calls")


class UnknownPartition(LookupError):
    """A partition asked a :class:`WorkerColumns` that does not hold its columns: it runs
    on another worker than when the shards were made."""


class WorkerColumns:
    """The union of one worker's partitions' touched columns, their states, and their
    traffic with the shards.

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
        self._states = {}  # partition -> its PartitionColumns
        self.union = np.zeros(0, dtype=np.int64)
        # each parameter's position in the union (None when the union is every parameter)
        self._position = None
        self._pieces = []  # (shard, slice of the union in its range)
        self._pulled = (None, None)  # (round, x + alpha d on the union)
        self._pushes = {}  # round -> {partition: gradient sums}
        self._lock = threading.Lock()

    def add(self, state):
        """Keep partition ``state.index``'s :class:`PartitionColumns`."""
        with self._lock:
            self._states[int(state.index)] = state

    def partitions(self):
        """The partitions registered, in order."""
        return sorted(self._states)

    def seal(self):
        """Take the union of the registered columns and register it with the shards.

        Returns
        -------
        ndarray
            ``[columns in the union, calls made]`` (one call per shard it reaches).
        """
        bounds = self.shards.bounds
        if self._states:
            marked, position = mark_columns(
                np.concatenate([s.columns for s in self._states.values()]), bounds[-1])
            self.union = np.flatnonzero(marked)
            self._position = position if self.union.size < bounds[-1] else None
        splits = np.searchsorted(self.union, bounds)
        self._pieces = [(k, slice(splits[k], splits[k + 1])) for k in range(len(bounds) - 1)
                        if splits[k + 1] > splits[k]]
        self.shards.call_each("register", [(k, (self.hub, self.union[s]))
                                           for k, s in self._pieces])
        return np.array([self.union.size, len(self._pieces)], dtype=np.float64)

    def pull(self, part, round_id, alpha):
        """``(X, values, traffic)``: partition ``part``'s ``X`` numbered in the union,
        ``x + alpha d`` on the union from this worker's one pull of round ``round_id``,
        and ``[values pulled, calls made]`` (zeros when another partition made the pull).

        Raises
        ------
        UnknownPartition
            When ``part`` did not register here.
        """
        state = self._states.get(int(part))
        if state is None:
            raise UnknownPartition(
                f"Partition {part} did not register its columns on this worker (hub "
                f"{self.hub}): the partitions have moved since the shards were made.")
        if not state.numbered:  # its first evaluation: only its own task asks for it
            state = in_union(state, self._position, self.union.size)
            with self._lock:
                self._states[int(part)] = state
        with self._lock:
            fresh = self._pulled[0] != round_id
            if fresh:
                pieces = self.shards.call_each("pull", [(k, (self.hub, alpha))
                                                        for k, _ in self._pieces])
                values = np.concatenate(pieces) if pieces else np.zeros(0)
                self._pulled = (round_id, values)
            values = self._pulled[1]
        traffic = [values.size, len(self._pieces)] if fresh else [0, 0]
        return state.X, values, traffic

    def push(self, part, round_id, grad):
        """Keep partition ``part``'s gradient sums ``grad`` (on the union, the
        intercept's last when fitted) for round ``round_id``; once every registered
        partition has, push their sum (in partition order) to the shards.

        Returns ``[values pushed, calls made]`` (zeros but for the last partition)."""
        part, round_id = int(part), int(round_id)
        with self._lock:
            pending = self._pushes.setdefault(round_id, {})
            pending[part] = grad
            if len(pending) < len(self._states):
                return [0, 0]
            del self._pushes[round_id]
            for stale in [r for r in self._pushes if r < round_id]:
                del self._pushes[stale]
        total = np.array(pending[min(pending)], dtype=np.float64)
        for p in sorted(pending)[1:]:
            total += pending[p]
        self.shards.call_each("push", [(k, (self.hub, round_id, total[s]))
                                       for k, s in self._pieces])
        return [total.size, len(self._pieces)]


def in_union(state, position, size):
    """``state`` with its ``X`` numbered in a union of ``size`` parameters, where
    parameter ``j`` is at ``position[j]`` (increasing, so the union's intercept, if any,
    is last; None when the union is every parameter, and ``X`` is numbered in it
    already)."""
    X = state.X
    if position is not None:
        with_intercept = state.columns.size > 0 and state.columns[-1] == X.shape[1]
        X = sp.csr_matrix((X.data, position[X.indices].astype(X.indices.dtype), X.indptr),
                          shape=(X.shape[0], size - int(with_intercept)))
    return dataclasses.replace(state, X=X, numbered=True)


def register_columns(part, index, shards, fit_intercept):
    """A partition's registration round: find its touched columns and give them, with its
    ``X``, to the :class:`WorkerColumns` of its worker.  ``index`` is the partition's
    index.  Returns ``[1, columns]``."""
    hub = shards.local_hub()
    state = touched_columns(part, index, fit_intercept, hub)
    shards.call_hub(hub, "add", state)
    return np.array([1.0, state.columns.size])


def sharded_loss_grad(part, index, shards, alpha, round_id, family, fit_intercept):
    """Partition ``index``'s part of an evaluation at ``x + alpha d``, the vectors on
    ``shards``.

    Computes on its worker's pull of ``x + alpha d`` the loss and the gradient sums (on
    its ``X`` numbered in the worker's union), hands those to its worker's
    :class:`WorkerColumns` for round ``round_id`` and returns the array of
    :data:`TRAFFIC_FIELDS`.
    """
    hub = shards.local_hub()
    X, params, pulled = shards.call_hub(hub, "pull", index, round_id, alpha)
    stats = loss_grad((X,) + tuple(part[1:]), params, family, fit_intercept)
    pushed = shards.call_hub(hub, "push", index, round_id, stats.grad)
    return np.array([stats.weight, stats.loss, pulled[0], pushed[0], pulled[1]],
                    dtype=np.float64)
