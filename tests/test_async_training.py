"""Asynchronous and decentralised training: parameter-server SGD (``solver="async"``,
fully asynchronous, stale-synchronous and synchronous), Hogwild inside its tasks, and
gossip (``solver="gossip"``), in this process and on a real LocalCluster of separate
worker processes, with a worker killed mid-fit.

Accuracy is the relative objective gap ``(f(w) - f*) / f*`` on the daskglm objective
(mean loss + ``alpha / 2 ||coef||^2``), ``f*`` at scikit-learn's solution of the same
objective (``LogisticRegression(C=1 / (n alpha))``, ``Ridge(alpha=n alpha)``, solved to
1e-10).  Stochastic methods stop by SGD's sampled rule, so the stated gaps are those of
SGD's own tests: :data:`GAP` in this process, :data:`CLUSTER_GAP` on a cluster (fewer,
larger steps, and with async, updates that race).
"""

import sys
import threading
import time
import traceback

import cloudpickle
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import linear_model as sk

import daskglm
from daskglm import testing
from daskglm.compute.gossip import metropolis_weights, neighbours_of
from daskglm.engine import make_engine
from daskglm.engine.parameter_holders import ParameterHolder
from daskglm.model.families import Binomial, Gaussian, Poisson
from daskglm.model.penalties import L1, L2
from daskglm.solvers import Problem, get_solver
from tests.conftest import kill_worker

cloudpickle.register_pickle_by_value(sys.modules[__name__])

ALPHA = 1e-3
#: The step rules of the tests, by family (decaying rates; the defaults are more cautious).
STEPS = {"binomial": {"learning_rate": "invscaling", "eta0": 0.5, "power_t": 0.25},
         "gaussian": {"learning_rate": "invscaling", "eta0": 0.5, "power_t": 0.5}}
GAP = 2e-3
CLUSTER_GAP = 1e-2


def make_problem_data(family, n=2000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    eta = X @ rng.normal(size=d) + 0.5
    if family == "gaussian":
        y = eta + rng.normal(size=n)
    else:
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    return X, y


def problem_of(family, d=5):
    return Problem(Binomial() if family == "binomial" else Gaussian(), L2(ALPHA), True, d)


def objective(problem, X, y, params):
    coef, intercept = problem.split(params)
    return problem.family.loss(y, X @ coef + intercept) / len(y) + problem.penalty.value(coef)


def reference(problem, X, y):
    """scikit-learn's solution of the same objective, and its value."""
    n = len(y)
    if isinstance(problem.family, Binomial):
        model = sk.LogisticRegression(C=1 / (n * ALPHA), tol=1e-10, max_iter=10_000).fit(X, y)
        coef, intercept = model.coef_.ravel(), model.intercept_[0]
    else:
        model = sk.Ridge(alpha=n * ALPHA, tol=1e-10).fit(X, y)
        coef, intercept = model.coef_, model.intercept_
    return objective(problem, X, y, np.append(coef, intercept))


def gap(problem, X, y, params):
    best = reference(problem, X, y)
    return (objective(problem, X, y, params) - best) / best


def fit(name, problem, X, y, client=None, n_partitions=4, max_iter=20, tol=1e-4, **options):
    with make_engine(X, y, family=problem.family, client=client,
                     n_partitions=n_partitions) as engine:
        solver = get_solver(name, problem, tol=tol, max_iter=max_iter,
                            options={"random_state": 0, **STEPS.get(problem.family.name, {}), **options})
        result = solver.solve(problem, engine, np.zeros(problem.n_params))
    return result, engine.ledger


# the holder's clocks ---------------------------------------------------------------------
def test_clocks_hold_a_task_at_the_staleness_bound():
    holder = ParameterHolder(np.zeros(2))
    holder.start_run(rows_target=100, staleness=1)
    fast, slow = holder.join(), holder.join()
    for _ in range(2):
        version, _, running, stop = holder.pull_for(fast)
        assert running == 2 and not stop
        assert holder.may_proceed(fast) == (True, False)
        holder.push_from(fast, np.ones(2), version, rows=10)
    assert holder.may_proceed(fast) == (False, False), "two ahead of the slowest, bound 1"
    with pytest.raises(TimeoutError, match="staleness bound"):
        holder.wait_turn(fast, timeout=0.05)
    version, _, _, _ = holder.pull_for(slow)
    holder.push_from(slow, np.ones(2), version, rows=10)
    assert holder.may_proceed(fast) == (True, False)
    holder.leave(slow)  # a task that left never holds another back
    holder.push_from(fast, np.ones(2), holder.pull_for(fast)[0], rows=10)
    assert holder.may_proceed(fast) == (True, False)
    stats = holder.stats()
    assert stats["clock_staleness"] == {0: 3, 1: 1}
    assert stats["staleness"] == {0: 4} and stats["pushes"] == 4
    progress = holder.progress()
    assert progress["rows"] == 40 and progress["version"] == 4 and progress["running"] == 1
    holder.push_from(fast, np.ones(2), 4, rows=60)
    assert holder.may_proceed(fast) == (True, True), "the run's rows are done: stop"
    np.testing.assert_array_equal(holder.pull()[1], [5.0, 5.0])


def test_a_lost_workers_slots_are_retired():
    holder = ParameterHolder(np.zeros(1))
    holder.start_run(10, staleness=0)
    a, b = holder.join("tcp://a"), holder.join("tcp://b")
    holder.push_from(a, np.ones(1), 0)
    assert holder.may_proceed(a) == (False, False)
    assert holder.retire_workers(["tcp://a"]) == [b]
    assert holder.may_proceed(a) == (True, False)


# bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("name, options, match", [
    ("async", {"staleness": -1}, "staleness"),
    ("async", {"staleness": 1.5}, "staleness"),
    ("async", {"push_every": 0}, "push_every"),
    ("async", {"fetch_every": "2"}, "fetch_every"),
    ("async", {"seconds": 0}, "seconds"),
    ("async", {"hogwild": 0}, "hogwild"),
    ("async", {"hogwild": 2, "learning_rate": "adagrad"}, "hogwild"),
    ("async", {"learning_rate": "fast"}, "learning_rate"),
    ("async", {"eta0": -1.0}, "eta0"),
    ("async", {"bogus": 1}, "Unknown option"),
    ("gossip", {"topology": "star"}, "topology"),
    ("gossip", {"local_steps": 0}, "local_steps"),
    ("gossip", {"degree": 1}, "degree"),
    ("gossip", {"batch_size": 0}, "batch_size"),
])
def test_bad_options_raise_value_error(name, options, match):
    with pytest.raises(ValueError, match=match):
        get_solver(name, problem_of("binomial"), tol=1e-4, max_iter=5, options=options)


def test_unsupported_problems_and_estimator_options_raise_value_error():
    X, y = make_problem_data("binomial", n=200)
    for name in ("async", "gossip"):
        with pytest.raises(ValueError, match="does not handle a non-smooth penalty"):
            get_solver(name, Problem(Binomial(), L1(0.1), True, 5), tol=1e-4, max_iter=5)
    poisson = Problem(Poisson(), L2(ALPHA), True, 5)
    with pytest.raises(ValueError, match="hogwild"):
        fit("async", poisson, X, np.round(y), hogwild=2)
    with pytest.raises(ValueError, match="sync_every"):
        daskglm.SGDClassifier(solver="async", sync_every=2).fit(X, y)
    with pytest.raises(ValueError, match="solver must be one of"):
        daskglm.SGDRegressor(solver="lbfgs").fit(X, y)
    with pytest.raises(ValueError, match="staleness"):
        daskglm.SGDClassifier(solver="async", solver_options={"staleness": -2}).fit(X, y)
    with pytest.raises(ValueError, match="partial_fit"):
        daskglm.SGDClassifier(solver="gossip").partial_fit(X, y, classes=[0, 1])
    X_copy, y_copy = X.copy(), y.copy()
    daskglm.SGDClassifier(solver="async", max_iter=2, tol=None, random_state=0).fit(X, y)
    np.testing.assert_array_equal(X, X_copy)  # user data never modified
    np.testing.assert_array_equal(y, y_copy)


# in this process -------------------------------------------------------------------------
# push_every is given: "auto" sizes pushes from timings, which makes the gap reached in 30
# epochs depend on the machine's load (in-process, staleness 0: 1 run in 25 missed GAP,
# against a median of a third of it with 16); the sizing has tests of its own.  The cap is
# 60 epochs: asynchronous SGD's stopping rule fires after 14 to 27 epochs here (24 fits,
# two at a time, staleness 0), and once in CI, under load, not within 30
@pytest.mark.parametrize("family", ["binomial", "gaussian"])
@pytest.mark.parametrize("name, options", [
    ("async", {"push_every": 16}),
    ("async", {"staleness": 0, "push_every": 16}),
    ("async", {"staleness": 2, "push_every": 2, "fetch_every": 2}),
    ("gossip", {"topology": "ring", "batch_size": 64}),
    ("gossip", {"topology": "random", "degree": 2, "local_steps": 4, "batch_size": 64}),
])
def test_every_method_reaches_the_gap_in_process(family, name, options):
    X, y = make_problem_data(family)
    problem = problem_of(family)
    result, ledger = fit(name, problem, X, y, max_iter=60, **options)
    assert gap(problem, X, y, result.params) <= GAP
    assert result.converged and result.message == "converged"
    if name == "async":
        bound = options.get("staleness")
        if bound is not None:
            assert max(ledger.clock_staleness) <= bound
        assert sum(ledger.clock_staleness.values()) == ledger.records[-2].tasks  # every push
        assert ledger.count("async_sgd") >= result.n_iter
    else:
        assert ledger.count("gossip") == ledger.count("gossip_exchange")
        assert result.history[-1]["final_spread"] < 0.05


def test_gossip_on_the_complete_graph_is_synchronous_sgd():
    X, y = make_problem_data("binomial", n=600)
    problem = problem_of("binomial")
    options = {"batch_size": 32, "learning_rate": "invscaling", "eta0": 0.1}
    gossip, _ = fit("gossip", problem, X, y, tol=None, max_iter=3, topology="complete",
                    **options)
    sgd, _ = fit("sgd", problem, X, y, tol=None, max_iter=3, **options)
    np.testing.assert_allclose(gossip.params, sgd.params, rtol=1e-10, atol=1e-12)
    again, _ = fit("gossip", problem, X, y, tol=None, max_iter=3, topology="complete",
                   **options)
    np.testing.assert_array_equal(again.params, gossip.params)  # deterministic


def test_graphs_and_mixing_weights():
    assert neighbours_of(5, "ring") == [(1, 4), (0, 2), (1, 3), (2, 4), (0, 3)]
    assert neighbours_of(3, "complete") == [(1, 2), (0, 2), (0, 1)]
    random = neighbours_of(12, "random", degree=4, seed=3)
    assert random == neighbours_of(12, "random", degree=4, seed=3)
    assert all(1 <= len(links) <= 4 for links in random)
    for links in (neighbours_of(7, "ring"), random):
        W = metropolis_weights(links)
        np.testing.assert_allclose(W.sum(axis=0), 1.0)
        np.testing.assert_allclose(W, W.T)
        assert np.sort(np.abs(np.linalg.eigvalsh(W)))[-2] < 1.0, "connected: it mixes"


def test_hogwild_inside_async_tasks_on_sparse_rows():
    rng = np.random.default_rng(1)
    X = sp.random(2000, 40, density=0.1, format="csr", random_state=rng)
    y = (rng.uniform(size=2000) < 1 / (1 + np.exp(-X @ rng.normal(size=40)))).astype(float)
    problem = Problem(Binomial(), L2(ALPHA), True, 40)
    result, ledger = fit("async", problem, X, y, max_iter=10, tol=None, hogwild=2,
                         batch_size=16, push_every=8, eta0=0.5, power_t=0.5)
    dense = X.toarray()
    assert gap(problem, dense, y, result.params) <= 5e-3
    sparse_pushes = fit("async", Problem(Binomial(), L2(0.0), True, 40), X, y, max_iter=2,
                        tol=None, batch_size=4)[1].records[-2]
    dense_bytes = 8 * 41
    assert sparse_pushes.bytes_sent < sparse_pushes.tasks * dense_bytes, "sparse pushes"


def test_hogwild_runs_local_sgds_steps_on_sparse_rows():
    rng = np.random.default_rng(2)
    X = sp.random(3000, 40, density=0.1, format="csr", random_state=rng)
    y = (rng.uniform(size=3000) < 1 / (1 + np.exp(-X @ rng.normal(size=40)))).astype(float)
    problem = Problem(Binomial(), L2(ALPHA), True, 40)
    options = {"sync_every": 8, "batch_size": 64, "eta0": 2.0, "power_t": 0.25}
    result, ledger = fit("sgd", problem, X, y, max_iter=15, tol=None, hogwild=2, **options)
    local, _ = fit("sgd", problem, X, y, max_iter=15, tol=None, **options)
    assert gap(problem, X.toarray(), y, result.params) <= 5e-3
    assert gap(problem, X.toarray(), y, local.params) <= 5e-3  # as local SGD does
    assert ledger.count("local_sgd") == 15 * -(-3000 // (64 * 8))
    clf = daskglm.SGDClassifier(loss="log_loss", alpha=ALPHA, sync_every=8, batch_size=64,
                                max_iter=3, tol=None, solver_options={"hogwild": 2},
                                random_state=0).fit(X, y)
    assert clf.converged_ and clf.n_iter_ == 3
    with pytest.raises(ValueError, match="hogwild"):  # synchronous SGD has no local steps
        get_solver("sgd", problem, tol=1e-4, max_iter=5,
                   options={"hogwild": 2, "sync_every": None})
    get_solver("sgd", problem, tol=1e-4, max_iter=5, options={"hogwild": 2})  # "auto" sizes them
    with pytest.raises(ValueError, match="hogwild"):
        fit("sgd", Problem(Poisson(), L2(ALPHA), True, 40), X, np.round(y), hogwild=2,
            sync_every=4)


def test_estimators_take_the_new_solvers():
    X, y = make_problem_data("binomial")
    labels = np.where(y > 0, "yes", "no")
    # 60 epochs at most: the stopping rule of asynchronous SGD fires later under load
    clf = daskglm.SGDClassifier(loss="log_loss", solver="async", alpha=ALPHA, batch_size=32,
                                max_iter=60, tol=1e-4, random_state=0,
                                **STEPS["binomial"]).fit(X, labels)
    assert clf.solver_ == "async" and clf.converged_ and not hasattr(clf, "t_")
    assert set(clf.predict(X[:20])) <= {"yes", "no"}
    assert gap(problem_of("binomial"), X, y, np.append(clf.coef_, clf.intercept_)) <= GAP
    Xg, yg = make_problem_data("gaussian")
    glm = daskglm.GLM(family="gaussian", alpha=ALPHA, solver="gossip", max_iter=30,
                      solver_options={"random_state": 0, "batch_size": 64,
                                      **STEPS["gaussian"]}).fit(
                          da.from_array(Xg, chunks=(500, 5)), da.from_array(yg, chunks=500))
    assert glm.solver_ == "gossip" and glm.comm_.count("gossip_exchange") > 0
    assert gap(problem_of("gaussian"), Xg, yg, np.append(glm.coef_, glm.intercept_)) <= GAP


# on a cluster of separate processes ------------------------------------------------------
CLUSTER_ASYNC = {"n_partitions": 2, "batch_size": 32, "push_every": 4, "fetch_every": 4,
                 "max_iter": 6, "tol": None}


@pytest.mark.parametrize("family, staleness", [
    ("binomial", None), ("gaussian", 1),
    pytest.param("binomial", 0, marks=pytest.mark.slow),
    pytest.param("gaussian", None, marks=pytest.mark.slow),
    pytest.param("binomial", 2, marks=pytest.mark.slow),
])
def test_async_on_a_cluster_keeps_its_staleness_bound(family, staleness, client):
    X, y = make_problem_data(family)
    problem = problem_of(family)
    result, ledger = fit("async", problem, X, y, client=client, staleness=staleness,
                         **CLUSTER_ASYNC)
    assert gap(problem, X, y, result.params) <= CLUSTER_GAP
    push, pull = ledger.records[-2:]
    assert (push.kind, pull.kind) == ("push", "pull")
    assert sum(push.clock_staleness.values()) == push.tasks == sum(push.staleness.values())
    if staleness is not None:
        assert max(ledger.clock_staleness) <= staleness
    assert push.bytes_sent == push.tasks * 8 * (X.shape[1] + 1)
    assert pull.bytes_returned == pull.tasks * 8 * (X.shape[1] + 1)
    assert ledger.count("async_sgd") >= result.n_iter


@pytest.mark.parametrize("family", ["gaussian", pytest.param("binomial", marks=pytest.mark.slow)])
def test_gossip_on_a_cluster_matches_in_process_and_agrees(family, client):
    X, y = make_problem_data(family)
    problem = problem_of(family)
    options = {"batch_size": 256 if family == "gaussian" else 64, "local_steps": 4,
               "max_iter": 4 if family == "gaussian" else 10, "tol": None}
    on_cluster, ledger = fit("gossip", problem, X, y, client=client, **options)
    in_process, _ = fit("gossip", problem, X, y, **options)
    np.testing.assert_allclose(on_cluster.params, in_process.params, rtol=1e-10, atol=1e-12)
    assert gap(problem, X, y, on_cluster.params) <= CLUSTER_GAP
    assert on_cluster.history[-1]["final_spread"] < 0.05, "the models agree at the end"
    assert all(np.isfinite(entry["spread"]) for entry in on_cluster.history)
    exchange = [r for r in ledger.records if r.kind == "gossip_exchange"]
    assert exchange and all(r.tasks == 4 for r in exchange)
    assert all(r.bytes_measured is not None for r in exchange)


def _state_of(part, state):
    return 0.0, float(part[0].shape[0])


def _mixed(own, neighbour_states, item):
    return {"own": own, "neighbours": neighbour_states}


def test_a_state_lost_during_the_exchange_restarts_and_the_exchange_runs_again(
        client, monkeypatch):
    """The exchange's own recovery, made to happen: the first attempt finds one state's
    future cancelled (as when its worker dies mid-exchange) and fails; the second runs
    with that state as None and lists it in ``state_reset``."""
    from daskglm.engine import neighbours as module
    from daskglm.engine.neighbours import exchange_with_neighbours

    X, y = make_problem_data("gaussian")
    attempts = []
    real = module._exchange_on_cluster

    def losing_one_state(engine, states, lost, *args):
        attempts.append(set(lost))
        if len(attempts) == 1:
            states[1].cancel()
        return real(engine, states, lost, *args)

    monkeypatch.setattr(module, "_exchange_on_cluster", losing_one_state)
    with make_engine(X, y, family=Gaussian(), client=client, n_partitions=4) as engine:
        engine.map_stateful(_state_of, "model", kind="gossip")
        links = [[(i - 1) % 4, (i + 1) % 4] for i in range(4)]
        exchange_with_neighbours(engine, "model", _mixed, links, [None] * 4,
                                 kind="gossip_exchange")
        mixed = engine.fetch_state("model")
        record = engine.ledger.records[-2]
    assert attempts == [set(), {1}], "one failed attempt, then one without the lost state"
    assert record.kind == "gossip_exchange" and record.state_reset == (1,)
    assert mixed[1]["own"] is None
    assert mixed[0]["neighbours"][1] is None and mixed[2]["neighbours"][0] is None
    kept = [mixed[3]["own"], *mixed[3]["neighbours"]]  # partition 3 and its neighbours 2, 0
    assert all(isinstance(value, float) and value > 0 for value in kept)


def _holder_address(client):
    def where(dask_scheduler):
        return [ws.address for key, ts in dask_scheduler.tasks.items()
                if str(key).startswith("daskglm-holder") for ws in (ts.who_has or ())]

    return client.run_on_scheduler(where)


def test_a_worker_killed_mid_fit_does_not_stop_async(own_client):
    client = own_client
    X, y = make_problem_data("binomial")
    problem = problem_of("binomial")
    outcome = {}

    def run():
        outcome["result"], outcome["ledger"] = fit(
            "async", problem, X, y, client=client, staleness=1,
            **{**CLUSTER_ASYNC, "n_partitions": 4, "max_iter": 8})

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while not _holder_address(client) and time.monotonic() < deadline:
        time.sleep(0.05)
    holder = _holder_address(client)[0]
    victim = next(w for w in client.nthreads() if w != holder)
    # mid-fit: kill the victim while it runs one of the fit's tasks, whatever the timing
    while not client.processing([victim]).get(victim) and time.monotonic() < deadline \
            and thread.is_alive():
        time.sleep(0.01)
    kill_worker(client, victim)
    thread.join(120)
    assert not thread.is_alive() and "result" in outcome
    ledger = outcome["ledger"]
    assert gap(problem, X, y, outcome["result"].params) <= CLUSTER_GAP
    assert any(r.dropped for r in ledger.records if r.kind == "async_sgd"), "tasks were lost"
    assert max(ledger.clock_staleness) <= 1


# accounting ------------------------------------------------------------------------------
def test_ledger_byte_model_cost_model_and_compare_include_the_new_methods():
    from daskglm.accounting.bytemodel import payload_model
    from daskglm.accounting.costmodel import Cluster, predict

    X, y = make_problem_data("binomial", n=1200)
    problem = problem_of("binomial")
    d = problem.n_params
    _, ledger = fit("async", problem, X, y, max_iter=2, tol=None)
    push, pull = ledger.records[-2:]
    assert push.bytes_sent == payload_model("push", n_params=d, partitions=4,
                                            calls=push.tasks)[0]
    assert pull.bytes_returned == payload_model("pull", n_params=d, partitions=4,
                                                calls=pull.tasks)[1]
    _, ledger = fit("gossip", problem, X, y, max_iter=1, tol=None, topology="ring")
    exchange = next(r for r in ledger.records if r.kind == "gossip_exchange")
    assert exchange.bytes_sent == payload_model("gossip_exchange", n_params=d, partitions=4)[0]
    costs = predict(ledger, Cluster(8, latency=1e-3, bandwidth=1e9), None)
    assert costs["total"] > 0 and np.isfinite(costs["total"])
    options = {"batch_size": 32, **STEPS["binomial"]}
    result = daskglm.compare(X, y, methods=["lbfgs", "async", "gossip"], alpha=ALPHA,
                             tol=1e-6, test_size=0,
                             solver_options={"async": options, "gossip": options})
    assert [row.method for row in result.rows] == ["lbfgs", "async", "gossip"]
    assert all(row.ok and row.objective_gap < GAP for row in result.rows), result


@pytest.mark.slow
def test_losing_the_holders_worker_too_often_is_a_clear_error(own_client, monkeypatch):
    """With no rebuild allowed, a holder lost with its worker stops the fit with
    HolderLostError (rebuilds: ``tests/test_async_worker_loss.py``)."""
    from daskglm.engine import parameter_server
    from daskglm.engine.parameter_holders import HolderLostError

    monkeypatch.setattr(parameter_server, "MAX_HOLDER_REBUILDS", 0)
    client = own_client
    X, y = make_problem_data("binomial", n=20_000)
    problem = problem_of("binomial")
    outcome = {}

    def run():
        try:
            fit("async", problem, X, y, client=client, staleness=1,
                **{**CLUSTER_ASYNC, "max_iter": 50})
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while not _holder_address(client) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    kill_worker(client, _holder_address(client)[0])
    thread.join(120)
    assert not thread.is_alive()
    assert isinstance(outcome.get("error"), HolderLostError)


@pytest.mark.slow
def test_a_worker_killed_mid_fit_does_not_stop_gossip(own_client):
    client = own_client
    X, y = make_problem_data("gaussian")
    problem = problem_of("gaussian")
    outcome = {}

    def run():
        try:
            outcome["result"], outcome["ledger"] = fit(
                "gossip", problem, X, y, client=client, batch_size=64, local_steps=2,
                max_iter=8, tol=None)
        except BaseException:
            outcome["error"] = traceback.format_exc()

    # every kernel task sleeps a little, so that the fit is still running at the kill
    for worker in client.nthreads():
        client.run(testing._set_delay, worker, 0.05, workers=[worker])
    thread = threading.Thread(target=run)
    thread.start()
    victim = sorted(client.nthreads())[-1]
    deadline = time.monotonic() + 60
    while not any(key.startswith("daskglm_gossip") for key in client.who_has()) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    held = [key for key, holders in client.who_has().items() if victim in holders]
    assert thread.is_alive(), "the fit ended before the kill"
    assert held, "the victim holds part of the fit"
    kill_worker(client, victim)
    thread.join(180)
    assert not thread.is_alive() and "error" not in outcome, outcome.get("error")
    # the victim's states were either restarted (``state_reset``) or recomputed by Dask
    # from their lineage; either way the fit goes on to the optimum
    assert gap(problem, X, y, outcome["result"].params) <= CLUSTER_GAP
