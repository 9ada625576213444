"""Gradient descent's rounds when they cut communication: compressed or with a deadline.

:class:`~daskglm.solvers.gradient.GradientDescent` evaluates the objective through an
:class:`ApproximateRounds` when ``compression``, ``deadline`` or ``min_fraction`` is set:

* compressed: ONE stateful round (``compressed_gradient``) per evaluation; each partition
  sends its loss exactly and the change of its gradient sum since its last message,
  compressed (:func:`~daskglm.compute.compressed_steps.compressed_loss_grad`: each
  partition's reference gradient is kept where it lives, the driver keeps their sum).
  The coefficients go down compressed too: the driver and every partition keep the
  same replica of them, the driver sends the codec's message for ``params - replica``
  and both sides step the replica by its decoding
  (:func:`~daskglm.compute.compressed_steps.replica_update`); the value and gradient are
  those at the replica (:attr:`ApproximateRounds.replica`), which the solver takes as
  its trial point.  The first evaluation, and one after the replicas were lost,
  send the coefficients themselves;
* with a deadline: ONE deadline round (``deadline_gradient``) per evaluation; the loss and
  gradient of the partitions that arrived are scaled by ``weight_total /
  weight_arrived``.  When none arrived the evaluation is an exact round.  On a cluster,
  the partitions that missed a round run from the next one on also as backup tasks on
  replicas (:meth:`~daskglm.engine.Engine.reduce_by_deadline`), so a persistent
  straggler is left out of one evaluation only, and an evaluation where nothing was
  dropped is exact.  A :class:`~daskglm.solvers.deadline_guard.DeadlineGuard` times the
  first evaluations with and without the deadline and waits from then on where the
  deadline does not pay.

Either way the gradient is an estimate, so the stopping criterion is confirmed by one
exact round (``gradient``) before ``converged`` is claimed; a confirmation that fails
halves the estimated violation the next one waits for.
"""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..compute.compressed_steps import Sender, compressed_loss_grad, decode_sum, replica_update
from ..compute.kernels import loss_grad
from ..compute.tree import tree_sum
from .deadline_guard import DeadlineGuard

__all__ = ["ApproximateRounds", "GD_SENDER_STATE"]

#: Name of the partition state holding each partition's sender in compressed gd.
GD_SENDER_STATE = "gd_compression_senders"


class ApproximateRounds:
    """Objective evaluations from compressed or deadline rounds.

    Parameters
    ----------
    objective : Objective
        Its problem and engine; also gives the exact evaluations.
    codec : Codec or None
    deadline, min_fraction : float or None
    """

    def __init__(self, objective, codec=None, deadline=None, min_fraction=None):
        self.objective = objective
        self.engine = objective.engine
        self.problem = objective.problem
        self.codec = codec
        self.deadline, self.min_fraction = deadline, min_fraction
        self.rounds = 0
        #: the sum of the partitions' reference gradients (compressed rounds)
        self.reference = None
        #: the coefficients at the partitions (compressed rounds); None: send them dense
        self.replica = None
        #: whether deadline rounds pay, measured against waiting rounds
        self.guard = None if codec is not None else DeadlineGuard(self.engine.ledger)
        if codec is not None:
            self._put_senders()

    def _put_senders(self):
        self.reference = self.replica = None
        self.engine.keep_states_in_holders(GD_SENDER_STATE)
        self.engine.put_state(GD_SENDER_STATE,
                              [Sender(i) for i in range(self.engine.n_partitions)])

    def value_and_grad(self, params):
        """Estimated smooth objective and gradient at ``params``: one round."""
        p = self.problem
        self.rounds += 1
        if self.codec is not None:
            round_ = self._compressed_round(params)
            if round_.reset:  # senders lost with a worker: their residuals are gone
                self._put_senders()
                round_ = self._compressed_round(params)
            partials = round_.result
            loss = tree_sum([part.loss for part in partials])
            change = self.codec.shift_rate(params.shape[0]) * decode_sum(
                [part.message for part in partials], self.codec, params.shape[0])
            self.reference = change if self.reference is None else self.reference + change
            grad = self.reference
        else:
            if self.guard.next_round_waits():
                return self.guard.timed(True, self.objective.value_and_grad, params)
            arrived = self.guard.timed(
                False, self.engine.reduce_by_deadline, loss_grad, params, p.family,
                p.fit_intercept, kind=Kind.DEADLINE_GRADIENT, deadline=self.deadline,
                min_fraction=self.min_fraction)
            if arrived.result is None or not arrived.weight_arrived > 0:
                return self.objective.value_and_grad(params)
            scale = arrived.weight_total / arrived.weight_arrived
            loss = arrived.result.loss * scale
            grad = np.asarray(arrived.result.grad, dtype=np.float64) * scale
        at = params if self.codec is None else self.replica
        value, grad, _ = self.objective._penalise(at, loss, np.array(grad, copy=True))
        return value, grad

    def _compressed_round(self, params):
        """One compressed round at the replica stepped towards ``params``."""
        p = self.problem
        if self.replica is None:
            downlink, replica = params, np.array(params, dtype=np.float64)
        else:
            downlink, replica = replica_update(self.codec, params, self.replica, self.rounds)
        round_ = self.engine.map_stateful(compressed_loss_grad, GD_SENDER_STATE, downlink,
                                          p.family, p.fit_intercept, self.codec, self.rounds,
                                          kind=Kind.COMPRESSED_GRADIENT)
        if not round_.reset:
            self.replica = replica
        return round_

    def close(self):
        """Release the senders (no round)."""
        if self.codec is not None:
            self.engine.drop_state(GD_SENDER_STATE)
