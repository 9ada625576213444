"""Decentralised SGD by gossip (``solver="gossip"``): no global model until the end."""

from __future__ import annotations

import math

import numpy as np

from .. import progress
from ..accounting.bytemodel import nbytes
from ..accounting.kinds import Kind
from ..compute.gossip import (
    TOPOLOGIES,
    GossipNode,
    gossip_local_steps,
    metropolis_weights,
    mix_with_neighbours,
    neighbours_of,
    spread,
)
from ..compute.sampling import epoch_counts, partition_size
from ..compute.seeds import root_seed
from ..compute.stochastic import SGDConfig
from ..engine.neighbours import exchange_with_neighbours
from ..model.problem import Feature
from ..optim.schedules import LEARNING_RATES, make_step_rule
from .base import EarlyStopping, History, Solver, SolverResult
from .round_sizing import StepTimer

__all__ = ["Gossip"]

#: The name of the nodes' models among the engine's partition states.
STATE = "gossip"


def _is_int(value, minimum):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= minimum


class Gossip(Solver):
    """Decentralised SGD: every partition keeps its own model and averages it with its
    neighbours' on a graph.

    Each partition is a node whose model is partition state, kept where the partition
    lives.  A round is ``local_steps`` SGD steps on every node's own rows (ONE stateful
    round, :func:`~daskglm.compute.gossip.gossip_local_steps`: the rows synchronous
    mini-batch SGD would draw there, scaled so that the mean of the nodes' steps is its
    step), then ONE exchange round in which every node replaces its model by the
    Metropolis-Hastings average of its own and its neighbours' models
    (:func:`~daskglm.engine.neighbours.exchange_with_neighbours`: on a cluster the models
    move worker to worker).  No node holds a global model; the driver only sees the sums
    the stateful round returns: the loss of the rows read, and the sum and squared norms
    of the models, from which it reports their ``spread`` (root mean square distance to
    their mean) in ``history``.  The solution is the mean of the nodes' models, fetched
    once at the end (``fetch_state``).

    ``max_iter`` counts epochs (every row read once) and the stopping rule is SGD's on
    the epoch's sampled objective (mean loss of the rows read plus the penalty, each at
    the node's model before its step), with ``tol``; ``history`` has one entry per epoch
    with ``spread`` the spread of the models after the local steps of its last round
    (and ``final_spread`` on the last entry: the spread of the models averaged).  The run is deterministic given
    ``random_state`` (the draws depend on the seed and the partition indices only).

    Options
    -------
    topology : {"ring", "random", "complete"}, default "ring"
        The graph of the nodes (:func:`~daskglm.compute.gossip.neighbours_of`).
    degree : int, default 4
        Most neighbours of a node in the ``"random"`` graph.
    local_steps : int or "auto", default "auto"
        SGD steps between two exchanges.  ``"auto"`` (:mod:`daskglm.solvers.round_sizing`):
        on a Dask cluster the first rounds take 64, 128, 256, ... steps, whose wall
        times (with their exchanges) give a step's compute and a round's fixed cost; the
        rounds after them take the smallest power of two of steps whose compute is at
        least 10 times that fixed cost, at most an epoch.  1 in this process.  The choice
        and its reason are in the ledger's ``choices``.
    batch_size : int, default 32
        Rows per step over all nodes.
    learning_rate, eta0, power_t
        As for ``"sgd"``; defaults ``"invscaling"``, 0.1, 0.25.
    n_iter_no_change : int, default 5
    random_state : None or int, default None
    """

    name = "gossip"
    stops_on_optimality = False
    handles = frozenset({Feature.NON_QUADRATIC_LOSS})
    options = {
        "topology": "ring", "degree": 4, "local_steps": "auto", "batch_size": 32,
        "learning_rate": "invscaling", "eta0": 0.1, "power_t": 0.25, "n_iter_no_change": 5,
        "random_state": None,
    }

    accepts_no_tol = True

    def __init__(self, tol=1e-4, max_iter=100, **options):
        super().__init__(tol=tol, max_iter=max_iter, **options)
        opts = self.opts
        checks = {
            "topology": (opts["topology"] in TOPOLOGIES, f"one of {list(TOPOLOGIES)}"),
            "degree": (_is_int(opts["degree"], 2), "an integer >= 2"),
            "local_steps": (opts["local_steps"] == "auto" or _is_int(opts["local_steps"], 1),
                            "'auto' or an integer >= 1"),
            "batch_size": (_is_int(opts["batch_size"], 1), "an integer >= 1"),
            "learning_rate": (opts["learning_rate"] in LEARNING_RATES,
                              f"one of {list(LEARNING_RATES)}"),
            "n_iter_no_change": (_is_int(opts["n_iter_no_change"], 1), "an integer >= 1"),
        }
        for key, (valid, requirement) in checks.items():
            if not valid:
                raise ValueError(f"Option {key!r} of solver {self.name!r} must be "
                                 f"{requirement}; got {opts[key]!r}.")
        if opts["learning_rate"] != "optimal":
            make_step_rule(opts["learning_rate"], opts["eta0"], opts["power_t"])  # checks them
        root_seed(opts["random_state"])  # checks it

    def solve(self, problem, engine, params0):
        opts = self.opts
        rule = make_step_rule(opts["learning_rate"], opts["eta0"], opts["power_t"],
                              alpha=getattr(problem.penalty, "alpha", 0.0))
        seed = root_seed(opts["random_state"])
        config = SGDConfig(
            family=problem.family, penalty=problem.penalty, rule=rule,
            fit_intercept=problem.fit_intercept, n_features=problem.n_features,
            batch_size=int(opts["batch_size"]), n_rows=engine.n_samples,
            total_weight=engine.sum_weight, seed=seed,
        )
        n_nodes = engine.n_partitions
        links = neighbours_of(n_nodes, opts["topology"], opts["degree"], seed)
        weights = metropolis_weights(links)
        mixing = [(i, weights[i]) for i in range(n_nodes)]
        params0 = np.asarray(params0, dtype=float)
        rows = [size[0] for size in engine.map(partition_size, kind=Kind.SIZES)]
        empty_round_seconds = engine.ledger.records[-1].seconds
        engine.put_state(STATE, [GossipNode(i, params0.copy(), rule.init(params0))
                                 for i in range(n_nodes)], kind=Kind.GOSSIP_START)
        try:
            result = self._run(problem, engine, config, links, mixing, rows, params0,
                               empty_round_seconds)
        finally:
            engine.drop_state(STATE)
        return result

    def _run(self, problem, engine, config, links, mixing, rows, params0, empty_round_seconds):
        history = History(engine)
        n_nodes = engine.n_partitions
        local_steps, timer = self.opts["local_steps"], None
        if local_steps == "auto" and engine.remote_rounds and n_nodes > 1:
            timer = StepTimer(empty_round_seconds, math.ceil(engine.n_samples / config.batch_size))
            local_steps = timer.steps  # the first rounds time the steps
        elif local_steps == "auto":
            local_steps = 1
            engine.ledger.note_choice("local_steps", 1, "rounds run in this process, where a "
                                      "round costs no more than its steps")
        message = nbytes(GossipNode(0, params0, config.rule.init(params0)))
        stopping = EarlyStopping(self.tol, self.opts["n_iter_no_change"])
        converged, step = False, 0
        n_epochs = 0
        while n_epochs < self.max_iter:
            n_epochs += 1
            counts = epoch_counts(rows, config.batch_size, config.seed, step)
            epoch, offsets = step, np.zeros(n_nodes, dtype=np.int64)
            loss = weight = penalty = 0.0
            start = rounds_in_epoch = 0
            while start < counts.shape[0]:
                block = counts[start:start + local_steps]
                start += block.shape[0]
                rounds_in_epoch += 1
                stats = engine.reduce_stateful(
                    gossip_local_steps, STATE, block, offsets, step, epoch, config, n_nodes,
                    kind=Kind.GOSSIP).result
                local_record = engine.ledger.records[-1]
                offsets = offsets + block.sum(axis=0)
                step += block.shape[0]
                progress.report_part(start / counts.shape[0])
                loss, weight, penalty = (loss + stats.loss, weight + stats.weight,
                                         penalty + stats.penalty)
                if n_nodes > 1:
                    exchange_with_neighbours(engine, STATE, mix_with_neighbours, links, mixing,
                                             kind=Kind.GOSSIP_EXCHANGE, message_bytes=message)
                if timer is not None:  # this round and its exchange
                    sizing = timer.add(local_record.seconds + engine.ledger.records[-1].seconds,
                                       block.shape[0])
                    if sizing is None:
                        local_steps = timer.steps
                    else:
                        local_steps, timer = sizing.steps, None
                        engine.ledger.note_choice("local_steps", local_steps, sizing.reason)
            value = (loss + penalty) / weight if weight > 0 else math.nan
            history.record(value, math.nan, math.nan, loss=loss / weight if weight else math.nan,
                           penalty=penalty / weight if weight else math.nan,
                           spread=spread(stats), rounds_in_epoch=rounds_in_epoch)
            if not np.isfinite(value):
                break
            if stopping.should_stop(value):
                converged = True
                break
        nodes = engine.fetch_state(STATE, kind=Kind.GOSSIP_FETCH)
        models = [node.params for node in nodes if node is not None]
        params = np.mean(models, axis=0)
        final_spread = float(np.sqrt(np.mean([np.sum((m - params) ** 2) for m in models])))
        if history.entries:
            history.entries[-1]["final_spread"] = final_spread
        if not np.all(np.isfinite(params)):
            return SolverResult(params, n_epochs, False, history.entries,
                                "the iterates diverged; lower the learning rate")
        if self.tol is None:
            converged, message_text = True, "ran every epoch (no tolerance)"
        else:
            message_text = "converged" if converged else "maximum number of epochs reached"
        return SolverResult(params, n_epochs, converged, history.entries, message_text)
