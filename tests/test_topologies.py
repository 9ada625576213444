"""Aggregation topologies of cluster rounds: tree, parameter server and ring allreduce.

The server sums in the same fixed-order tree as the default (the same bits); the ring adds
in another order, so its sums agree with the tree's to round-off: 1e-12 relative here, and
a fit's coefficients to 1e-10.
"""

import math

import numpy as np
import pytest

from daskglm.accounting.costmodel import Cluster, as_topology, round_seconds
from daskglm.accounting.round_record import RoundRecord
from daskglm.compute.kernels import Stats, loss_grad, loss_grad_hess
from daskglm.compute.ring import flatten, unflatten
from daskglm.engine import make_engine
from daskglm.engine.topologies import returned_bytes
from daskglm.model.families import Binomial
from daskglm.model.penalties import L2
from daskglm.model.problem import Problem
from daskglm.solvers import get_solver


def binomial_data(n=3000, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ rng.normal(size=d)))).astype(float)
    return X, y


def test_flatten_round_trips_a_partial():
    stats = Stats(3.0, 1.5, np.arange(4.0), np.eye(4))
    vector, template = flatten(stats)
    assert vector.shape == (2 + 4 + 16,)
    back = unflatten(vector, template)
    assert back.weight == 3.0 and back.loss == 1.5
    np.testing.assert_array_equal(back.hess, np.eye(4))
    with pytest.raises(TypeError, match="cannot sum"):
        flatten({"a": 1})


@pytest.mark.parametrize("grouped", [True, False], ids=["group-per-thread", "task-per-part"])
def test_server_and_ring_sums_equal_the_tree(client, grouped):
    X, y = binomial_data()
    params = np.linspace(-0.5, 0.5, 13)
    sums, records = {}, {}
    for topology in ("tree", "server", "ring"):
        with make_engine(X, y, family=Binomial(), client=client, n_partitions=5,
                         group_partitions=grouped, topology=topology) as engine:
            grad = engine.reduce(loss_grad, params, Binomial(), True, kind="gradient")
            hess = engine.reduce(loss_grad_hess, params, Binomial(), True, kind="hessian")
            engine.collect_measurements()
            sums[topology] = (grad, hess)
            records[topology] = engine.ledger.records[-2]
            validation = engine.ledger.records[0]  # a summary a ring cannot cut: the tree
            assert validation.topology == {"tree": None, "server": "server", "ring": None}[topology]
    groups = records["tree"].groups
    assert groups == (2 if grouped else 5)
    for topology in ("server", "ring"):
        grad, hess = sums[topology]
        tree_grad, tree_hess = sums["tree"]
        if topology == "server":  # the same fixed-order tree, on one worker
            np.testing.assert_array_equal(grad.grad, tree_grad.grad)
            np.testing.assert_array_equal(hess.hess, tree_hess.hess)
        np.testing.assert_allclose(grad.grad, tree_grad.grad, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(hess.hess, tree_hess.hess, rtol=1e-12, atol=1e-12)
        assert grad.loss == pytest.approx(tree_grad.loss, rel=1e-12)
        record = records[topology]
        result = 8 * (13 + 2)  # weight, loss and the gradient
        assert record.topology == topology
        assert record.bytes_returned == returned_bytes(topology, result, groups)
        assert record.bytes_transferred > 0  # Dask's counters saw the partials move
    assert records["server"].tasks == groups + 1
    assert records["ring"].tasks == 3 * groups + 2 * groups * (groups - 1) + 1


def test_a_fit_gives_the_same_coefficients_with_every_topology(client):
    X, y = binomial_data()
    problem = Problem(Binomial(), L2(1e-3), True, X.shape[1])
    coefficients = {}
    for topology in ("tree", "server", "ring"):
        with make_engine(X, y, family=Binomial(), client=client, n_partitions=4,
                         topology=topology) as engine:
            solver = get_solver("newton", problem, tol=1e-10, max_iter=50)
            result = solver.solve(problem, engine, np.zeros(X.shape[1] + 1))
            assert result.converged
            coefficients[topology] = result.params
    for topology in ("server", "ring"):
        np.testing.assert_allclose(coefficients[topology], coefficients["tree"], rtol=1e-10,
                                   atol=1e-10)


def test_bad_topology_raises_before_any_work():
    X, y = binomial_data(n=50)
    with pytest.raises(ValueError, match="topology must be one of"):
        make_engine(X, y, family=Binomial(), client=None, topology="star")


def _gradient_record(d, groups):
    """A tree gradient round of ``groups`` tasks over as many partitions."""
    tasks = groups + _tree_tasks(groups)
    return RoundRecord("gradient", tasks, 8 * (d + 1) * groups, tasks * 8 * (d + 2), 1.0,
                       partitions=groups, split_every=8, groups=groups, seconds_compute=0.0,
                       seconds_waiting=0.0)


def _tree_tasks(groups):
    from daskglm.accounting.bytemodel import tree_tasks

    return tree_tasks(groups, 8)


def _price(record, cluster):
    return sum(round_seconds(record, cluster, here=False).values())


def test_cost_model_shows_when_each_topology_wins():
    # many workers, a large gradient, a slow network: the ring's chunks win on bytes per link
    slow_network = Cluster(workers=16, bandwidth=1e8, latency=1e-4, step_overhead=0.0,
                           worker_overhead=0.0, scheduler_overhead=0.0)
    big = _gradient_record(10_000_000, 16)
    seconds = {t: _price(as_topology(big, t), slow_network) for t in ("tree", "server", "ring")}
    assert seconds["ring"] < seconds["tree"] < seconds["server"]
    # a small gradient and a high latency: the tree's few levels win, the ring's 2 (W - 1)
    # steps lose
    far = Cluster(workers=16, bandwidth=1e9, latency=5e-3, step_overhead=0.0,
                  worker_overhead=0.0, scheduler_overhead=0.0)
    small = _gradient_record(100, 16)
    seconds = {t: _price(as_topology(small, t), far) for t in ("tree", "server", "ring")}
    assert seconds["server"] < seconds["ring"] and seconds["tree"] < seconds["ring"]
    # re-pricing keeps the result's size
    for topology in ("server", "ring"):
        again = as_topology(as_topology(big, topology), "tree")
        assert again.bytes_returned == big.bytes_returned and again.tasks == big.tasks
    assert math.isfinite(seconds["tree"])
