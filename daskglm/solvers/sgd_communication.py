"""SGD epochs that cut communication: compressed rounds and straggler deadlines.

:class:`~daskglm.solvers.sgd.SGD` runs its epochs here when ``compression``, ``deadline``
or ``min_fraction`` is set; each function takes one epoch's draws (``counts``: rows per
step and partition) and updates the :class:`~daskglm.solvers.sgd.SGDState` in place, as
the plain epochs of :mod:`daskglm.solvers.sgd` do, returning the same sums.

* Compressed synchronous SGD: ONE stateful round per step
  (:meth:`~daskglm.engine.Engine.map_stateful`) in which every partition compresses its
  mini-batch gradient sum where it lives and sends back the message only; the driver
  decodes and sums them in the fixed-order tree over partition indices.  Down, the
  round sends the previous step's messages, from which every partition steps its replica
  of the coefficients as the driver does
  (:class:`~daskglm.compute.compressed_steps.Downlink`); the coefficients themselves go
  down only in the first round of a run (and after a replica was lost).
* Compressed local SGD: the same, per synchronisation, with each partition's weighted
  model delta compressed.  The step rule's state travels as it is (a scalar, but
  Adagrad's per-coordinate sums are dense); there is no running mean of the iterates
  (``average``), as the local iterates are not sent.
* Deadline SGD: ONE deadline round per step
  (:meth:`~daskglm.engine.Engine.reduce_each_by_deadline`); the gradient of the
  partitions that arrived is scaled by ``weight_total / weight_arrived``, an unbiased
  estimate of the full gradient when which partitions arrive does not depend on their
  rows (a slow machine).  A step in which no partition arrived does not move.  On a
  cluster the engine backs up the partitions that missed a step with tasks on replicas
  (a persistent straggler's rows are then in every later step, and a step where nothing
  was dropped is plain synchronous SGD's, bit for bit).
* Deadline local SGD: ONE deadline round per ``sync_every`` local steps; the iterates,
  rates and step-rule states of the partitions that arrived are averaged, weighted by
  their sample weight (the late partitions' local steps are dropped, so a persistent
  straggler costs a round its wait only until its partitions are backed up on a worker
  that is in time).  A round in which no partition arrived does not move.

The partition state of the compressed rounds (:class:`~daskglm.compute.compressed_steps.Sender`:
the partition's index and error feedback's residual) is put on the partitions once, at
the start of a run, and never fetched: residuals do not travel.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import NamedTuple

import numpy as np

from .. import progress
from ..accounting.kinds import Kind
from ..compute.compressed_steps import (
    Downlink,
    Sender,
    apply_step,
    compressed_batch_loss_grad,
    compressed_local_sgd,
    decode_sum,
)
from ..compute.local_sgd_rounds import local_sgd
from ..compute.sparse_vectors import dense_gradient
from ..compute.stochastic import average_update, batch_loss_grad, l1_prox, sgd_step
from ..compute.tree import tree_sum
from ..optim.schedules import scale_state

__all__ = [
    "SENDER_STATE", "Link", "start_senders", "compressed_synchronous_epoch",
    "compressed_local_epoch", "deadline_epoch", "deadline_local_epoch",
]

#: Name of the partition state holding each partition's :class:`Sender`.
SENDER_STATE = "sgd_compression_senders"


def start_senders(engine):
    """Put a fresh :class:`Sender` (its index, no residual) on every partition, kept by
    the partition holders where the engine has them: one round."""
    engine.keep_states_in_holders(SENDER_STATE)
    engine.put_state(SENDER_STATE, [Sender(i) for i in range(engine.n_partitions)])


def _stateful(engine, kernel, *args, kind, again=None):
    """One ``map_stateful`` round over the senders; senders lost with a worker are put
    back (their residuals and replicas are lost with them) and the round runs again, with
    the arguments ``again`` when given."""
    round_ = engine.map_stateful(kernel, SENDER_STATE, *args, kind=kind)
    if round_.reset:
        senders = [Sender(i) for i in range(engine.n_partitions)]
        engine.put_state(SENDER_STATE, senders)
        round_ = engine.map_stateful(kernel, SENDER_STATE, *(again or args), kind=kind)
    return round_.result


def _draws(counts, offsets, k):
    return [(index, int(counts[k, index]), int(offsets[k, index]))
            for index in range(counts.shape[1])]


class Link:
    """The driver's side of the compressed downlink: what the next round sends down.

    Starts with the coefficients; after each step, the step's messages
    (:class:`~daskglm.compute.compressed_steps.Downlink`).
    """

    def __init__(self, params):
        self.next = Downlink(params=params)


def compressed_synchronous_epoch(engine, config, state, counts, codec, link):
    """One epoch of synchronous SGD, each step's gradients compressed per partition.

    ``link`` (a :class:`Link`) carries the downlink from one step, and one epoch, to the
    next.  Returns the sums of the loss, of the sample weight times the penalty, of the
    sample weight over the epoch's rows, and the last learning rate.
    """
    loss = penalty = weight = 0.0
    rate = 0.0
    epoch = state.step
    offsets = np.cumsum(counts, axis=0) - counts
    n = config.n_features
    for k in range(counts.shape[0]):
        step = epoch + k
        draws = _draws(counts, offsets, k)
        partials = _stateful(
            engine, compressed_batch_loss_grad, draws, link.next, config, epoch, step, codec,
            kind=Kind.COMPRESSED_BATCH,
            again=(draws, Downlink(params=state.params), config, epoch, step, codec),
        )
        messages = [p.message for p in partials]
        step_loss = tree_sum([p.loss for p in partials])
        step_weight = tree_sum([p.weight for p in partials])
        loss += step_loss
        weight += step_weight
        if step_weight:
            penalty += step_weight * config.penalty.value(state.params[:n])
        n_batch = int(counts[k].sum())
        link.next = Downlink(None, messages, state.rule_state, step, n_batch)
        state.params, rate, state.rule_state = apply_step(
            state.params, messages, codec, config, state.rule_state, step, n_batch)
        state.average = average_update(state.average, state.params, step, config)
        progress.report_part((k + 1) / counts.shape[0])
    state.step += counts.shape[0]
    return loss, penalty, weight, rate


def compressed_local_epoch(engine, config, state, counts, sync_every, codec):
    """One epoch of local SGD, ``sync_every`` local steps per round, each partition's
    weighted model delta compressed; returns as :func:`compressed_synchronous_epoch`."""
    loss = penalty = weight = 0.0
    rate = 0.0
    epoch = state.step
    offsets = np.cumsum(counts, axis=0) - counts
    end = epoch + counts.shape[0]
    length = state.params.shape[0]
    local_config = replace(config, average_from=None)  # no running mean (checked by SGD)
    while state.step < end:
        first = state.step
        steps = range(first, min(first + sync_every, end))
        rel = slice(first - epoch, steps[-1] + 1 - epoch)
        each = [(index, first, counts[rel, index], epoch, int(offsets[rel.start, index]))
                for index in range(engine.n_partitions)]
        partials = _stateful(engine, compressed_local_sgd, each, state.params,
                             state.rule_state, local_config, first, codec,
                             kind=Kind.COMPRESSED_LOCAL_SGD)
        local = tree_sum([p.stats for p in partials])
        delta = decode_sum([p.message for p in partials], codec, length)
        loss += local.loss
        penalty += local.penalty
        weight += local.batch_weight
        rate, state.rule_state = local.rate, local.rule_state
        state.params = l1_prox(state.params + delta, rate, config)
        state.average = average_update(state.average, state.params, steps[-1], config)
        state.step = steps[-1] + 1
        progress.report_part((state.step - epoch) / counts.shape[0])
    return loss, penalty, weight, rate


def deadline_epoch(engine, config, state, counts, deadline, min_fraction, guard=None):
    """One epoch of synchronous SGD whose steps take the partitions that arrive in time.

    Returns as :func:`compressed_synchronous_epoch`, the sums over the rows that arrived,
    plus the partitions dropped in each step (a list of tuples: those no copy of which
    arrived; a partition whose backup task arrived is not dropped).  With a
    :class:`~daskglm.solvers.deadline_guard.DeadlineGuard`, a step it says waits is a
    plain round over every partition.
    """
    loss = penalty = weight = 0.0
    rate = 0.0
    epoch = state.step
    offsets = np.cumsum(counts, axis=0) - counts
    n = config.n_features
    dropped = []
    for k in range(counts.shape[0]):
        step = epoch + k
        args = (_draws(counts, offsets, k), state.params, config, epoch)
        if guard is not None and guard.next_round_waits():
            round_ = guard.timed(True, _waiting_round, engine, *args)
        else:
            by_deadline = (engine.reduce_each_by_deadline if guard is None else
                           partial(guard.timed, False, engine.reduce_each_by_deadline))
            round_ = by_deadline(batch_loss_grad, *args, kind=Kind.DEADLINE_BATCH,
                                 deadline=deadline, min_fraction=min_fraction)
        dropped.append(round_.dropped)
        progress.report_part((k + 1) / counts.shape[0])
        stats = round_.result
        if stats is None or not round_.weight_arrived > 0:
            state.average = average_update(state.average, state.params, step, config)
            continue  # nothing arrived: the step does not move
        loss += stats.loss
        weight += stats.weight
        if stats.weight:
            penalty += stats.weight * config.penalty.value(state.params[:n])
        scale = round_.weight_total / round_.weight_arrived
        moved, rate, state.rule_state = sgd_step(
            state.params, _scaled(stats.grad, scale), engine.sum_weight, config,
            state.rule_state, step, int(counts[k].sum()),
        )
        state.params = l1_prox(moved, rate, config)
        state.average = average_update(state.average, state.params, step, config)
    state.step += counts.shape[0]
    return loss, penalty, weight, rate, dropped


def deadline_local_epoch(engine, config, state, counts, sync_every, deadline, min_fraction,
                         guard=None):
    """One epoch of local SGD, ``sync_every`` local steps per round, whose rounds average
    the partitions that arrive in time.  Returns as :func:`deadline_epoch` (the
    partitions dropped in each round)."""
    loss = penalty = weight = 0.0
    rate = 0.0
    epoch = state.step
    offsets = np.cumsum(counts, axis=0) - counts
    end = epoch + counts.shape[0]
    dropped = []
    while state.step < end:
        first = state.step
        last = min(first + sync_every, end) - 1
        rel = slice(first - epoch, last + 1 - epoch)
        each = [(index, first, counts[rel, index], epoch, int(offsets[rel.start, index]))
                for index in range(engine.n_partitions)]
        args = (state.params, state.rule_state, state.average, config)
        if guard is not None and guard.next_round_waits():
            round_ = guard.timed(True, _waiting_local_round, engine, each, *args)
        else:
            by_deadline = (engine.reduce_each_by_deadline if guard is None else
                           partial(guard.timed, False, engine.reduce_each_by_deadline))
            round_ = by_deadline(local_sgd, each, *args, kind=Kind.DEADLINE_LOCAL_SGD,
                                 deadline=deadline, min_fraction=min_fraction)
        dropped.append(round_.dropped)
        state.step = last + 1
        progress.report_part((state.step - epoch) / counts.shape[0])
        local = round_.result
        if local is None or not round_.weight_arrived > 0:
            state.average = _average_unmoved(state.average, state.params, first, last, config)
            continue  # nothing arrived: the round does not move
        share = round_.weight_arrived / round_.weight_total
        loss += local.loss
        penalty += local.penalty
        weight += local.batch_weight
        rate = local.rate / share
        state.rule_state = scale_state(local.rule_state, 1.0 / share)
        state.params = l1_prox(local.params / share, rate, config)
        average = None if local.average is None else local.average / share
        state.average = average_update(average, state.params, last, config)
    return loss, penalty, weight, rate, dropped


def _average_unmoved(average, params, first, last, config):
    """The running mean of the iterates after steps ``first`` to ``last`` all left them at
    ``params``."""
    start = config.average_from
    if start is None or last < start:
        return average
    counted = max(first, start)
    before, added = counted - start, last - counted + 1
    if average is None or before == 0:
        return params.copy()
    return average + (params - average) * (added / (before + added))


def _waiting_local_round(engine, each, params, rule_state, average, config):
    """A plain local SGD round over every partition, as a deadline round where all
    arrived."""
    local = engine.reduce_each(local_sgd, each, params, rule_state, average, config,
                               kind=Kind.LOCAL_SGD)
    return _AllArrived(local, (), 1.0, 1.0)


def _waiting_round(engine, draws, params, config, epoch):
    """A step's plain round over every partition, as a deadline round where all arrived."""
    stats = engine.reduce_each(batch_loss_grad, draws, params, config, epoch,
                               kind=Kind.SGD_BATCH)
    return _AllArrived(stats, (), 1.0, 1.0)


class _AllArrived(NamedTuple):
    result: object
    dropped: tuple
    weight_arrived: float
    weight_total: float


def _scaled(grad, scale):
    """``scale * grad`` for a dense or sparse gradient sum (exact when ``scale`` is 1)."""
    if scale == 1.0:
        return grad
    return scale * np.asarray(dense_gradient(grad), dtype=np.float64)
