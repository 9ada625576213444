"""Mini-batch SGD and local SGD: stochastic steps, one engine round per step or per sync."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .. import progress
from ..accounting.kinds import Kind
from ..compute.hogwild import hogwild_loss
from ..compute.local_sgd_rounds import local_sgd
from ..compute.sampling import epoch_counts, partition_size
from ..compute.seeds import root_seed
from ..compute.stochastic import SGDConfig, average_update, batch_loss_grad, l1_prox, sgd_step
from ..model.problem import Feature
from ..optim.schedules import LEARNING_RATES, make_step_rule
from .base import EarlyStopping, History, Solver, SolverResult
from .communication_options import COMMUNICATION_OPTIONS, check_waits, codec_of
from .deadline_guard import DeadlineGuard
from .round_sizing import StepTimer
from .sgd_communication import (
    SENDER_STATE,
    Link,
    compressed_local_epoch,
    compressed_synchronous_epoch,
    deadline_epoch,
    deadline_local_epoch,
    start_senders,
)

__all__ = ["SGD", "SGDState", "SGDResult"]


@dataclass
class SGDState:
    """Where a stochastic run stands; passing it back to :meth:`SGD.solve` continues the run.

    Attributes
    ----------
    params : ndarray
        The current iterate.
    rule : step rule
        The rule ``rule_state`` belongs to.
    rule_state
        The step rule's state (e.g. Adagrad's sums of squared gradients).
    average : ndarray or None
        Running mean of the iterates (Polyak-Ruppert), None before averaging begins.
    step : int
        Steps taken so far; it numbers the learning-rate schedule and the random draws.
    seed : int
        Root of the random draws.
    """

    params: np.ndarray
    rule: object
    rule_state: object
    average: np.ndarray | None
    step: int
    seed: int

    @property
    def solution(self):
        """The running mean once averaging has begun, the current iterate otherwise."""
        return self.params if self.average is None else self.average


@dataclass
class SGDResult(SolverResult):
    """A :class:`SolverResult` with the final :class:`SGDState`."""

    state: SGDState | None = None


def _check_hogwild(problem):
    """Raise ValueError unless Hogwild's kernel handles ``problem``."""
    if hogwild_loss(problem.family) is None:
        raise ValueError("Option 'hogwild' needs the binomial or Gaussian family with its "
                         f"canonical link; got {problem.family!r}.")
    if problem.penalty.ridge_strength is None:
        raise ValueError(f"Option 'hogwild' needs no penalty or an L2 penalty; got "
                         f"{problem.penalty!r}.")


def _lower_rate(state):
    """Divide an ``"adaptive"`` rate at a plateau of the stopping rule (scikit-learn's
    rule); False when the rule has no such step or its rate is spent (then stop)."""
    on_plateau = getattr(state.rule, "on_plateau", None)
    if on_plateau is None:
        return False
    lowered = on_plateau(state.rule_state)
    if lowered is None:
        return False
    state.rule_state = lowered
    return True


def _is_int(value, minimum):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= minimum


class SGD(Solver):
    """Mini-batch stochastic gradient descent, synchronous or local.

    An epoch is ``ceil(n_samples / batch_size)`` steps that visit every row exactly once,
    in a random order (sampling without replacement, as scikit-learn shuffles the rows
    before each epoch); ``max_iter`` counts epochs.  Each step takes the next
    ``batch_size`` rows of that order (the last step what is left), spread over the
    partitions as a uniformly random order spreads them (seeded multivariate
    hypergeometric draws on the driver; each partition orders its own rows with a seed
    derived from ``(random_state, epoch, partition index)``, so a run does not depend on
    the number of workers).  The gradient of the step's rows, scaled to
    estimate the gradient of the weighted mean loss, plus the gradient of the smooth
    (L2) part of the penalty gives the step; the L1 part of an L1 or elastic-net penalty
    is applied by soft-thresholding after it (proximal SGD).  The intercept is never
    penalised.

    * Synchronous (``sync_every=None``): ONE round per step returns the mini-batch's loss
      and gradient sums; the driver updates.
    * Local SGD (``sync_every=K``): in ONE round every partition runs ``K`` steps on its
      own rows (it draws the rows synchronous SGD would draw there, and scales their
      gradient to estimate its own mean gradient), then the iterates, step-rule states
      and running means are averaged, weighted by the partitions' sample weight.
      ``K=1`` is synchronous SGD up to round-off; for ``"adagrad"`` the per-coordinate
      rates then come from each partition's gradient rather than the mini-batch's, so
      only the gradient-free schedules match exactly.

    With a single partition, synchronous SGD runs each epoch as local SGD in one round:
    the same computation, in the same order.

    Early stopping is scikit-learn's rule (``early_stopping=False``): the epoch's
    objective is the mean over its rows (weighted by the sample weights) of each row's
    loss plus the penalty, both at the iterate before the step that uses the row (the
    current iterate, never the running mean); the epoch counts as no improvement when
    that exceeds the best so far minus ``tol``, and the run stops (``converged``) after
    ``n_iter_no_change`` such epochs in a row.  As every row enters each epoch once, the
    estimate carries no sampling noise from the draws, and with ``batch_size=1`` and no
    sample weights it is scikit-learn's number.  ``tol=None`` runs all ``max_iter``
    epochs.  ``history`` has one entry per epoch: that ``objective``, its ``loss`` and
    ``penalty`` parts, ``grad_norm`` NaN (SGD never computes a full gradient) and
    ``step`` the last learning rate (its mean for per-coordinate rates).

    Options
    -------
    batch_size : int, default 16
        Rows per step over all partitions (the last step of an epoch takes what is left).
    learning_rate : {"constant", "invscaling", "optimal", "adagrad", "adaptive"}, default "invscaling"
        See :func:`daskglm.optim.schedules.make_step_rule`; ``"optimal"`` needs a penalty with
        ``alpha > 0``; ``"adaptive"`` keeps ``eta0`` and divides it by 5 each time the
        stopping rule fires, stopping once it is at most 1e-6 (scikit-learn's rule).
    eta0 : float, default 0.01
        Initial learning rate (unused by ``"optimal"``).
    power_t : float, default 0.25
        Exponent of ``"invscaling"``.
    average : bool or int, default False
        Polyak-Ruppert averaging of the iterates: True averages from the first step, an
        int ``k`` from the step at which ``k`` rows have been drawn; the solution is the
        average.  Local SGD averages the local iterates of each partition.
    n_iter_no_change : int, default 5
        Epochs without improvement before stopping.
    random_state : None, int, RandomState or Generator, default None
        Seed of the random draws.
    sync_every : int, None or "auto", default "auto"
        Local steps between averaging rounds; None for synchronous SGD (one round per
        step).  ``"auto"`` sizes the rounds from their cost on the cluster at hand
        (:mod:`daskglm.solvers.round_sizing`): where rounds cross processes (a Dask
        cluster), after rounds of 64, 128, 256, ... local steps that time a step and a
        round's fixed cost (their results dropped), local SGD with the smallest power of
        two of steps per round whose compute is at least 10 times the fixed cost, at
        most one epoch; in this process, synchronous SGD (one round an epoch on the one
        partition of in-memory rows, :meth:`in_process_partitions`).  The choice and its
        reason are in the ledger's ``choices`` and ``solver_options_``; it depends on
        timings, so pass the chosen value to repeat a run bit for bit.
    compression : None, str or dict, default None
        Compress what each round sends back (:mod:`daskglm.compute.compression`):
        ``"stochastic"``, ``"qsgd"`` (with ``bits``), ``"sign"`` and ``"topk"`` (with
        ``k``; both with error feedback, the residuals kept as partition state where the
        partitions live), ``"none"``, or a codec dict such as ``{"name": "qsgd", "bits":
        4}``.  Synchronous SGD compresses each partition's mini-batch gradient sum, local
        SGD each partition's weighted model delta; see
        :mod:`daskglm.solvers.sgd_communication`.
    bits : int, optional
        Bits per entry of ``"qsgd"`` (2 to 8; default 4).
    k : float, optional
        Fraction of the entries ``"topk"`` keeps (0 < k <= 1; default 0.01).
    deadline : float, optional
        Each round waits at most this many seconds and takes the partitions that
        arrived: synchronous SGD scales their gradient by the share of the sample weight
        that arrived, local SGD averages their iterates (weighted by their sample
        weight); the partitions dropped are listed in the ledger's records and in each
        history entry's ``dropped``.
    min_fraction : float in (0, 1], optional
        Each round waits until partitions holding this share of the sample weight
        arrived (with ``deadline``, whichever comes first).  On a cluster,
        a partition dropped from a round runs in the later ones also as a backup task on
        a worker that was in time, and is waited for past ``min_fraction`` (see
        :meth:`~daskglm.engine.Engine.reduce_by_deadline`).  With either, the first 4
        rounds use them and the next 2 wait for every partition; the fit keeps them only
        where their fastest round beat the fastest waiting one, and waits otherwise
        (:class:`~daskglm.solvers.deadline_guard.DeadlineGuard`; ``comm_.choices
        ["deadline"]`` gives the figures).
    validation : callable or None, default None
        ``validation(params) -> score`` (higher is better), e.g. the accuracy or R^2 of
        held-out rows, computed in a round of its own engine: after every epoch it is
        called at the solution (the running mean with averaging), and the stopping rule
        runs on the score instead of the epoch's objective (scikit-learn's
        ``early_stopping=True``): no improvement is a score below the best so far plus
        ``tol``.  Each history entry then carries its ``validation_score``.
    shuffle : bool, default True
        Visit the rows of each epoch in a random order; False visits them in their order
        (the partitions one after the other, each from its first row) every epoch, as
        scikit-learn's ``shuffle=False``.
    hogwild : int or None, default None
        Local SGD's steps on a partition as one pass of lock-free Hogwild SGD in this
        many threads over the same rows (best on sparse rows; needs ``sync_every``, the
        binomial or Gaussian family with its canonical link, no or an L2 penalty, a
        ``"constant"``, ``"invscaling"`` or ``"optimal"`` rate and no ``average``).  Not
        bit-reproducible: the threads race.
    """

    name = "sgd"
    stops_on_optimality = False
    options = {
        "batch_size": 16, "learning_rate": "invscaling", "eta0": 0.01, "power_t": 0.25,
        "average": False, "n_iter_no_change": 5, "random_state": None, "sync_every": "auto",
        **COMMUNICATION_OPTIONS,
        "hogwild": None, "validation": None, "shuffle": True,
    }
    handles = frozenset({Feature.NON_QUADRATIC_LOSS, Feature.NON_QUADRATIC_PENALTY,
                         Feature.NONSMOOTH_PENALTY})

    accepts_no_tol = True

    def __init__(self, tol=1e-4, max_iter=100, **options):
        super().__init__(tol=tol, max_iter=max_iter, **options)
        opts = self.opts
        average = opts["average"]
        checks = {
            "batch_size": (_is_int(opts["batch_size"], 1), "an integer >= 1"),
            "learning_rate": (opts["learning_rate"] in LEARNING_RATES,
                              f"one of {list(LEARNING_RATES)}"),
            "average": (isinstance(average, (bool, np.bool_)) or _is_int(average, 0),
                        "a bool or an integer >= 0"),
            "n_iter_no_change": (_is_int(opts["n_iter_no_change"], 1), "an integer >= 1"),
            "sync_every": (opts["sync_every"] is None or opts["sync_every"] == "auto"
                           or _is_int(opts["sync_every"], 1), "None, 'auto' or an integer >= 1"),
            "hogwild": (opts["hogwild"] is None or _is_int(opts["hogwild"], 1),
                        "None or an integer >= 1"),
            "validation": (opts["validation"] is None or callable(opts["validation"]),
                           "None or a callable"),
            "shuffle": (isinstance(opts["shuffle"], (bool, np.bool_)), "True or False"),
        }
        for key, (valid, requirement) in checks.items():
            if not valid:
                raise ValueError(f"Option {key!r} of solver 'sgd' must be {requirement}; "
                                 f"got {opts[key]!r}.")
        self.codec = codec_of(opts, self.name)
        if self.codec is not None and _is_int(opts["sync_every"], 1) and average:
            raise ValueError("Option 'average' of solver 'sgd' is not available with "
                             "'compression' and 'sync_every' (the local iterates are not "
                             "sent); use synchronous SGD or average=False.")
        if check_waits(opts, "sgd") and opts["hogwild"] is not None:
            raise ValueError("Options 'deadline' and 'min_fraction' of solver 'sgd' apply to "
                             "synchronous and local SGD, not to hogwild.")
        if opts["learning_rate"] != "optimal":
            make_step_rule(opts["learning_rate"], opts["eta0"], opts["power_t"])  # checks them
        if opts["hogwild"] is not None and (
                opts["sync_every"] is None or average
                or opts["learning_rate"] in ("adagrad", "adaptive")):
            raise ValueError("Option 'hogwild' of solver 'sgd' needs sync_every, no average "
                             "and a learning_rate other than 'adagrad' and 'adaptive'.")
        if not isinstance(opts["random_state"], (np.random.RandomState, np.random.Generator)):
            root_seed(opts["random_state"])  # checks it

    @classmethod
    def in_process_partitions(cls, options):
        """One at ``sync_every="auto"``: an epoch is one compiled call (with more, a round
        of the engine a step, about 0.5 ms each)."""
        return 1 if options.get("sync_every", "auto") == "auto" else None

    # ----------------------------------------------------------------------------------
    def step_rule(self, problem):
        """The step rule of the options; ``"optimal"`` takes ``alpha`` from the penalty."""
        return make_step_rule(self.opts["learning_rate"], self.opts["eta0"],
                              self.opts["power_t"], alpha=getattr(problem.penalty, "alpha", 0.0))

    def initial_state(self, problem, params0):
        """A fresh :class:`SGDState` at ``params0``."""
        rule = self.step_rule(problem)
        params = np.array(params0, dtype=float)
        return SGDState(params, rule, rule.init(params), None, 0, root_seed(self.opts["random_state"]))

    def solve(self, problem, engine, params0, state=None, callback=None):
        """Run up to ``max_iter`` epochs from ``params0``, or from ``state`` to continue a run.

        ``callback(epoch, state)``, when given, is called after every epoch with the
        :class:`SGDState` (to be read, not changed), e.g. to follow the true objective.

        Returns
        -------
        SGDResult
            ``params`` is the solution (the running mean with averaging); ``state`` can be
            passed back to continue on the same or other data.
        """
        if self.opts["hogwild"] is not None:
            _check_hogwild(problem)
        if state is None:
            state = self.initial_state(problem, params0)
        else:
            state = self._resume(problem, state)
        history = History(engine)
        config = self._config(problem, engine, state)
        rows = (
            [engine.n_samples] if engine.n_partitions == 1
            else [size[0] for size in engine.map(partition_size, kind=Kind.SIZES)]
        )
        steps_per_epoch = math.ceil(engine.n_samples / config.batch_size)
        deadline, min_fraction = self.opts["deadline"], self.opts["min_fraction"]
        waits = deadline is not None or min_fraction is not None
        codec = self.codec
        sync_every = self.opts["sync_every"]
        first_counts = None  # the first epoch's split, when the round sizing drew it
        if sync_every == "auto":
            sync_every, first_counts = self._auto_sync_every(engine, config, state, rows,
                                                             steps_per_epoch)
        if sync_every is None and engine.n_partitions == 1 and codec is None and not waits:
            sync_every = steps_per_epoch  # the same computation, one round per epoch
        if codec is not None:
            start_senders(engine)
            link = Link(state.params)
        guard = DeadlineGuard(engine.ledger) if waits else None
        stopping = EarlyStopping(self.tol, self.opts["n_iter_no_change"])
        validation = self.opts["validation"]
        converged, n_epochs = False, 0
        try:
            for n_epochs in range(1, self.max_iter + 1):
                if n_epochs == 1 and first_counts is not None:
                    counts = first_counts
                else:
                    counts = epoch_counts(rows, config.batch_size, config.seed, state.step,
                                      config.shuffle)
                extra = {}
                if waits and sync_every is None:
                    loss, penalty, weight, rate, dropped = deadline_epoch(
                        engine, config, state, counts, deadline, min_fraction, guard)
                    extra["dropped"] = dropped
                elif waits:
                    loss, penalty, weight, rate, dropped = deadline_local_epoch(
                        engine, config, state, counts, sync_every, deadline, min_fraction,
                        guard)
                    extra["dropped"] = dropped
                elif codec is not None and sync_every is None:
                    loss, penalty, weight, rate = compressed_synchronous_epoch(
                        engine, config, state, counts, codec, link)
                elif codec is not None:
                    loss, penalty, weight, rate = compressed_local_epoch(
                        engine, config, state, counts, sync_every, codec)
                elif sync_every is None:
                    loss, penalty, weight, rate = self._synchronous_epoch(
                        engine, config, state, counts)
                else:
                    loss, penalty, weight, rate = self._local_epoch(
                        engine, config, state, counts, sync_every)
                mean_loss = loss / weight if weight > 0 else math.nan
                mean_penalty = penalty / weight if weight > 0 else math.nan
                value = mean_loss + mean_penalty
                history.record(value, math.nan, float(np.mean(rate)), loss=mean_loss,
                               penalty=mean_penalty, steps=steps_per_epoch, **extra)
                if callback is not None:
                    callback(n_epochs, state)
                if not np.all(np.isfinite(state.params)):
                    return SGDResult(state.solution, n_epochs, False, history.entries,
                                     "the iterates diverged; lower the learning rate", state)
                score = value if validation is None else -validation(state.solution)
                if validation is not None:
                    history.entries[-1]["validation_score"] = -score
                if stopping.should_stop(score):
                    if _lower_rate(state):  # "adaptive": a plateau divides the rate by 5
                        stopping.bad_epochs = 0
                        continue
                    converged = True
                    break
        finally:
            if codec is not None:
                engine.drop_state(SENDER_STATE)
        if self.tol is None:
            converged, message = True, "ran every epoch (no tolerance)"
        else:
            message = "converged" if converged else "maximum number of epochs reached"
        return SGDResult(state.solution, n_epochs, converged, history.entries, message, state)

    def _auto_sync_every(self, engine, config, state, rows, steps_per_epoch):
        """``sync_every="auto"``: local steps per round from the measured cost of a round,
        recorded in the ledger's choices; returns it and the first epoch's split of the
        steps over the partitions where the timing rounds drew it (else None)."""
        hogwild = self.opts["hogwild"] is not None
        counts = None
        if engine.n_partitions == 1:
            value, reason = steps_per_epoch, "one partition: one round per epoch"
        elif not engine.remote_rounds:
            value = steps_per_epoch if hogwild else None
            reason = "rounds run in this process, where a round costs no more than its steps"
        else:
            timer = StepTimer(engine.ledger.records[-1].seconds, steps_per_epoch)  # sizes round
            counts = epoch_counts(rows, config.batch_size, config.seed, state.step,
                                  config.shuffle)
            sizing = None
            while sizing is None:
                each = [(index, state.step, counts[:timer.steps, index], state.step, 0)
                        for index in range(engine.n_partitions)]
                engine.reduce_each(local_sgd, each, state.params, state.rule_state,
                                   state.average, config, kind=Kind.STEP_PROBE)
                sizing = timer.add(engine.ledger.records[-1].seconds)
            value, reason = sizing.steps, sizing.reason
        engine.ledger.note_choice("sync_every", value, reason)
        return value, counts

    def _resume(self, problem, state):
        """Continue ``state``; a changed step rule starts afresh from its iterate."""
        state = replace(state)  # the caller's state is left as it was
        rule = self.step_rule(problem)
        if rule != state.rule:
            state.rule, state.rule_state = rule, rule.init(state.params)
        return state

    def _config(self, problem, engine, state):
        batch_size = int(self.opts["batch_size"])
        average = int(self.opts["average"])
        return SGDConfig(
            family=problem.family, penalty=problem.penalty, rule=state.rule,
            fit_intercept=problem.fit_intercept, n_features=problem.n_features,
            batch_size=batch_size, n_rows=engine.n_samples, total_weight=engine.sum_weight,
            seed=state.seed,
            average_from=None if average == 0 else max(0, math.ceil(average / batch_size) - 1),
            hogwild=self.opts["hogwild"], shuffle=bool(self.opts["shuffle"]),
        )

    @staticmethod
    def _synchronous_epoch(engine, config, state, counts):
        """One epoch, one round per step (``counts``: rows per step and partition).

        ``state`` is updated in place; returns the sums of the loss, of the sample weight
        times the penalty, and of the sample weight over the epoch's rows, and the last
        learning rate.
        """
        loss = penalty = weight = 0.0
        rate = 0.0
        epoch = state.step
        offsets = np.cumsum(counts, axis=0) - counts
        n = config.n_features
        for k in range(counts.shape[0]):
            step = epoch + k
            draws = [(index, int(counts[k, index]), int(offsets[k, index]))
                     for index in range(counts.shape[1])]
            stats = engine.reduce_each(
                batch_loss_grad, draws, state.params, config, epoch, kind=Kind.SGD_BATCH,
            )
            loss += stats.loss
            weight += stats.weight
            if stats.weight:
                penalty += stats.weight * config.penalty.value(state.params[:n])
            moved, rate, state.rule_state = sgd_step(
                state.params, stats.grad, engine.sum_weight, config, state.rule_state, step,
                int(counts[k].sum()),
            )
            state.params = l1_prox(moved, rate, config)
            state.average = average_update(state.average, state.params, step, config)
            progress.report_part((k + 1) / counts.shape[0])
        state.step += counts.shape[0]
        return loss, penalty, weight, rate

    @staticmethod
    def _local_epoch(engine, config, state, counts, sync_every):
        """One epoch, ``sync_every`` local steps per round; as :meth:`_synchronous_epoch`."""
        loss = penalty = weight = 0.0
        rate = 0.0
        epoch = state.step
        offsets = np.cumsum(counts, axis=0) - counts
        end = epoch + counts.shape[0]
        while state.step < end:
            first = state.step
            steps = range(first, min(first + sync_every, end))
            rel = slice(first - epoch, steps[-1] + 1 - epoch)
            each = [(index, first, counts[rel, index], epoch, int(offsets[rel.start, index]))
                    for index in range(engine.n_partitions)]
            local = engine.reduce_each(
                local_sgd, each, state.params, state.rule_state, state.average, config,
                kind=Kind.LOCAL_SGD,
            )
            loss += local.loss
            penalty += local.penalty
            weight += local.batch_weight
            rate, state.rule_state = local.rate, local.rule_state
            state.params = l1_prox(local.params, rate, config)
            state.average = average_update(local.average, state.params, steps[-1], config)
            state.step = steps[-1] + 1
            progress.report_part((state.step - epoch) / counts.shape[0])
        return loss, penalty, weight, rate
