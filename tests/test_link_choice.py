"""``solver="auto"`` prices messages on the cluster's network: measured once per client,
or fixed by the configuration (``daskglm.link``), and recorded in ``solver_choice_``."""

import dask
import numpy as np
import pytest

import daskglm
from daskglm.accounting.choice import choose_method, predict_methods
from daskglm.accounting.links import IN_PROCESS, Link, link_from_config
from daskglm.engine.link_probe import link_for
from daskglm.model.families import Binomial
from daskglm.model.penalties import L2
from daskglm.solvers import Problem

FAST = Link(latency=5e-5, bandwidth=1.25e9, nodes=8, source="configuration")
SLOW = Link(latency=5e-3, bandwidth=1.25e7, nodes=8, source="configuration")


def _problem(d):
    return Problem(Binomial(), L2(1e-6), True, d)


def test_messages_cost_what_the_network_says():
    """A gradient round's messages: two latencies per level of calls, and on the driver's
    card the parameters out and a gradient back from each of the 8 processes."""
    problem, n = _problem(1000), 10**5
    fast, slow = (dict((c.method, c) for c in predict_methods(problem, n, workers=8, link=link))
                  for link in (FAST, SLOW))
    per_round = {name: (slow[name].seconds - fast[name].seconds) / slow[name].rounds
                 for name in ("lbfgs", "proximal")}
    p = problem.n_params
    expected = (2 * (SLOW.latency - FAST.latency)
                + 8 * 16 * p * (1 / SLOW.bandwidth - 1 / FAST.bandwidth))
    for seconds in per_round.values():
        assert seconds == pytest.approx(expected, rel=1e-9)


def test_a_slow_network_turns_the_choice_from_newton_to_lbfgs():
    """Newton's Hessian (8 p^2 bytes from every process) costs little on a fast network
    and dominates on a slow one, where L-BFGS's gradients win."""
    problem, n = _problem(100), 10**4
    able = {"newton", "lbfgs", "proximal"}
    assert choose_method(problem, n, able, workers=8, link=FAST).method == "newton"
    assert choose_method(problem, n, able, workers=8, link=SLOW).method == "lbfgs"


def test_the_configuration_fixes_the_figures():
    assert link_from_config(None, 4) is None
    fixed = link_from_config({"latency": 1e-3, "bandwidth": 1e8}, 4)
    assert fixed == Link(1e-3, 1e8, 4, "configuration")
    with pytest.raises(ValueError, match="bandwidth"):
        link_from_config({"bandwidth": 0}, 4)
    assert link_for(None) is IN_PROCESS


def test_a_fit_records_its_choice_in_process():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5))
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(int)
    model = daskglm.LogisticRegression().fit(X, y)
    choice = model.solver_choice_
    assert choice["solver"] == model.solver_
    assert choice["link"] == IN_PROCESS.as_dict()
    assert choice["predicted_seconds"][model.solver_] == min(choice["predicted_seconds"].values())
    assert choice["measured_seconds"] > 0
    value, reason = model.comm_.choices["auto"]  # printed under the ledger's table
    assert value == model.solver_ and reason.startswith("predicted fastest in this process")
    assert not hasattr(daskglm.LogisticRegression(solver="lbfgs").fit(X, y), "solver_choice_")


def test_on_a_cluster_the_link_is_measured_once_or_fixed(client):
    import dask.array as da

    rng = np.random.default_rng(1)
    X = rng.normal(size=(4000, 6))
    y = (X[:, 1] + rng.normal(size=4000) > 0).astype(int)
    Xd, yd = da.from_array(X, chunks=1000), da.from_array(y, chunks=1000)
    measured = daskglm.LogisticRegression().fit(Xd, yd).solver_choice_["link"]
    assert measured["source"] == "measured" and measured["nodes"] == 2
    assert 0 < measured["latency"] < 0.1 and measured["bandwidth"] > 1e7
    assert link_for(client).as_dict() == measured  # cached for the client
    with dask.config.set({"daskglm.link": {"latency": 5e-3, "bandwidth": 1.25e7}}):
        fixed = daskglm.LogisticRegression().fit(Xd, yd).solver_choice_["link"]
    assert fixed == {"latency": 5e-3, "bandwidth": 1.25e7, "nodes": 2,
                     "source": "configuration"}


def test_lbfgs_on_column_shards_pays_for_its_commands_and_setup():
    # each iteration on column shards adds three direct calls to every shard, and the fit
    # its setup rounds: on a network of high latency they are most of its price
    from daskglm.accounting.choice import (
        SHARD_COMMANDS,
        SHARDED_SETUP_ROUNDS,
        sharded_lbfgs_seconds,
    )

    problem = _problem(2**20)
    fast, slow = Link(1e-4, 1.25e9, 8), Link(5e-3, 1.25e9, 8)
    costs = {link: {c.method: c for c in predict_methods(problem, 10**6, link=link)}
             for link in (fast, slow)}
    lbfgs = costs[fast]["lbfgs"]
    # an evaluation round and a finish call per evaluation, one evaluation more than
    # iterations (the starting point's), two more calls an iteration
    iterations = (lbfgs.rounds - SHARDED_SETUP_ROUNDS - 2) // (1 + SHARD_COMMANDS)
    assert lbfgs.options == {"sharded": True}
    assert lbfgs.rounds == 2 * (iterations + 1) + (SHARD_COMMANDS - 1) * iterations \
        + SHARDED_SETUP_ROUNDS
    assert lbfgs.seconds == pytest.approx(sharded_lbfgs_seconds(10**6, problem.n_params, 1,
                                                                iterations, link=fast))
    # 4.9 ms more latency: per evaluation its message steps and finish's, per iteration
    # two more commands' (each there and back), and the setup rounds' calls
    extra = costs[slow]["lbfgs"].seconds - lbfgs.seconds
    assert extra >= 2 * 4.9e-3 * (lbfgs.rounds - 1)


def test_the_partials_the_driver_gathers_enter_the_price_of_a_round():
    """A round of the whole vector costs the driver's card ``8 p`` bytes a process out
    and a gradient a partial back: three partials more than the two processes' add
    exactly ``3 * 8 p / B`` seconds a gradient round (and their row samples) on a
    network, nothing in this process."""
    from daskglm.accounting.choice import driver_calls, gradient_round_seconds

    p = 1000
    slow = Link(latency=5e-3, bandwidth=1.25e7, nodes=2, source="configuration")
    assert driver_calls(slow) == 2 and driver_calls(IN_PROCESS) == 0
    one_each = gradient_round_seconds(10**5, p, 2, link=slow)
    problem = _problem(p - 1)
    priced = {gathered: {c.method: c for c in predict_methods(problem, 10**5, workers=2,
                                                              link=slow, gathered=gathered)}
              for gathered in (None, 2, 5)}
    assert priced[None]["lbfgs"].seconds == priced[2]["lbfgs"].seconds
    more = priced[5]["proximal"].seconds - priced[2]["proximal"].seconds
    assert more == pytest.approx(priced[2]["proximal"].rounds * 3 * 8 * p / slow.bandwidth)
    assert priced[5]["lbfgs"].seconds > priced[2]["lbfgs"].seconds
    assert one_each == pytest.approx(
        gradient_round_seconds(10**5, p, 2, link=IN_PROCESS) - 8 * p * 2 / 1e9
        + 2 * slow.latency + (2 * 8 * p + 2 * 8 * p) / slow.bandwidth, rel=0.05)
    in_process = {c.method: c.seconds for c in predict_methods(problem, 10**5, gathered=5)}
    assert in_process == {c.method: c.seconds for c in predict_methods(problem, 10**5)}


def test_auto_prices_the_partials_of_the_partitions_placement(client):
    """Eight partitions placed on two worker processes by turns, so that no two of a
    process's partitions are neighbours in the reduction tree: the validation round's
    driver gathers eight partial sums, ``solver="auto"`` chooses again with them (its
    reason in the ledger) and the predictions it records price them."""
    import dask.array as da

    rng = np.random.default_rng(2)
    d = 500  # a partial of 4 kB: six more a round cost 2 ms on this network
    X = rng.normal(size=(8000, d))
    y = (X[:, 0] + rng.normal(size=8000) > 0).astype(float)
    workers = sorted(client.scheduler_info()["workers"])
    blocks = [(client.scatter(X[i * 1000:(i + 1) * 1000], workers=[workers[i % 2]]),
               client.scatter(y[i * 1000:(i + 1) * 1000], workers=[workers[i % 2]]))
              for i in range(8)]
    Xd = da.concatenate([da.from_delayed(x, shape=(1000, d), dtype=float) for x, _ in blocks])
    yd = da.concatenate([da.from_delayed(t, shape=(1000,), dtype=float) for _, t in blocks])
    with dask.config.set({"daskglm.link": {"latency": 5e-3, "bandwidth": 1.25e7}}):
        model = daskglm.LogisticRegression().fit(Xd, yd)
    validation = next(r for r in model.comm_.records if r.kind.startswith("validate"))
    assert validation.gathered == 8
    chosen, reason = model.comm_.choices["solver"]
    assert chosen == model.solver_ and "gathers 8 partial sums" in reason
    link = Link(5e-3, 1.25e7, 2, "configuration")
    recorded = model.solver_choice_["predicted_seconds"]
    for gathered, close in ((8, True), (None, False)):
        priced = {c.method: c.seconds for c in predict_methods(
            _problem(d), 8000, workers=2, link=link, data_bytes=X.nbytes, gathered=gathered)}
        assert (recorded["lbfgs"] == pytest.approx(priced["lbfgs"], rel=1e-3)) == close
