"""Passes over the training rows a fitted estimator's rounds made, from its ledger:
:func:`passes_over_data`, and the kinds of rounds it counts."""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..solvers.round_sizing import FIRST_PROBE_STEPS

__all__ = ["passes_over_data", "PASS_KINDS", "EPOCH_KINDS", "LOCAL_KINDS", "NO_PASS_KINDS",
           "UNCOUNTED_KINDS"]

#: Kinds of rounds that read the features of every training row once: one pass each.
PASS_KINDS = frozenset({
    Kind.VALIDATE, Kind.MAXIMA, Kind.SCALE, Kind.GRADIENT, Kind.HESSIAN, Kind.GRAM,
    Kind.VALIDATE_GRAM, Kind.VALIDATE_GRADIENT, Kind.VALIDATE_HESSIAN,
    Kind.COMPRESSED_GRADIENT, Kind.DEADLINE_GRADIENT, Kind.SPARSE_GRADIENT,
    Kind.SHARD_COLUMNS, Kind.BLOCK_SPLIT, Kind.BLOCK_GRADIENT, Kind.INFERENCE,
    Kind.ROBUST,
    Kind.CLASS_MOMENTS, Kind.FOLD_GRAM,
})
#: Kinds of rounds of stochastic solvers, whose reads are counted by epochs (an epoch reads
#: every training row once; ``n_iter_`` counts them).
EPOCH_KINDS = frozenset({
    Kind.SGD_BATCH, Kind.LOCAL_SGD, Kind.COMPRESSED_BATCH, Kind.COMPRESSED_LOCAL_SGD,
    Kind.DEADLINE_BATCH, Kind.DEADLINE_LOCAL_SGD, Kind.ASYNC_SGD, Kind.GOSSIP,
})
#: Local solves (ADMM, averaging): every partition's L-BFGS-B reads its rows once per
#: evaluation; only the iterations of the longest solve are recorded (``local_iterations``).
LOCAL_KINDS = frozenset({Kind.LOCAL_SOLVE})
#: Kinds of rounds that read no row's features: sizes, targets only, model state,
#: parameters, column shards.
NO_PASS_KINDS = frozenset({
    Kind.SIZES, Kind.ENCODE, Kind.TARGET_MEAN, Kind.NULL_MODEL, Kind.PUSH, Kind.PULL,
    Kind.PUT_STATE, Kind.FETCH_STATE, Kind.COMPUTE_STATE, Kind.SHARD_REGISTER,
    Kind.SHARD_PULL, Kind.SHARD_PUSH,
    Kind.SHARD_OP, Kind.SHARD_LOAD, Kind.SHARD_FETCH, Kind.GOSSIP_EXCHANGE,
    Kind.GOSSIP_START, Kind.GOSSIP_FETCH,
})
#: Kinds of rounds whose reads this module does not count (a part of the rows: folds,
#: held-out rows; or whatever columns a driver pass reads): a ledger holding one has no
#: pass count.
UNCOUNTED_KINDS = frozenset({Kind.HELD_OUT, Kind.LEAVE_ONE_OUT, Kind.FOLD_MOMENTS,
                             Kind.VALIDATION_SCORE, Kind.DRIVER_PASS})


def _probe_passes(model, n_rows, probes):
    """Share of an epoch read by SGD's ``probes`` timing rounds (``sync_every="auto"``):
    rounds of 64, 128, 256, ... steps of ``batch_size`` rows, at most one epoch each
    (:class:`daskglm.solvers.round_sizing.StepTimer`), their results dropped."""
    history = getattr(model, "history_", None) or []
    steps_per_epoch = history[0].get("steps") if history else None
    batch = (getattr(model, "solver_options_", None) or {}).get("batch_size")
    if not steps_per_epoch or not batch or not n_rows:
        return None
    steps = [min(FIRST_PROBE_STEPS * 2**k, steps_per_epoch) for k in range(probes)]
    return sum(min(k * batch, n_rows) for k in steps) / n_rows


def passes_over_data(model, n_rows=None):
    """Passes over the training rows a fitted estimator's rounds made: ``(passes,
    at_least)``, from its ledger (``model.comm_``) and ``history_``.

    * A round that reads the features of every training row (validation, a gradient, a
      Hessian, a Gram matrix: :data:`PASS_KINDS`) counts 1.
    * Stochastic rounds (:data:`EPOCH_KINDS`) count by epochs: each of the ``n_iter_``
      epochs reads every row once, whatever its number of rounds; SGD's timing rounds
      (``step_probe``) add the share of an epoch they read (needs ``n_rows``).
    * A local-solve round (ADMM, averaging) reads each partition's rows once per L-BFGS-B
      evaluation, and only the iterations of the longest local solve are recorded: the
      count is then a lower bound for the rows of that partition, ``1 + iterations`` per
      round (``at_least`` True).
    * Rounds that move sizes, targets or parameters only count 0.

    ``passes`` is None where the ledger holds a round whose reads are not counted here.
    """
    report = model.comm_
    counts = {}
    for record in report.records:
        counts[record.kind] = counts.get(record.kind, 0) + 1
    known = PASS_KINDS | EPOCH_KINDS | LOCAL_KINDS | NO_PASS_KINDS | {Kind.STEP_PROBE}
    if any(kind not in known for kind in counts):
        return None, False
    passes = float(sum(n for kind, n in counts.items() if kind in PASS_KINDS))
    if any(kind in EPOCH_KINDS for kind in counts):
        passes += int(np.max(model.n_iter_))
    if counts.get(Kind.STEP_PROBE):
        probes = _probe_passes(model, n_rows, counts[Kind.STEP_PROBE])
        if probes is None:
            return None, False
        passes += probes
    at_least = False
    if counts.get(Kind.LOCAL_SOLVE):
        local = [entry["local_iterations"] for entry in model.history_
                 if "local_iterations" in entry]
        if len(local) == counts[Kind.LOCAL_SOLVE]:
            passes += sum(1 + int(n) for n in local)
        else:  # at least one read per local solve
            passes += counts[Kind.LOCAL_SOLVE]
        at_least = True
    return passes, at_least
