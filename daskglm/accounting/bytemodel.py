"""The byte model: what each kind of round moves, and Dask's control traffic per task.

Every ledger record (:mod:`daskglm.accounting.ledger`) carries these modelled bytes next
to the bytes Dask measured.  The engine counts the bytes of the objects it actually sends
and receives (:func:`nbytes`); the model of each kind of round, which those counts follow
(``tests/test_comm.py`` checks they agree), is tabulated in ``docs/costs.md`` ("The model"),
with Dask's per-task control traffic (:data:`TASK_BYTES`) and what direct calls add.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..compute.row_sample import sample_floats
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
                  dense_downlink=False,
                  calls=1, edges=None, touched=0, blocks=1, kind_sums=0, partials=None,
                  sample_rows=True):
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
    dense_downlink : bool
        Whether a ``"compressed_gradient"`` round sent the coefficients themselves
        rather than the codec's message for their change (its first round).
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
    kind_sums : int, optional
        ``k``: the sums an ``"inference"`` round returns besides for the log-likelihood
        of analytic weights or binomial trials
        (:func:`~daskglm.model.weight_kinds.kind_sums_size`); 0 for frequency weights.
    partials : int, optional
        ``T``: the partial sums a tree round moves (a record's ``partials``); one per
        task by default, ``G`` plus the combine tasks, as when every worker's
        partitions are neighbours in the reduction tree.
    sample_rows : bool
        Whether the round's column moments include the sample of rows (``r =
        p (p + 1) / 2 + p + 1`` floats up to 128 features: ``"validate"`` and its fused
        kinds, ``"fold_moments"``, ``"class_moments"``); only for the solvers that read it.

    Returns
    -------
    tuple of int
        Bytes down (to the partitions) and up (partials and results).
    """
    d, P = int(n_params), int(partitions)
    G = P if groups is None else int(groups)
    p = d if n_features is None else int(n_features)
    T = G + tree_tasks(G, split_every) if partials is None else int(partials)
    r = sample_floats(p) if sample_rows else 0
    v = 2 * p + 6 + r  # a validation result: moments, counts, row sample
    table = {
        Kind.VALIDATE: (16 * G, 8 * v * T),
        Kind.GRADIENT: (8 * (d + 1) * G, 8 * (d + 2) * T),
        Kind.HESSIAN: (8 * (d + 1) * G, 8 * (d * d + d + 2) * T),
        Kind.GRAM: (0, 8 * (p * p + 2 * p + 3) * T),
        Kind.VALIDATE_GRAM: (0, 8 * (p * p + 2 * p + 8) * T),
        Kind.VALIDATE_GRADIENT: (8 * (d + 2) * G, 8 * (v + d + 2) * T),
        Kind.VALIDATE_HESSIAN: (8 * (d + 2) * G, 8 * (v + d * d + d + 2) * T),
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
        Kind.INFERENCE: (8 * (d + 2) * G, 8 * (3 * d * d + 9 + int(kind_sums)) * T),
        Kind.NULL_MODEL: (8 * G, 8 * 3 * T),
        Kind.ROBUST: (8 * (d * d + d + 1) * G, 8 * (2 * d * d + 1) * T),
        Kind.FOLD_GRAM: (int(n_rows) + 8 * G, 8 * int(n_folds) * (p * p + 2 * p + 3) * T),
        Kind.LEAVE_ONE_OUT: (8 * (p * p + p + int(n_models) * (p + 2)) * G,
                             8 * (2 * int(n_models) + 3) * T),
        Kind.FOLD_MOMENTS: (int(n_rows) + 8 * G, 8 * (2 * p + 1 + r) * T),
        Kind.CLASS_MOMENTS: (0, 8 * (2 * p + 1 + r) * T),
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
        # the coefficients go down as one codec message for the replica's change; dense
        # in the first round and after the replicas were lost (dense_downlink)
        down = 8 * d if dense_downlink else int(codec.model_bytes(d))
        return (down + 8 * (1 + scalars)) * G, (int(codec.model_bytes(d)) + 16) * P
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
