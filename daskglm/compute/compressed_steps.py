"""Per-partition kernels of compressed SGD rounds, and the driver's decode-then-sum.

A compressed round sends back, from each partition, one codec message
(:mod:`daskglm.compute.compression`) instead of a dense float64 vector: the mini-batch
gradient sum of synchronous SGD, or the weighted model delta of local SGD.  Each
partition compresses its own vector where it lives, and the driver decodes the messages
and sums them in the fixed-order tree over partition indices
(:func:`~daskglm.compute.tree.tree_sum`), so that no dense vector crosses the network on
the way back and the result depends only on the partitions, never on which worker holds
them.

The partition state of these rounds is a :class:`Sender`: the partition's index (which
names its random stream and its rows of each mini-batch), for codecs that need error
feedback (``"sign"``, ``"topk"``) the residual that compression has lost so far, and, in
synchronous SGD, a replica of the coefficients.  The residual stays with its partition:
it is never sent.

The coefficients need not travel dense either: the driver's step is a pure function of
the coefficients, the messages of the step and a few scalars (:func:`apply_step`), so a
synchronous round sends the previous step's messages (a :class:`Downlink`) and every
partition replays the driver's step on its replica, with the same code in the same
order: the replicas equal the driver's coefficients bit for bit.  The first round of a
run, and a round after a replica was lost, send the coefficients themselves.  The random draws of a stochastic
codec depend only on ``(seed, step, partition index)``.  Nothing here imports dask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .compression import ErrorFeedback
from .kernels import loss_grad
from .local_sgd_rounds import local_sgd
from .sampling import partition_size
from .sparse_vectors import dense_gradient
from .stochastic import batch_loss_grad, l1_prox, sgd_step
from .tree import tree_sum

__all__ = [
    "Sender", "Downlink", "CompressedBatch", "CompressedLocal", "compress_vector",
    "message_rng", "apply_step", "compressed_batch_loss_grad", "compressed_local_sgd",
    "compressed_loss_grad", "decode_sum", "ReplicaUpdate", "replica_update", "stepped_replica",
]

#: Mixed into the seeds of the codecs' draws, so that they never repeat the row draws.
_CODEC_STREAM = 0x636F6465
#: Mixed into the seeds of the draws of gradient descent's downlink messages.
_DOWNLINK_STREAM = 0x646F776E


@dataclass
class Sender:
    """The partition state of a compressed round.

    Attributes
    ----------
    index : int
        The partition's position among the engine's partitions.
    residual : ndarray or None
        Error feedback's residual (None before the first message, and for codecs
        without error feedback).
    params : ndarray or None
        The replica of the coefficients (synchronous SGD, gradient descent).
    reference : ndarray or None
        Gradient descent's reference gradient ``h``: the sum of the decoded messages the
        partition has sent (see :func:`compressed_loss_grad`).
    """

    index: int
    residual: np.ndarray | None = None
    params: np.ndarray | None = None
    reference: np.ndarray | None = None


@dataclass
class Downlink:
    """What a compressed synchronous round sends instead of the coefficients.

    Attributes
    ----------
    params : ndarray or None
        The coefficients themselves (the first round of a run, or after a replica was
        lost); None to step the replicas.
    messages : list or None
        The previous step's messages, one per partition (None for a partition that sent
        nothing).
    rule_state
        The step rule's state before that step.
    step, n_batch : int
        That step's number and its rows over all partitions.
    """

    params: np.ndarray | None = None
    messages: list | None = None
    rule_state: object = None
    step: int = 0
    n_batch: int = 0


class CompressedBatch(NamedTuple):
    """One partition's share of a compressed synchronous SGD step.

    Attributes
    ----------
    loss : float
        Loss summed over the partition's rows of the step.
    weight : float
        Their total sample weight.
    message
        The codec's message for the gradient sum, or None when the partition had
        nothing to send (no rows this step and no residual).
    """

    loss: float
    weight: float
    message: object


class CompressedLocal(NamedTuple):
    """One partition's compressed local SGD run.

    Attributes
    ----------
    stats : LocalSGDStats
        As :func:`~daskglm.compute.local_sgd_rounds.local_sgd` returns it, with ``params``
        empty: the iterate travels as ``message``.
    message
        The codec's message for ``fraction * (local iterate - shared start)``, the
        partition's weighted model delta; None when it is zero and nothing is owed.
    """

    stats: object
    message: object


def message_rng(seed, step, index):
    """The random stream of the codec's draws for partition ``index`` at ``step``."""
    return np.random.default_rng([int(seed), _CODEC_STREAM, int(step), int(index)])


def compress_vector(codec, vector, sender, seed, step):
    """Compress ``vector`` for ``sender``: ``(message or None, new Sender)``.

    With a codec that needs error feedback, ``vector`` plus the residual is compressed
    and the new residual kept (:meth:`ErrorFeedback.compress`); otherwise the vector is
    encoded as it is.  A zero vector with nothing owed sends nothing (None).
    """
    owed = sender.residual is not None and np.any(sender.residual)
    if not np.any(vector) and not owed:
        return None, sender
    rng = message_rng(seed, step, sender.index)
    if codec.needs_error_feedback:
        message, residual = ErrorFeedback.compress(codec, vector, sender.residual, rng)
        return message, Sender(sender.index, residual, sender.params)
    return codec.encode(vector, rng), sender


def apply_step(params, messages, codec, config, rule_state, step, n_batch):
    """One synchronous SGD step from the step's messages: ``(params, rate, rule_state)``.

    The driver and every replica run exactly this, so that they agree to the last bit.
    """
    grad_sum = decode_sum(messages, codec, params.shape[0])
    moved, rate, rule_state = sgd_step(params, grad_sum, config.total_weight, config,
                                       rule_state, step, n_batch)
    return l1_prox(moved, rate, config), rate, rule_state


def replica(sender, downlink, codec, config):
    """The coefficients of this round at the partition, from its replica and the downlink."""
    if downlink.params is not None:
        return downlink.params
    if sender.params is None:
        raise ValueError("The partition holds no replica of the coefficients; send them.")
    return apply_step(sender.params, downlink.messages, codec, config, downlink.rule_state,
                      downlink.step, downlink.n_batch)[0]


def compressed_batch_loss_grad(part, sender, draws, downlink, config, epoch, step, codec):
    """A stateful kernel: the partition's mini-batch loss and its compressed gradient sum.

    Parameters
    ----------
    part : tuple
        ``(X, y, weight)``.
    sender : Sender
        The partition state (put on the partitions before the first round).
    draws : list
        One draw per partition, ``(index, number of rows, offset)``, as for
        :func:`~daskglm.compute.stochastic.batch_loss_grad`; the kernel takes
        ``draws[sender.index]``.
    downlink : Downlink or ndarray
        The coefficients, or how to step the partition's replica to them.
    config : SGDConfig
    epoch, step : int
        The step at which the epoch began, and this step.
    codec : Codec

    Returns
    -------
    (CompressedBatch, Sender)
        ``(None, None)`` for a sender lost with its worker (None).
    """
    if sender is None:  # lost (StateRound.reset): the solver puts it back, runs again
        return None, None
    if isinstance(downlink, np.ndarray):
        downlink = Downlink(params=downlink)
    params = replica(sender, downlink, codec, config)
    stats = batch_loss_grad(part, draws[sender.index], params, config, epoch)
    grad = np.asarray(dense_gradient(stats.grad), dtype=np.float64)
    message, sender = compress_vector(codec, grad, sender, config.seed, step)
    sender = Sender(sender.index, sender.residual, params)
    return CompressedBatch(float(stats.loss), float(stats.weight), message), sender


def compressed_local_sgd(part, sender, draws, params, rule_state, config, step, codec):
    """A stateful kernel: local SGD steps on the partition, the model delta compressed.

    :func:`~daskglm.compute.local_sgd_rounds.local_sgd` from ``params`` (without a running
    mean of the iterates), then ``fraction * (iterate - params)`` is compressed, where
    ``fraction`` is the partition's share of the sample weight: the shared iterate after
    averaging is ``params`` plus the sum of the decoded deltas.

    Returns
    -------
    (CompressedLocal, Sender)
    """
    if sender is None:  # lost (StateRound.reset): the solver puts it back, runs again
        return None, None
    stats = local_sgd(part, draws[sender.index], params, rule_state, None, config)
    _, weight = partition_size(part)
    fraction = weight / config.total_weight if weight > 0 else 0.0
    delta = stats.params - fraction * params
    message, sender = compress_vector(codec, delta, sender, config.seed, step)
    stats.params = np.zeros(0)
    return CompressedLocal(stats, message), sender


class ReplicaUpdate(NamedTuple):
    """What a compressed gradient descent round sends instead of the coefficients.

    Attributes
    ----------
    message
        The codec's message for the change of the replica (:func:`replica_update`), or
        None when the replica stays where it is.
    """

    message: object


def stepped_replica(replica, update, codec):
    """The replica after ``update``, ``replica + rate D(message)`` with the codec's
    :meth:`~daskglm.compute.compression.Codec.shift_rate`: the driver and every
    partition run exactly this, so that their replicas agree to the last bit."""
    if update.message is None:
        return replica
    return replica + codec.shift_rate(replica.shape[0]) * codec.decode(update.message)


def replica_update(codec, params, replica, round_number):
    """The driver's downlink towards ``params``: ``(ReplicaUpdate, new replica)``.

    The message is ``C(params - replica)``: what compression leaves out stays in the
    difference and is sent in a later round (the replica is the error feedback's
    state), so the replicas follow the coefficients as closely as the codec allows.
    An unbiased codec's message moves the replica by its shift rate only
    (:func:`stepped_replica`), so that its variance cannot push the replica away.
    The draws of a stochastic codec depend only on ``round_number``.
    """
    change = np.asarray(params, dtype=np.float64) - replica
    if not np.any(change):
        return ReplicaUpdate(None), replica
    rng = np.random.default_rng([_DOWNLINK_STREAM, int(round_number)])
    update = ReplicaUpdate(codec.encode(change, rng))
    return update, stepped_replica(replica, update, codec)


def compressed_loss_grad(part, sender, downlink, family, fit_intercept, codec, round_number):
    """A stateful kernel: the partition's loss sum and its compressed gradient change.

    The coefficients are ``downlink`` itself (an ndarray: the first round, or after the
    replica was lost) or the partition's replica stepped by the :class:`ReplicaUpdate`
    (:func:`stepped_replica`); the loss and gradient are those at the replica.
    :func:`~daskglm.compute.kernels.loss_grad`, the loss and weight sent exactly; of the
    gradient sum ``g`` only ``C(g - h)`` is sent, where the reference ``h`` is what the
    partition's messages add up to, and ``h`` becomes ``h + rate D(C(g - h))`` (the
    difference compression of EF21 and DIANA; ``rate`` is the codec's
    :meth:`~daskglm.compute.compression.Codec.shift_rate`, 1 for a contractive codec and
    ``1 / (1 + omega)`` for an unbiased one, without which its variance would grow the
    error of ``h`` every round).  The driver keeps the sum of the
    references as its gradient.  A partition's gradient does not vanish at the optimum,
    only the sum does; its change does, and so does the error compression adds to it, so
    full-batch descent can reach any tolerance.  The codec's draws depend on
    ``(round_number, index)``.

    Returns
    -------
    (CompressedBatch, Sender)
    """
    if sender is None:  # lost (StateRound.reset): the solver puts it back, runs again
        return None, None
    if isinstance(downlink, np.ndarray):
        params = downlink
    elif sender.params is None:
        raise ValueError("The partition holds no replica of the coefficients; send them.")
    else:
        params = stepped_replica(sender.params, downlink, codec)
    stats = loss_grad(part, params, family, fit_intercept)
    grad = np.asarray(stats.grad, dtype=np.float64)
    change = grad if sender.reference is None else grad - sender.reference
    message = None
    reference = sender.reference
    if np.any(change):
        message = codec.encode(change, message_rng(0, round_number, sender.index))
        decoded = codec.shift_rate(change.shape[0]) * codec.decode(message)
        reference = decoded if reference is None else reference + decoded
    sender = Sender(sender.index, None, params, reference)
    return CompressedBatch(float(stats.loss), float(stats.weight), message), sender


def decode_sum(messages, codec, length):
    """Sum of the decoded ``messages`` (one per partition; None counts as zeros) in the
    fixed-order tree over partition indices.

    Parameters
    ----------
    messages : list
    codec : Codec
    length : int
        d.

    Returns
    -------
    ndarray of float64
    """
    vectors = [np.zeros(length) if message is None else codec.decode(message)
               for message in messages]
    return tree_sum(vectors)
