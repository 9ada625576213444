"""Direct rounds: stateless rounds sent to per-worker partition holders, past the scheduler.

Every test runs on a real LocalCluster of worker processes (two; three for teams of
holders).  A direct round must give the task
round's result to the last bit, be measured (bytes as sent, compute times), raise a
kernel's error as a task would, hold the workers' partitions without copying them, and
step aside (the round runs as tasks) when partitions change or a worker is lost.
"""

import threading
import time

import dask
import numpy as np
import pytest

from daskglm.accounting.bytemodel import CALL_BYTES
from daskglm.compute.kernels import loss_grad
from daskglm.engine import make_engine
from daskglm.engine.direct import DirectRoundFailed, DirectRounds
from daskglm.engine.partition_holders import PartitionHolder
from daskglm.model.families import Binomial, Gaussian
from daskglm.testing import slow_worker
from tests.conftest import kill_worker, make_data


def gradient(part, params):
    return loss_grad(part, params, Binomial(), True)


def rows(part):
    return part[0].shape[0]


def scaled_column_sums(part, scale):
    return scale * part[0].sum(axis=0)


def fails_on_short_partitions(part, limit):
    if part[0].shape[0] < limit:
        raise ValueError(f"only {part[0].shape[0]} rows")
    return part[0].shape[0]


def rows_ignoring(part, blob):
    return part[0].shape[0]


def fails_on_worker(part, address):
    from distributed import get_worker

    if get_worker().address == address:
        raise ValueError(f"fails on {address}")
    return 0.0


def _same_stats(a, b):
    assert a.weight == b.weight and a.loss == b.loss
    np.testing.assert_array_equal(a.grad, b.grad)


def _rounds(engine, params, each):
    return (engine.reduce(gradient, params, kind="gradient"),
            engine.map(rows, kind="rows"),
            engine.map_each(scaled_column_sums, each, kind="scaled"),
            engine.reduce_each(scaled_column_sums, each, kind="scaled_sum"))


def _gradient_while_killing(engine, client, victim, params):
    """A gradient round during which ``victim`` is killed, one second into its (slowed)
    work."""
    with slow_worker(client, victim, 3.0):
        killer = threading.Timer(1.0, kill_worker, (client, victim))
        killer.start()
        try:
            return engine.reduce(gradient, params, kind="gradient")
        finally:
            killer.join()


def _routes(engine):
    return [record.route for record in engine.ledger.records]


@pytest.fixture
def data():
    return make_data("binomial", n=3000, d=5, weights=True)


def test_direct_rounds_give_the_task_rounds_results_to_the_bit(data, client):
    """reduce, map, map_each and reduce_each: the same results on holders as on tasks
    (exact equality), every round after the validation round direct, and measured."""
    X, y, w = data
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    each = [float(i + 1) for i in range(7)]
    with dask.config.set({"daskglm.direct-rounds": False}):
        with make_engine(X, y, w, family=Binomial(), n_partitions=7) as engine:
            expected = _rounds(engine, params, each)
            assert set(_routes(engine)) == {"tasks"}
    with make_engine(X, y, w, family=Binomial(), n_partitions=7) as engine:
        got = _rounds(engine, params, each)
        got_again = _rounds(engine, params, each)
        # the holders are made while the validation round runs, used from the next
        assert _routes(engine) == ["tasks"] + ["direct"] * 8
        assert [r.holders for r in engine.ledger.records] == [2] + [0] * 8
        records = engine.ledger.records[1:]
    for result in (got, got_again):
        _same_stats(result[0], expected[0])
        assert result[1] == expected[1]
        for a, b in zip(result[2], expected[2]):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(result[3], expected[3])
    for record in records:
        assert record.bytes_dispatched == 0  # nothing went through the scheduler
        assert record.transfers is None  # no data requests: one call per worker
        assert record.bytes_submitted > 0 and record.bytes_transferred > 0
        assert record.bytes_measured == record.bytes_submitted + record.bytes_transferred
        assert record.seconds_compute > 0 and record.seconds_span > 0
    # a map round's answers carry every partition's result
    maps = [r for r in records if r.kind == "rows"]
    assert all(r.bytes_transferred > 7 * 8 for r in maps)
    assert "direct rounds" in engine.ledger.measurement


def test_the_config_key_keeps_every_round_on_tasks(data, client):
    X, y, w = data
    with dask.config.set({"daskglm.direct-rounds": False}):
        with make_engine(X, y, w, family=Binomial(), n_partitions=4) as engine:
            for _ in range(3):
                engine.map(rows, kind="rows")
            assert engine._direct is None
            assert set(_routes(engine)) == {"tasks"}


def test_a_kernel_error_is_raised_as_is_and_direct_rounds_go_on(data, client):
    X, y, w = data
    with make_engine(X, y, w, family=Binomial(), n_partitions=4) as engine:
        engine.map(rows, kind="rows")
        with pytest.raises(ValueError, match="only 750 rows"):
            engine.map(fails_on_short_partitions, 751, kind="check")
        assert engine.map(fails_on_short_partitions, 750, kind="check") == [750] * 4
        assert _routes(engine)[-1] == "direct"


def _holders_on(dask_worker, keys):
    """For each PartitionHolder on this worker: whether each partition it holds is the
    very object in the worker's memory."""
    found = []
    for actor in dask_worker.state.actors.values():
        if isinstance(actor, PartitionHolder):
            found.append([actor.parts[i] is dask_worker.data[keys[i]] for i in actor.parts])
    return found


def test_holders_keep_references_to_the_partitions_and_are_released(data, client):
    X, y, w = data
    with make_engine(X, y, w, family=Binomial(), n_partitions=6) as engine:
        engine.map(rows, kind="rows")
        assert _routes(engine)[-1] == "direct"
        keys = [part.key for part in engine.parts]
        held = client.run(_holders_on, keys=keys)
        assert sorted(len(found) for found in held.values()) == [1, 1]  # one per worker
        assert sorted(len(parts) for found in held.values() for parts in found) == [3, 3]
        assert all(all(parts) for found in held.values() for parts in found)
    deadline = time.monotonic() + 10
    while any(client.run(_holders_on, keys=keys).values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(client.run(_holders_on, keys=keys).values())


def test_a_worker_with_two_threads_runs_its_groups_in_one_call(data):
    from distributed import Client, LocalCluster

    X, y, w = data
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as own:
        with make_engine(X, y, w, family=Binomial(), client=own, n_partitions=4) as engine:
            first = engine.reduce(gradient, params, kind="gradient")
            second = engine.reduce(gradient, params, kind="gradient")
            record = engine.ledger.records[-1]
    assert (record.route, record.groups) == ("direct", 2)
    # one call: the framing of one call, where two task rounds' groups would send two
    assert record.bytes_overhead == CALL_BYTES
    _same_stats(first, second)


def test_a_transformation_drops_the_holders_and_new_ones_are_made(data, client):
    X, y, w = data
    labels = np.where(y > 0, 5.0, 3.0)  # collected, then encoded as 0/1 where they live
    with make_engine(X, labels, w, family=Gaussian(), n_partitions=4, labels=True) as engine:
        engine.map(rows, kind="rows")
        old = engine._direct
        assert old is not None
        engine.relabel(5.0)
        assert engine._direct is None and old.futures == []
        params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
        got = [engine.reduce(gradient, params, kind="gradient") for _ in range(2)]
        assert _routes(engine)[-2:] == ["tasks", "direct"]
    with make_engine(X, y, w, family=Binomial(), client=None, n_partitions=4) as local:
        expected = local.reduce(gradient, params, kind="gradient")
    for result in got:
        _same_stats(result, expected)


def test_a_lost_worker_ends_the_direct_round_and_it_runs_as_tasks(data, own_client):
    """The holder on a killed worker is lost: that round runs as tasks (its lost
    partitions scattered again from the driver), with the same result to the last bit;
    holders are made again for the rebuilt partitions."""
    client = own_client
    X, y, w = data
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    with make_engine(X, y, w, family=Binomial(), client=client, n_partitions=4) as engine:
        before = [engine.reduce(gradient, params, kind="gradient") for _ in range(2)]
        assert _routes(engine)[-2:] == ["direct", "direct"]
        kill_worker(client, sorted(client.nthreads())[0])
        after = [engine.reduce(gradient, params, kind="gradient") for _ in range(2)]
        routes = _routes(engine)
    assert routes[-2:] == ["tasks", "direct"]
    for result in before + after:
        _same_stats(result, before[0])


def test_a_worker_killed_during_a_direct_call_is_survived(data, own_client):
    """The victim dies while its holder computes (slowed): the call fails, and the round
    runs again as tasks with the same result."""
    client = own_client
    X, y, w = data
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    victim = sorted(client.nthreads())[0]
    with make_engine(X, y, w, family=Binomial(), client=client, n_partitions=4) as engine:
        before = engine.reduce(gradient, params, kind="gradient")
        assert _routes(engine)[-1] == "direct"
        after = _gradient_while_killing(engine, client, victim, params)
        record = engine.ledger.records[-1]
    assert record.route == "tasks"
    _same_stats(after, before)


def test_direct_rounds_through_the_schedulers_proxy(data, cluster):
    """A client that cannot reach the workers (``direct_to_workers=False``) calls the
    holders through the scheduler: the same results."""
    from distributed import Client

    X, y, w = data
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    with Client(cluster, direct_to_workers=False) as proxied:
        with make_engine(X, y, w, family=Binomial(), client=proxied, n_partitions=4) as engine:
            got = [engine.reduce(gradient, params, kind="gradient") for _ in range(2)]
            assert not engine._direct._reaches_workers()
            assert _routes(engine) == ["tasks", "direct", "direct"]
    for result in got[1:]:
        _same_stats(result, got[0])


@pytest.fixture(scope="module")
def three_workers():
    """A LocalCluster of 3 single-threaded worker processes."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None,
                      worker_dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


def test_teams_of_holders_beyond_split_every_workers(data, three_workers):
    """3 workers, ``split_every=2``: the driver calls two teams' first holders, one of
    which calls the third holder for it.  The same bits as task rounds for the four verbs,
    every worker's compute timed, the relayed calls and answers counted, and a kernel's
    error on the relayed holder raised as it is."""
    client = three_workers
    X, y, w = data
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    each = [float(i + 1) for i in range(9)]
    options = dict(family=Binomial(), client=client, n_partitions=9, split_every=2)
    with dask.config.set({"daskglm.direct-rounds": False}):
        with make_engine(X, y, w, **options) as engine:
            expected = _rounds(engine, params, each)
    with make_engine(X, y, w, **options) as engine:
        got = _rounds(engine, params, each)
        assert _routes(engine) == ["tasks"] + ["direct"] * 4
        assert engine.ledger.records[0].holders == 3
        assert [len(team) for team in engine._direct.teams] == [2, 1]
        records = engine.ledger.records[1:]
        relayed = engine._direct.workers[1]  # called by the first team's first holder
        with pytest.raises(ValueError, match=f"fails on {relayed}"):
            engine.reduce(fails_on_worker, relayed, kind="fails")
        again = engine.reduce(gradient, params, kind="gradient")
        assert _routes(engine)[-2:] == ["direct", "direct"]
        _, measurement = engine._direct.run(gradient, (params,), None, True)
        assert {thread[0] for _, thread, _, _ in measurement.spans} == set(client.nthreads())
        # a 100 kB argument: the driver sends it once per team (2), the team's first
        # holder once more to the holder it relays to, between workers
        blob = np.zeros(12_500)
        assert engine.reduce(rows_ignoring, blob, kind="blob") == X.shape[0]
        heavy = engine.ledger.records[-1]
        assert heavy.route == "direct" and 2 * blob.nbytes < heavy.bytes_submitted < 3 * blob.nbytes
        assert blob.nbytes < heavy.bytes_transferred < 2 * blob.nbytes
    for result in (got[0], again):
        _same_stats(result, expected[0])
    assert got[1] == expected[1]
    for a, b in zip(got[2], expected[2]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got[3], expected[3])
    for record in records:
        assert record.seconds_compute > 0


def test_a_relayed_holders_lost_worker_ends_the_direct_round(data):
    """The worker of a holder its team's first holder calls is killed while it computes
    (slowed): the relayed call fails, so does the team's, and the round runs as tasks
    with the same result."""
    from distributed import Client, LocalCluster

    X, y, w = data
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None,
                      worker_dashboard_address=None) as cluster, Client(cluster) as client:
        with make_engine(X, y, w, family=Binomial(), client=client, n_partitions=9,
                         split_every=2) as engine:
            before = [engine.reduce(gradient, params, kind="gradient") for _ in range(2)]
            assert _routes(engine)[-1] == "direct"
            victim = engine._direct.workers[1]
            after = _gradient_while_killing(engine, client, victim, params)
            assert _routes(engine)[-1] == "tasks"
    for result in before[1:] + [after]:
        _same_stats(result, before[0])


def test_no_more_holders_than_split_every_squared(data, client):
    """With more workers than ``split_every ** 2``, teams of ``split_every`` would leave
    the driver more answers to sum than a task round's tree leaves it: no holder is made."""
    X, y, w = data
    with make_engine(X, y, w, family=Binomial(), n_partitions=4) as engine:
        with pytest.raises(DirectRoundFailed, match="2 workers: more than 1 holders"):
            DirectRounds(client, engine.parts, engine.groups, lambda n: [None] * n,
                         fan_in=1)


@pytest.mark.parametrize("solver", ["lbfgs", "newton", "admm"])
def test_a_fit_gives_the_same_bits_with_and_without_direct_rounds(client, solver):
    """An estimator's fit on a cluster: the same coefficients to the last bit, its rounds
    after the validation round direct."""
    import daskglm

    X, y, _ = make_data("binomial", n=4000)
    fits = {}
    for direct in (False, True):
        with dask.config.set({"daskglm.direct-rounds": direct}):
            fits[direct] = daskglm.LogisticRegression(solver=solver, tol=1e-8,
                                                      max_iter=20).fit(X, y)
    np.testing.assert_array_equal(fits[True].coef_, fits[False].coef_)
    np.testing.assert_array_equal(fits[True].intercept_, fits[False].intercept_)
    assert {r.route for r in fits[False].comm_.records} == {"tasks"}
    assert [r.route for r in fits[True].comm_.records][1:] == \
        ["direct"] * (fits[True].comm_.rounds - 1)
