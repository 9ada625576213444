"""The data plane: the only module that talks to Dask.

An engine holds the row partitions ``(X, y, weight)`` of one data set, co-located and kept
in memory where they are computed (on the workers of a ``distributed`` cluster, or in this
process), and offers these verbs to the solvers:

* :meth:`Engine.reduce` -- ONE round: run a kernel on every partition with the same
  broadcast arguments and sum the partial results in a fixed-order tree;
* :meth:`Engine.map` -- ONE round: run a function on every partition and return one
  result per partition;
* :meth:`Engine.map_each` -- ONE round, as ``map`` but with one extra argument per
  partition (per-partition solver state, as in ADMM);
* :meth:`Engine.reduce_each` -- ONE round, as ``reduce`` but with one extra argument per
  partition (what each partition of a mini-batch draws, as in SGD);
* :meth:`Engine.reduce_stateful` and :meth:`Engine.map_stateful` -- ONE round, as
  ``reduce`` and ``map`` with **partition state**: the kernel is called as ``kernel(part,
  state, *args)`` and returns ``(result, new_state)``; the new state stays next to its
  partition (on a cluster, a future per partition kept by the engine under the state's
  name) for the next round that names it, and is never shipped with the results
  (error feedback, local SGD, ADMM, gossip).  :meth:`Engine.fetch_state` ships the
  states to the driver (ONE round), :meth:`Engine.put_state` sends them from it (ONE
  round), :meth:`Engine.compute_state` computes them from Dask collections where the
  partitions live (ONE round), :meth:`Engine.drop_state` releases them.  A state lost
  with a worker is recomputed by Dask when it has lineage (partitions computed from Dask
  collections) and otherwise reset to None and reported in the round's
  :class:`StateRound`;
* :meth:`Engine.reduce_by_deadline` -- ONE round with **a deadline**: one task per
  partition; returns once ``deadline`` seconds passed or ``min_fraction`` of the sample
  weight arrived, with the sum of the arrived partitions (the reduction tree restricted
  to them), which were dropped and the weight that arrived (:class:`DeadlineRound`).
  Late tasks are cancelled and their results discarded.  On a cluster, a partition that
  missed a deadline runs from then on also as a backup task on a replica kept on a
  worker that met it, and the first copy to finish counts;
* :meth:`Engine.map_as_completed` -- ONE round consumed as it completes: one task per
  partition, yielding ``(index, result)`` in completion order (:class:`AsCompleted`);
  stopping early cancels the rest, partitions lost with a worker are reported in
  ``failed``;
* :meth:`Engine.parameter_holder` -- a versioned parameter vector that partition tasks
  ``pull`` and ``push`` to without the driver (a Dask Actor on one worker; in this
  process a locked object); its traffic is recorded as ``push`` and ``pull`` records by
  :meth:`Engine.close_holder` (or :meth:`Engine.close`); its clocks
  (:mod:`daskglm.engine.clocks`) bound the staleness of parameter-server SGD;
* :func:`daskglm.engine.neighbours.exchange_with_neighbours` -- ONE round in which each
  partition's state is mixed with its neighbours' along a graph, the states moving
  worker to worker (gossip).

:func:`stream_engines` walks a Dask array one row chunk at a time, for streaming fits.

:meth:`Engine.reduce_each_by_deadline` is the deadline round with one item per partition
(a stochastic step's draws); ``make_engine(..., topology=...)`` picks how a cluster's tree
rounds sum their partials (:data:`TOPOLOGIES`: a tree, a parameter server, a ring
allreduce; see :mod:`daskglm.engine.topologies`).

Each round is written to the engine's :class:`~daskglm.accounting.ledger.CommReport`.  No dask.array
graph is built per round: the partitions are persisted once and every round maps over
their futures.  Stateful and deadline rounds place their tasks on the worker holding each
partition (a loose restriction, read with one ``who_has`` call per round), so that a state
is made where its partition lives and a straggler's partitions are not moved away.
"""

from ..lazy_names import lazy_names

#: Public name -> the module of this package that defines it.  Imported on first use,
#: so that a worker unpickling one task function imports that function's module only.
_EXPORTS = {
    "ActorHolder": "parameter_holders",
    "AsCompleted": "asynchronous",
    "HolderLostError": "parameter_holders",
    "ParameterHolder": "parameter_holders",
    "MAX_RECOVERIES": "base",
    "Engine": "base",
    "is_dask": "partitions",
    "make_engine": "build",
    "stream_engines": "build",
    "CACHE_SAFETY": "cache",
    "choose_cache": "cache",
    "data_nbytes": "cache",
    "free_memory": "cache",
    "DeadlineRound": "deadline",
    "SCATTER_BYTES": "distributed",
    "DistributedEngine": "distributed",
    "active_client": "distributed",
    "LocalEngine": "local",
    "StreamingLocalEngine": "local",
    "PARTITION_BYTES": "partitions",
    "default_partitions": "partitions",
    "StateRound": "state",
    "StreamingDistributedEngine": "streaming",
    "SAFE_EXPONENT": "validation",
    "TOPOLOGIES": "topologies",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
