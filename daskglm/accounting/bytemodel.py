"""The byte model: what each kind of round moves, and Dask's control traffic per task.

Every ledger record (:mod:`daskglm.accounting.ledger`) carries these modelled bytes next
to the bytes Dask measured.

``P`` partitions, ``G`` the tasks they run in (a round runs all the partitions one
worker thread holds in one task, so ``G`` is the number of worker threads on a cluster
and ``P`` in this process), ``d`` parameters (features, plus one for the intercept), ``p``
features, ``k`` the fan-in of the reduction tree (``split_every``), ``T`` tasks: ``G``
plus, for a tree round, the combine tasks on the workers, ``ceil(G / k) + ceil(G / k^2) +
...`` for as long as more than ``k`` partials are left (none when ``G <= k``), ``G`` for a
gather round.  The driver gathers the last ``k`` or fewer partials and sums the root
itself, which saves the scheduler round trip of a root task.  Payload is 8 bytes per
float; scalars (the intercept flag, tolerances, counters) 8 bytes each; objects without
numeric data (a family, a penalty) 0.  Down is the broadcast arguments times ``G`` (plus
the per-partition items of ``*_each`` rounds, times ``P``); up is every task's result
moving once: each partial to its combine task or, at the top, to the driver (a gather
round returns one result per partition).  On a
cluster the model subtracts the partials expected to be combined on the worker that made
them (:func:`~daskglm.accounting.ledger.kept_local`) and adds Dask's per-task control traffic.

============  ==================  ==============================  ============================
kind          verb (method)       down (bytes)                    up (bytes)
============  ==================  ==============================  ============================
validate      reduce (every fit)  ``8 G``                         ``8 (2 p + 6) T``
gradient      reduce (gd, lbfgs,  ``8 (d + 1) G``                 ``8 (d + 2) T``
              proximal, newton)
hessian       reduce (newton,     ``8 (d + 1) G``                 ``8 (d^2 + d + 2) T``
              averaging+newton)
gram          reduce (normal)     ``0``                           ``8 (p^2 + 2 p + 3) T``
validate_     reduce (normal: the ``0``                           ``8 (p^2 + 2 p + 8) T``
gram          validation fused)
validate_     reduce (lbfgs'      ``8 (d + 1) G``                 ``8 (2 p + d + 8) T``
gradient      first evaluation)
validate_     reduce (newton's    ``8 (d + 1) G``                 ``8 (2 p + d^2 + d + 8) T``
hessian       first evaluation)
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
compressed_   map_stateful (sgd   ``8 (d + 3 P + s) G``           ``(m(d) + 16) P``
batch         with compression)
compressed_   map_stateful (local ``8 (d + s) G``                 ``(m(d) + 8 s') P``
local_sgd     sgd, compression)
deadline_     deadline round      ``8 (3 + d + s) P``             ``8 (d + 2)`` per partition
batch         (sgd, deadline)                                     arrived
compressed_   map_stateful (gd    ``8 (d + 1 + s) G``             ``(m(d) + 16) P``
gradient      with compression)
deadline_     deadline round      ``8 (d + 1) P``                 ``8 (d + 2)`` per partition
gradient      (gd, deadline)                                      arrived
target_mean   reduce (Gamma,      ``0``                           ``8 * 3 T``
              Tweedie, ...,
              ``inference``, on
              labels encoded
              after validation)
inference     reduce (after a     ``8 (d + 2) G``                 ``8 (3 d^2 + 9) T``
              fit, ``inference``)
null_model    reduce (the same,   ``8 G``                         ``8 * 3 T``
              with an offset)
fold_gram     reduce_each         ``n + 8 G`` (fold indices, one  ``8 f (p^2 + 2 p + 3) T``
              (RidgeCV)           byte per row of ``n``)          (``f`` folds)
fold_moments  reduce_each (the    ``n + 8 G``                     ``8 (2 p + 1) T``
              CV estimators)
class_moments reduce (class        ``0``                           ``8 (2 p + 1) T``
              weights, > 64
              classes)
held_out      reduce_each (the    ``n + 8 m d G`` (``m`` models)  ``8 (2 m + 3) T``
              CV estimators)
leave_one_out reduce (RidgeCV,     ``8 (p^2 + p + m (p + 2)) G``   ``8 (2 m + 3) T``
              cv=None)            (``m`` alphas)
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
* a sharded L-BFGS fit (:mod:`daskglm.engine.shards`; ``t`` the touched columns, the union
  of each worker's partitions' summed over workers; ``c`` the calls, one per worker and
  shard its columns reach, ``S`` the shards, ``m`` the correction pairs, ``n`` rows, ``B`` feature blocks, ``R`` row
  partitions of column blocks):

  ===============  =====================================  ===========================
  kind             down (bytes)                           up (bytes)
  ===============  =====================================  ===========================
  sparse_gradient  ``24 G + 8 P`` (step, round, intercept  ``40 T`` (five counts)
                   flag; each partition's index)
  shard_columns    ``8 G + 8 P`` (intercept flag, the      ``16 T`` (two counts)
                   index; once)
  shard_register   ``8 t + 16 c`` (once per fit)          ``0``
  shard_pull       ``16 c``                               ``8 t``
  shard_push       ``8 t + 16 c``                         ``0``
  shard_op         at most ``8 (2 m + 3) S``              at most ``8 (6 m + 1) S``
  shard_load       ``8 d`` (once)                         ``0``
  shard_fetch      ``0``                                  ``8 d`` (once)
  block_split      the tiles moved (once): ``<= 8 n d``   ``0``
                   dense, ``<= 12 nnz + 4 (n + R) B`` CSR
  block_gradient   ``8 n B + 16 R B`` (residuals)         ``8 n B + 16 R`` (predictors)
  ===============  =====================================  ===========================

  The pulls and pushes run inside the evaluation round (``seconds`` 0; nothing
  measured: they are messages between workers, or calls within one when the shard is
  in the partition's own worker, which the counts include);
* a parameter holder's traffic is written when it is closed, as one ``push`` record (tasks
  = pushes, sent = the deltas, ``staleness`` = the histogram) and one ``pull`` record
  (tasks = pulls, returned = the parameters); ``seconds`` 0 and nothing measured: the
  calls go worker to worker, inside other rounds' tasks.  Parameter-server SGD
  (``async``) adds ``clock_staleness`` (the clock lags) and ``seconds_blocked`` (the
  waits at the staleness bound) to its ``push`` record; its generations are
  ``async_sgd`` records, counted as ``map_as_completed`` rounds, and the driver's
  checkpoint after each generation is one pull.  A holder lost with its worker and
  rebuilt has its own pair of records, its traffic up to the last checkpoint, the
  ``push`` record naming the worker in ``holder_lost``.  A delta pushed sparse
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

``m(d)`` is the codec's message for ``d`` entries (``Codec.model_bytes``: e.g. ``16 +
ceil(d / 8) + ceil(d (b - 1) / 8)`` for ``qsgd`` with ``b`` bits, ``16 + ceil(d / 8)`` for
``sign``); a partition with nothing to send sends no message.
``s`` and ``s'`` are the few scalars and step-rule state a stochastic step carries;
ADMM's ``2 p`` is its standardising transform (column means and scales), 0 without it.
The validation round returns the column sums and sums of squares of ``X`` with its row
count, weight and size, so the solvers that standardise (``admm``, ``proximal``) need no
round of their own for them.
Dask adds control traffic to every task: the task's key (about 50 characters, repeated in
several messages), the reference to the function, the submission to the scheduler, the
``compute-task`` message to the worker, the scheduler's notices to the client, and a
message header on every transfer.  For small payloads this dominates, so the model
includes it explicitly as :data:`TASK_BYTES` per task, a constant measured on
``distributed`` 2026.8 (1.8 to 2.3 kB per task); see ``docs/costs.md``.

The engine does not use the table: it counts the bytes of the objects it actually sends
and receives (:func:`nbytes`), which is what the table summarises; ``tests/test_comm.py``
checks the two agree.

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

__all__ = [
    "nbytes", "TASK_BYTES", "REF_BYTES", "RESULT_BYTES", "control_bytes", "payload_model",
    "CALL_BYTES", "ITEM_BYTES", "direct_control_bytes", "holders_control_bytes",
    "tree_tasks", "tree_depth", "top_partials",
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


#: Framing of one direct round's call and answer (:mod:`daskglm.engine.direct`), as
#: daskglm pickles them: the kernel's reference, the arguments without numeric data, the
#: answer's tree nodes and timings.  Measured at 370 to 800 bytes per call.
CALL_BYTES = 600

#: Framing of each result beyond one per call in a direct gather round's answer (and of
#: its per-partition item, if any): measured at 60 to 200 bytes.
ITEM_BYTES = 100


def holders_control_bytes(holders, partitions):
    """Modelled Dask control traffic of making ``holders`` partition holders that
    reference ``partitions`` partitions: a task each, naming its partitions."""
    return TASK_BYTES * holders + REF_BYTES * max(0, partitions - holders)


def direct_control_bytes(record, calls):
    """Modelled framing of a direct round of ``calls`` calls (see :data:`CALL_BYTES`)."""
    extra = max(0, record.partitions - calls) if record.split_every is None else 0
    return CALL_BYTES * calls + ITEM_BYTES * extra


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


def _tree_levels(partitions, split_every):
    """Sizes of the levels of combine tasks on the workers, bottom up.

    Combine tasks of fan-in ``split_every`` merge the partials until at most
    ``split_every`` are left; the driver gathers those and sums the root itself.
    """
    levels, n = [], int(partitions)
    while n > split_every:
        n = -(-n // split_every)
        levels.append(n)
    return levels


def tree_tasks(partitions, split_every):
    """Combine tasks on the workers of a fixed-order tree of fan-in ``split_every`` over
    ``partitions`` (the driver sums the top level: at most ``split_every`` partials)."""
    return sum(_tree_levels(partitions, split_every))


def tree_depth(partitions, split_every):
    """Levels of combine tasks on the workers above the partitions."""
    return len(_tree_levels(partitions, split_every))


def top_partials(partitions, split_every):
    """Partials the driver gathers and sums into the root: at most ``split_every``."""
    levels = _tree_levels(partitions, split_every)
    return levels[-1] if levels else int(partitions)


def payload_model(kind, *, n_params, partitions, split_every=8, n_features=None, groups=None,
                  n_rows=0, n_folds=1, n_models=1, codec=None, scalars=0, arrived=None,
                  calls=1, edges=None, touched=0, blocks=1):
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
    n_rows, n_folds, n_models : int, optional
        Rows ``n``, cross-validation folds ``f`` and models ``m`` scored at once (for
        ``"fold_gram"`` and ``"held_out"``).
    codec : Codec, optional
        The codec of a ``"compressed_batch"`` or ``"compressed_local_sgd"`` round
        (:mod:`daskglm.compute.compression`); its ``model_bytes(d)`` is one partition's
        message (an upper bound for ``"stochastic"``).
    scalars : int
        ``s``: the scalars a stochastic round sends besides its vectors (the step's
        configuration, counters), 8 bytes each, per task.
    arrived : int, optional
        Partitions whose result a ``"deadline_batch"`` round took; all by default.
    calls : int
        Dense pushes (``"push"``) or reads (``"pull"``) of a parameter holder; for the
        shard kinds, the calls made to the shards.
    edges : int, optional
        Edges ``E`` of the gossip graph (``"gossip_exchange"``); a ring's ``P`` by
        default.
    touched : int, optional
        For the shard kinds: columns touched, the union of each worker's partitions'
        summed over workers.
    blocks : int, optional
        Feature blocks ``B`` of a ``"block_gradient"`` round (whose ``partitions`` are
        its row partitions ``R`` and ``n_rows`` their rows).

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
        Kind.VALIDATE: (8 * G, 8 * (2 * p + 6) * T),
        Kind.GRADIENT: (8 * (d + 1) * G, 8 * (d + 2) * T),
        Kind.HESSIAN: (8 * (d + 1) * G, 8 * (d * d + d + 2) * T),
        Kind.GRAM: (0, 8 * (p * p + 2 * p + 3) * T),
        Kind.VALIDATE_GRAM: (0, 8 * (p * p + 2 * p + 8) * T),
        Kind.VALIDATE_GRADIENT: (8 * (d + 1) * G, 8 * (2 * p + 6 + d + 2) * T),
        Kind.VALIDATE_HESSIAN: (8 * (d + 1) * G, 8 * (2 * p + 6 + d * d + d + 2) * T),
        "averaging": (8 * (d + 3) * G, 8 * (d + 4) * P),
        "admm": (8 * 2 * d * P + 8 * (d + 2 * p + 5) * G, 8 * (2 * d + 4) * P),
        Kind.SIZES: (0, 16 * P),
        Kind.ENCODE: (8 * P, 0),
        Kind.MAXIMA: (0, 8 * p * T),
        Kind.SCALE: (8 * p * P, 0),
        Kind.SPARSE_GRADIENT: (24 * G + 8 * P, 40 * T),
        Kind.SHARD_COLUMNS: (8 * G + 8 * P, 16 * T),
        Kind.SHARD_REGISTER: (8 * touched + 16 * calls, 0),
        Kind.SHARD_PULL: (16 * calls, 8 * touched),
        Kind.SHARD_PUSH: (8 * touched + 16 * calls, 0),
        Kind.SHARD_LOAD: (8 * d, 0),
        Kind.SHARD_FETCH: (0, 8 * d),
        Kind.BLOCK_GRADIENT: (8 * int(n_rows) * int(blocks) + 16 * P * int(blocks),
                              8 * int(n_rows) * int(blocks) + 16 * P),
        Kind.TARGET_MEAN: (0, 8 * 3 * T),
        Kind.INFERENCE: (8 * (d + 2) * G, 8 * (3 * d * d + 9) * T),
        Kind.NULL_MODEL: (8 * G, 8 * 3 * T),
        Kind.FOLD_GRAM: (int(n_rows) + 8 * G, 8 * int(n_folds) * (p * p + 2 * p + 3) * T),
        Kind.LEAVE_ONE_OUT: (8 * (p * p + p + int(n_models) * (p + 2)) * G,
                             8 * (2 * int(n_models) + 3) * T),
        Kind.FOLD_MOMENTS: (int(n_rows) + 8 * G, 8 * (2 * p + 1) * T),
        Kind.CLASS_MOMENTS: (0, 8 * (2 * p + 1) * T),
        Kind.HELD_OUT: (int(n_rows) + 8 * int(n_models) * d * G, 8 * (2 * int(n_models) + 3) * T),
        Kind.VALIDATION_SCORE: (8 * (d + 2) * G, 8 * 4 * T),
        Kind.PUSH: (8 * d * int(calls), 0),
        Kind.PULL: (0, 8 * d * int(calls)),
        Kind.GOSSIP_EXCHANGE: (8 * P * (P + 1) + 2 * (P if edges is None else int(edges))
                               * 8 * (d + 1), 0),
    }
    if kind == Kind.COMPRESSED_GRADIENT:
        if codec is None:
            raise ValueError(f"The payload model of a {kind!r} round needs its codec.")
        return 8 * (d + 1 + scalars) * G, (int(codec.model_bytes(d)) + 16) * P
    if kind == Kind.DEADLINE_GRADIENT:
        taken = P if arrived is None else int(arrived)
        return 8 * (d + 1) * P, 8 * (d + 2) * taken
    if kind in (Kind.COMPRESSED_BATCH, Kind.COMPRESSED_LOCAL_SGD):
        if codec is None:
            raise ValueError(f"The payload model of a {kind!r} round needs its codec.")
        # every group gets the draws of every partition (a stateful round has no per-
        # partition items): 3 integers each; only the messages come back, P of them
        message = int(codec.model_bytes(d))
        if kind == Kind.COMPRESSED_BATCH:
            return 8 * (d + 3 * P + scalars) * G, (message + 16) * P
        return 8 * (d + scalars) * G, (message + 8 * scalars) * P
    if kind == Kind.DEADLINE_BATCH:
        taken = P if arrived is None else int(arrived)
        return 8 * (3 + d + scalars) * P, 8 * (d + 2) * taken
    if kind not in table:
        raise ValueError(f"No payload model for round kind {kind!r}; known: {sorted(table)}.")
    return table[kind]
