"""Decentralised SGD by gossip: graphs of nodes, mixing weights, and a node's steps.

Every partition is a node with a model of its own (:class:`GossipNode`, kept as partition
state).  A gossip round is local SGD steps on each node's own rows
(:func:`gossip_local_steps`), then each node replaces its model by a weighted average
of its own and its neighbours' (:func:`mix_with_neighbours`), with the Metropolis-Hastings
weights of the graph (:func:`metropolis_weights`: symmetric and doubly stochastic, so the
mean of the models is kept and the models contract to it at the rate of the graph's
spectral gap).  No node ever holds the mean.

Each node's gradient is scaled so that the mean over the nodes of their steps is exactly
the step of synchronous mini-batch SGD: node ``i`` draws the rows mini-batch SGD would
draw in its partition (:func:`~daskglm.compute.sampling.epoch_counts`) and scales their
gradient sum by ``P * n_rows / (batch rows * total weight)``.  On the complete graph
with one local step per round, gossip therefore is synchronous SGD up to round-off.
Nothing here imports Dask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .local_sgd_rounds import compiled_local_steps, compiled_local_steps_apply
from .sampling import batch_rows
from .sparse_vectors import dense_gradient
from .stochastic import batch_loss_grad

__all__ = ["TOPOLOGIES", "neighbours_of", "metropolis_weights", "GossipNode", "NodeStats",
           "gossip_local_steps", "mix_with_neighbours", "spread"]

#: The graphs ``neighbours_of`` builds.
TOPOLOGIES = ("ring", "random", "complete")


def neighbours_of(n_nodes, topology="ring", degree=4, seed=0):
    """The neighbours of each node of a connected graph, as sorted tuples.

    ``"ring"``: node ``i`` with ``i - 1`` and ``i + 1`` (mod ``n_nodes``);
    ``"complete"``: every other node; ``"random"``: the union of ``degree // 2`` random
    rings (random orders of the nodes, drawn from ``seed``), connected by construction,
    each node with at most ``degree`` neighbours.
    """
    if topology not in TOPOLOGIES:
        raise ValueError(f"Unknown topology {topology!r}; choose one of {list(TOPOLOGIES)}.")
    n = int(n_nodes)
    links = [set() for _ in range(n)]
    if topology == "complete":
        for i in range(n):
            links[i] = set(range(n)) - {i}
        return [tuple(sorted(s)) for s in links]
    orders = [np.arange(n)]
    if topology == "random":
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(n,)))
        orders = [rng.permutation(n) for _ in range(max(1, int(degree) // 2))]
    for order in orders:
        for k in range(n):
            a, b = int(order[k]), int(order[(k + 1) % n])
            if a != b:
                links[a].add(b)
                links[b].add(a)
    return [tuple(sorted(s)) for s in links]


def metropolis_weights(neighbours):
    """Mixing weights ``W`` (n x n): ``W[i, j] = 1 / (1 + max(deg i, deg j))`` for
    neighbours, ``W[i, i]`` the rest of 1; symmetric and doubly stochastic."""
    n = len(neighbours)
    weights = np.zeros((n, n))
    for i, links in enumerate(neighbours):
        for j in links:
            weights[i, j] = 1.0 / (1.0 + max(len(links), len(neighbours[j])))
        weights[i, i] = 1.0 - weights[i].sum()
    return weights


@dataclass
class GossipNode:
    """One node's model: its partition index, parameters and step-rule state."""

    index: int
    params: np.ndarray
    rule_state: object = None


@dataclass
class NodeStats:
    """Sums over the nodes of one round: the models and their squared norms (for the
    spread), and the loss, weight and weighted penalty of the rows read."""

    params: np.ndarray
    sqnorm: float
    loss: float
    weight: float
    penalty: float
    nodes: int

    def __add__(self, other):
        return NodeStats(self.params + other.params, self.sqnorm + other.sqnorm,
                         self.loss + other.loss, self.weight + other.weight,
                         self.penalty + other.penalty, self.nodes + other.nodes)


def gossip_local_steps(part, node, counts, offsets, first_step, epoch, config, n_nodes):
    """Local SGD steps of one node on its own rows: ``(NodeStats, new node)``.

    Parameters
    ----------
    part : tuple
        ``(X, y, weight)`` of the node's partition.
    node : GossipNode or None
        The node's model (None when it was lost with a worker: the node sits the round
        out and gets its model back from its neighbours in the exchange).
    counts : ndarray of int, shape (steps, n_nodes)
        Rows each node reads at each step (a slice of the epoch's
        :func:`~daskglm.compute.sampling.epoch_counts`).
    offsets : ndarray of int, shape (n_nodes,)
        Where in its epoch order each node's rows of this round begin.
    first_step, epoch : int
        The step number of the round's first step and of the epoch's.
    config : SGDConfig
    n_nodes : int
    """
    if node is None:
        zero = np.zeros(config.n_features + int(config.fit_intercept))
        return NodeStats(zero, 0.0, 0.0, 0.0, 0.0, 0), None
    i = node.index
    x = np.array(node.params, dtype=float)
    rule_state = node.rule_state
    n = config.n_features
    offset = int(offsets[i])
    if compiled_local_steps_apply(part, counts[:, i], config):
        # local SGD's steps with the node's share of the total weight: the same step
        x, _, rule_state, _, loss, weight, penalty = compiled_local_steps(
            part, i, first_step, counts[:, i], x, rule_state, None,
            config.total_weight / n_nodes, config, epoch, offset)
        new = GossipNode(i, x, rule_state)
        return NodeStats(x.copy(), float(x @ x), loss, weight, penalty, 1), new
    loss = weight = penalty = 0.0
    for k in range(counts.shape[0]):
        step = first_step + k
        count = int(counts[k, i])
        grad = np.zeros_like(x)
        if count:
            stats = batch_loss_grad(part, (i, count, offset), x, config, epoch)
            offset += count
            loss += stats.loss
            weight += stats.weight
            penalty += stats.weight * config.penalty.value(x[:n])
            grad = dense_gradient(stats.grad) * (
                n_nodes * config.n_rows / (batch_rows(config, epoch, step) * config.total_weight))
        grad[:n] += config.penalty.grad(x[:n])
        rate, rule_state = config.rule.update(grad, rule_state, step)
        x = x - rate * grad
    new = GossipNode(i, x, rule_state)
    return NodeStats(x.copy(), float(x @ x), loss, weight, penalty, 1), new


def mix_with_neighbours(node, neighbour_nodes, item):
    """Node ``index``'s new model: ``sum_j weights[j] * model_j`` over itself and its
    neighbours, ``item = (index, weights)`` (its row of :func:`metropolis_weights`).
    Models lost with a worker (None) are left out and the weights of the others scaled
    up to sum to 1; the step-rule state stays the node's own."""
    index, weights = item
    present = [(index, node)] + [(nb.index, nb) for nb in neighbour_nodes if nb is not None]
    present = [(j, nd) for j, nd in present if nd is not None]
    if not present:
        return None
    total = sum(weights[j] for j, _ in present)
    params = sum((weights[j] / total) * nd.params for j, nd in present)
    rule_state = node.rule_state if node is not None else present[0][1].rule_state
    return GossipNode(index, params, rule_state)


def spread(stats):
    """Root mean square distance of the nodes' models to their mean, from
    :class:`NodeStats` sums."""
    if not stats.nodes:
        return float("nan")
    mean = stats.params / stats.nodes
    return float(np.sqrt(max(stats.sqnorm / stats.nodes - mean @ mean, 0.0)))
