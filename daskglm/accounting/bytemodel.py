"""Communication accounting: one record per engine round, modelled and measured.

Only the engine writes here.  A *round* is one map over the partitions followed either by
the fixed-order tree reduction (``reduce``, ``reduce_each``) or by a gather of one result
per partition (``map``, ``map_each``).  Every round appends a :class:`RoundRecord` to the
fit's :class:`CommReport` (exposed by the estimators as ``comm_``) holding

* what the round moves according to the **model**: the payload sent to the workers, the
  payload returned, and Dask's per-task control traffic;
* what Dask's own counters say it **measured** (distributed engine only);
* its wall time, the compute time of its tasks, and the time worker threads spent
  waiting for the slowest partition (the synchronisation cost).

Model
-----
``P`` partitions, ``G`` the tasks they run in (a round runs all the partitions one
worker thread holds in one task, so ``G`` is the number of worker threads on a cluster
and ``P`` in this process), ``d`` parameters (features, plus one for the intercept), ``p``
features, ``k`` the fan-in of the reduction tree (``split_every``), ``T`` tasks: ``G``
plus the ``ceil(G / k) + ceil(G / k^2) + ... + 1`` combine tasks of a tree round, ``G``
for a gather round.  Payload is 8 bytes per float; scalars (the intercept flag,
tolerances, counters) 8 bytes each; objects without numeric data (a family, a penalty) 0.
Down is the broadcast arguments times ``G`` (plus the per-partition items of ``*_each``
rounds, times ``P``); up is every task's result moving once: each partial to its combine
task, the root to the driver (a gather round returns one result per partition).  On a
cluster the model subtracts the partials expected to be combined on the worker that made
them (:func:`kept_local`) and adds Dask's per-task control traffic.

============  ==================  ==============================  ============================
kind          verb (method)       down (bytes)                    up (bytes)
============  ==================  ==============================  ============================
validate      reduce (every fit)  ``8 G``                         ``8 (2 p + 4) T``
gradient      reduce (gd, lbfgs,  ``8 (d + 1) G``                 ``8 (d + 2) T``
              proximal, newton)
hessian       reduce (newton,     ``8 (d + 1) G``                 ``8 (d^2 + d + 2) T``
              averaging+newton)
gram          reduce (normal)     ``0``                           ``8 (p^2 + 2 p + 3) T``
local_solve   map (averaging)     ``8 (d + 3) G``                 ``8 (d + 4) P`` (once)
local_solve   map_each (admm)     ``16 d P + 8 (d + 2 p + 5) G``  ``8 (2 d + 4) P`` per iteration
sizes         map (sgd)           ``0``                           ``16 P``
encode        (classifiers whose  ``8 P``                         ``0``
              labels are not 0/1)
maxima        reduce (columns of  ``0``                           ``8 p T``
              extreme scale)
scale         (the same, no       ``8 p P``                       ``0``
              penalty)
sgd_batch     reduce_each (sgd)   ``8 s P + 8 (d + s) G``         ``8 (d + 2) T``
local_sgd     reduce_each (sgd)   ``8 s P + 8 (d + s) G``         ``8 (d + s') T``
overhead      every round         both ways: ``TASK_BYTES T + REF_BYTES (P - G)``, plus
                                  ``RESULT_BYTES (P - G)`` for a gather round (0 in-process)
============  ==================  ==============================  ============================

Rounds of the other verbs are counted the same way, from the objects that move:

* a stateful round (``reduce_stateful``, ``map_stateful``) counts what a ``reduce`` or a
  ``map`` with the same arguments counts: the states stay on the workers, neither sent nor
  returned.  Its tasks add, to the ``G`` group tasks and the combine tasks, ``G + P``
  small tasks that split each group's output on its worker (results, one state per
  partition); ``state_reset`` lists the partitions whose state was lost and restarted;
* ``fetch_state`` returns the states (one task per state held), ``put_state`` sends them;
* a deadline round (``reduce_by_deadline``) runs ``P`` tasks (``groups = P``), sends the
  arguments ``P`` times and returns the results that arrived, each to the driver (the
  restricted tree is summed there: ``split_every`` is None); ``dropped`` lists the
  partitions left out.  Its first call on an engine runs a ``weights`` round (``map``,
  one float per partition) once;
* a ``map_as_completed`` round is counted like a deadline round when its iteration ends:
  ``P`` tasks, the arguments ``P`` times, the results yielded; ``dropped`` lists the
  partitions not yielded (lost with a worker, or not consumed);
* a parameter holder's traffic is written when it is closed, as one ``push`` record (tasks
  = pushes, sent = the deltas, ``staleness`` = the histogram) and one ``pull`` record
  (tasks = pulls, returned = the parameters); ``seconds`` 0 and nothing measured: the
  calls go worker to worker, inside other rounds' tasks.  Parameter-server SGD
  (``async``) adds ``clock_staleness`` (the clock lags) and ``seconds_blocked`` (the
  waits at the staleness bound) to its ``push`` record; its generations are
  ``async_sgd`` records, counted as ``map_as_completed`` rounds.  A delta pushed sparse
  (:class:`~daskglm.compute.sparse_vectors.SparseGradient`) counts its stored indices and
  values;
* gossip (``gossip``) runs ``gossip_start`` (a ``put_state`` of every node's first model),
  then per round one ``gossip`` stateful round (its sums: the models and their squared
  norms, the loss) and one ``gossip_exchange`` round
  (:func:`daskglm.engine.neighbours.exchange_with_neighbours`): ``P`` tasks, sent = each
  node's item (its index and row of mixing weights) plus one model per neighbour a node
  receives (``2 E`` models over a graph of ``E`` edges: worker-to-worker transfers,
  measured by Dask), returned nothing; ``gossip_fetch`` fetches the models once, at the
  end.

===============  =========================  =====================================  ============
kind             verb (method)              down (bytes)                           up (bytes)
===============  =========================  =====================================  ============
push             holder (async), per fit    ``8 d`` per dense push                 ``0``
pull             holder (async), per fit    ``0``                                  ``8 d`` per
                                                                                   read
gossip_exchange  neighbour exchange         ``8 P (P + 1) + 2 E m`` with ``m = 8   ``0``
                 (gossip)                   (d + 1)`` (a model and its index)
===============  =========================  =====================================  ============

"""

from __future__ import annotations

import dataclasses

import numpy as np

from .kinds import Kind

try:  # the scheduler plugin needs distributed's base class
    from distributed.diagnostics.plugin import SchedulerPlugin as _SchedulerPlugin
except ImportError:  # pragma: no cover - distributed is a dependency
    _SchedulerPlugin = object

__all__ = [
    "nbytes", "TASK_BYTES", "REF_BYTES", "RESULT_BYTES", "control_bytes", "payload_model",
    "tree_tasks", "tree_depth",
]

#: Dask's control traffic per task, in bytes, counted as part of the modelled bytes of
#: distributed rounds (see the module docstring and docs/costs.md).
TASK_BYTES = 1900

#: Control traffic of every partition a task references beyond its first (a grouped task
#: names each of its partitions' keys in several messages), and of every result beyond the
#: first that a gathered task returns (each is pickled with its own header); measured on
#: ``distributed`` 2026.x at 330-670 and 550-700 bytes.
REF_BYTES = 450
RESULT_BYTES = 600


def control_bytes(record):
    """Modelled Dask control traffic of a distributed round (see :data:`TASK_BYTES`)."""
    extra = max(0, record.partitions - record.groups)
    per_extra = REF_BYTES + (RESULT_BYTES if record.split_every is None else 0)
    return TASK_BYTES * record.tasks + per_extra * extra


def nbytes(obj) -> int:
    """Payload bytes of ``obj``: arrays of any library (numpy, CuPy, ...), sparse matrices
    (scipy, pydata ``sparse``, ``cupyx``), numbers, and containers or dataclasses of them."""
    if obj is None:
        return 0
    if isinstance(obj, (int, float, np.number, bool)):
        return 8
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(item) for item in obj)
    if isinstance(obj, dict):
        return sum(nbytes(item) for item in obj.values())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(nbytes(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    if hasattr(obj, "indptr") or hasattr(obj, "coords"):  # sparse: its stored arrays
        return sum(_array_bytes(getattr(obj, name, None))
                   for name in ("data", "indices", "indptr", "coords"))
    return _array_bytes(obj)


def _array_bytes(array):
    """``array.nbytes`` for anything array-like (``shape`` and ``nbytes``), else 0."""
    if hasattr(array, "shape") and hasattr(array, "nbytes"):
        return int(array.nbytes)
    return 0


def tree_tasks(partitions, split_every):
    """Combine tasks of a fixed-order tree of fan-in ``split_every`` over ``partitions``."""
    tasks, n = 0, int(partitions)
    while n > 1:
        n = -(-n // split_every)
        tasks += n
    return tasks


def tree_depth(partitions, split_every):
    """Levels of combine tasks above the partitions."""
    depth, n = 0, int(partitions)
    while n > 1:
        n = -(-n // split_every)
        depth += 1
    return depth


def payload_model(kind, *, n_params, partitions, split_every=8, n_features=None, groups=None,
                  calls=1, edges=None):
    """Modelled payload ``(down, up)`` in bytes of one round of ``kind`` (the table above).

    Parameters
    ----------
    kind : str
        One of ``"validate"``, ``"gradient"``, ``"hessian"``, ``"gram"``,
        ``"averaging"`` (the local solves of divide-and-conquer averaging), ``"admm"``
        (one ADMM iteration's local solves), ``"sizes"``, ``"push"`` and ``"pull"`` (a
        parameter holder's dense traffic), ``"gossip_exchange"`` (one exchange of
        models with a gradient-free step rule).
    n_params : int
        Parameters ``d``: features, plus one when an intercept is fitted.
    partitions : int
    split_every : int
        Fan-in of the reduction tree.
    n_features : int, optional
        Features ``p`` (for ``"validate"``, ``"gram"`` and ``"admm"``, which
        standardises the columns by default); ``n_params`` by default.
    groups : int, optional
        Tasks ``G`` the partitions run in (one per worker thread on a cluster);
        ``partitions`` by default.
    calls : int
        Dense pushes (``"push"``) or reads (``"pull"``) of a parameter holder.
    edges : int, optional
        Edges ``E`` of the gossip graph (``"gossip_exchange"``); a ring's ``P`` by
        default.

    Returns
    -------
    tuple of int
        Bytes down (to the partitions) and up (partials and results).
    """
    d, P = int(n_params), int(partitions)
    G = P if groups is None else int(groups)
    p = d if n_features is None else int(n_features)
    T = G + tree_tasks(G, split_every)
    table = {
        Kind.VALIDATE: (8 * G, 8 * (2 * p + 4) * T),
        Kind.GRADIENT: (8 * (d + 1) * G, 8 * (d + 2) * T),
        Kind.HESSIAN: (8 * (d + 1) * G, 8 * (d * d + d + 2) * T),
        Kind.GRAM: (0, 8 * (p * p + 2 * p + 3) * T),
        "averaging": (8 * (d + 3) * G, 8 * (d + 4) * P),
        "admm": (8 * 2 * d * P + 8 * (d + 2 * p + 5) * G, 8 * (2 * d + 4) * P),
        Kind.SIZES: (0, 16 * P),
        Kind.ENCODE: (8 * P, 0),
        Kind.MAXIMA: (0, 8 * p * T),
        Kind.SCALE: (8 * p * P, 0),
        Kind.PUSH: (8 * d * int(calls), 0),
        Kind.PULL: (0, 8 * d * int(calls)),
        Kind.GOSSIP_EXCHANGE: (8 * P * (P + 1) + 2 * (P if edges is None else int(edges))
                               * 8 * (d + 1), 0),
    }
    if kind not in table:
        raise ValueError(f"No payload model for round kind {kind!r}; known: {sorted(table)}.")
    return table[kind]
