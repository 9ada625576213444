"""The engine verbs beyond one-shot rounds: partition state that stays on the workers, and
deadline rounds that sum the partitions that arrive in time.  Each on the in-process
engine and on a real LocalCluster of separate worker processes."""

import sys
import threading
import time

import cloudpickle
import dask.array as da
import numpy as np
import pytest
from distributed import wait

from daskglm.compute.kernels import Stats, loss_grad
from daskglm.compute.tree import partial_tree_sum, tree_sum
from daskglm.engine import DeadlineRound, DistributedEngine, LocalEngine, StateRound, make_engine
from daskglm.engine import direct as engine_direct
from daskglm.engine import partitions as partitions_module
from daskglm.engine import tasks as engine_tasks
from daskglm.model.families import Binomial
from daskglm.testing import slow_worker
from tests.conftest import SlowOn, keys_held, kill_worker, make_data, released

# the kernels below run on the workers, which cannot import this test module
cloudpickle.register_pickle_by_value(sys.modules[__name__])

STATE_FLOATS = 100_000  # 800 kB of state per partition: far more than a round moves


def tracked_gradient(part, state, params):
    """A stateful kernel: the gradient, and a state counting rounds and summing gradients
    (as error feedback keeps a per-partition residual)."""
    stats = loss_grad(part, params, Binomial(), True)
    if state is None:
        state = {"rounds": 0, "grad_sum": np.zeros_like(stats.grad), "first": True}
    else:
        state = {**state, "first": False}
    return stats, {"rounds": state["rounds"] + 1, "grad_sum": state["grad_sum"] + stats.grad,
                   "first": state["first"]}


def big_state(part, state, params):
    """A stateful kernel whose state is large and known exactly."""
    rounds = 0 if state is None else state["rounds"]
    new = {"rounds": rounds + 1, "rows": part[0].shape[0],
           "buffer": np.arange(STATE_FLOATS, dtype=np.float64) * (rounds + 1)}
    return loss_grad(part, params, Binomial(), True), new


def rows_and_rounds(part, state):
    """``map_stateful`` kernel: (rows, rounds seen so far)."""
    rounds = 0 if state is None else state
    return (part[0].shape[0], rounds), rounds + 1


def masked_gradient(part, keep, params):
    """A reduce over some partitions only: the others add exact zeros."""
    stats = loss_grad(part, params, Binomial(), True)
    if keep:
        return stats
    return Stats(0.0, 0.0, np.zeros_like(stats.grad))


def gradient(part, params):
    return loss_grad(part, params, Binomial(), True)


def assert_same_stats(a, b):
    assert a.weight == b.weight and a.loss == b.loss
    np.testing.assert_array_equal(a.grad, b.grad)


@pytest.fixture
def data():
    return make_data("binomial", n=2000, d=5, weights=True)


def params_of(X, round_=0):
    return np.linspace(-0.5, 0.5, X.shape[1] + 1) * (1 + round_)


# the tree restricted to the partitions present ------------------------------------------
def test_partial_tree_sum_is_the_full_tree_with_zeros_for_the_missing():
    rng = np.random.default_rng(0)
    values = rng.normal(size=11) * 10.0 ** rng.integers(-8, 8, size=11)
    for present in ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [1, 4, 5, 9], [10], [0, 2, 3, 7, 8]):
        items = {i: values[i] for i in present}
        zeros = [values[i] if i in items else 0.0 for i in range(11)]
        assert partial_tree_sum(items, 11) == tree_sum(zeros)
    assert partial_tree_sum({}, 11) is None


# partition state, in this process ---------------------------------------------------------
def test_state_persists_across_rounds_in_process(data):
    X, y, w = data
    with make_engine(X, y, w, family=Binomial(), client=None, n_partitions=5) as engine:
        assert isinstance(engine, LocalEngine)
        expected_sums = [np.zeros(X.shape[1] + 1) for _ in range(5)]
        for round_ in range(3):
            params = params_of(X, round_)
            got = engine.reduce_stateful(tracked_gradient, "feedback", params, kind="stateful")
            assert isinstance(got, StateRound) and got.reset == ()
            # the same fixed-order tree as ``reduce``: the same bits
            assert_same_stats(got.result, engine.reduce(gradient, params, kind="gradient"))
            for i, stats in enumerate(engine.map(gradient, params, kind="check")):
                expected_sums[i] = expected_sums[i] + stats.grad
        states = engine.fetch_state("feedback")
        assert [s["rounds"] for s in states] == [3] * 5
        assert not any(s["first"] for s in states)
        for state, expected in zip(states, expected_sums):
            np.testing.assert_array_equal(state["grad_sum"], expected)
        record = [r for r in engine.ledger.records if r.kind == "stateful"][-1]
        plain = [r for r in engine.ledger.records if r.kind == "gradient"][-1]
        # the state stays: the record counts what a plain reduce counts
        assert (record.bytes_sent, record.bytes_returned) == (plain.bytes_sent,
                                                              plain.bytes_returned)
        assert record.state_reset == () and plain.state_reset is None
        fetch = engine.ledger.records[-1]
        assert fetch.kind == "fetch_state" and fetch.bytes_sent == 0
        # rounds, grad_sum and first
        assert fetch.bytes_returned == 5 * (8 + 8 * (X.shape[1] + 1) + 8)


def test_map_stateful_and_states_kept_apart_by_name_and_engine(data):
    X, y, w = data
    with make_engine(X, y, w, family=Binomial(), client=None, n_partitions=4) as one, \
            make_engine(X, y, w, family=Binomial(), client=None, n_partitions=3) as other:
        first = one.map_stateful(rows_and_rounds, "a", kind="rows")
        assert first.reset == () and [r for _, r in first.result] == [0] * 4
        assert sum(rows for rows, _ in first.result) == len(y)
        one.map_stateful(rows_and_rounds, "a", kind="rows")
        one.map_stateful(rows_and_rounds, "b", kind="rows")
        other.map_stateful(rows_and_rounds, "a", kind="rows")
        assert one.state_names() == ["a", "b"] and other.state_names() == ["a"]
        assert one.fetch_state("a") == [2] * 4
        assert one.fetch_state("b") == [1] * 4
        assert other.fetch_state("a") == [1] * 3
        one.drop_state("a")
        assert one.state_names() == ["b"]
        with pytest.raises(KeyError, match="'a'"):
            one.fetch_state("a")
        again = one.map_stateful(rows_and_rounds, "a", kind="rows")  # starts from None
        assert [r for _, r in again.result] == [0] * 4
        with pytest.raises(TypeError):
            one.map_stateful(rows_and_rounds, None, kind="rows")
        one.put_state("c", [10, 20, 30, 40])
        assert [r for _, r in one.map_stateful(rows_and_rounds, "c", kind="rows").result] == \
            [10, 20, 30, 40]
        assert one.ledger.records[-2].kind == "put_state"
        assert one.ledger.records[-2].bytes_sent == 4 * 8
        with pytest.raises(ValueError, match="one item per partition"):
            one.put_state("c", [1, 2])


# partition state, on a cluster ------------------------------------------------------------
def _holders(client, futures):
    who = client.who_has(futures)
    return [who[f.key] for f in futures]


def test_state_stays_on_the_workers_and_is_fetched_exactly(data, client):
    X, y, w = data
    with make_engine(X, y, w, family=Binomial(), client=client, n_partitions=4) as engine:
        assert isinstance(engine, DistributedEngine)
        parts_at = _holders(client, engine.parts)
        assert len({h for holders in parts_at for h in holders}) == 2, "use both workers"
        for round_ in range(3):
            params = params_of(X, round_)
            got = engine.reduce_stateful(big_state, "buffer", params, kind="stateful")
            assert got.reset == ()
            assert_same_stats(got.result, engine.reduce(gradient, params, kind="gradient"))
            # each state lives where its partition lives, nowhere else
            assert _holders(client, engine._states["buffer"]) == parts_at
        fetched = engine.fetch_state("buffer")
        rows = [part_rows for part_rows in engine.map(lambda p: p[0].shape[0], kind="rows")]
        for state, n_rows in zip(fetched, rows):
            assert state["rounds"] == 3 and state["rows"] == n_rows
            np.testing.assert_array_equal(state["buffer"], np.arange(STATE_FLOATS) * 3.0)
        engine.collect_measurements()
        records = engine.ledger.records
        stateful = [r for r in records if r.kind == "stateful"]
        plain = [r for r in records if r.kind == "gradient"]
        fetch = records[-2]
        assert fetch.kind == "fetch_state"
        state_bytes = 8 * STATE_FLOATS
        for record, other in zip(stateful, plain):
            # modelled: the arguments down and the partials up, as a plain reduce
            assert (record.bytes_sent, record.bytes_returned) == (other.bytes_sent,
                                                                  other.bytes_returned)
            # measured: no state crossed the network
            assert record.bytes_measured < state_bytes / 4, record
        assert fetch.bytes_returned >= 4 * state_bytes
        assert fetch.bytes_measured >= 4 * state_bytes  # the fetch moves them, once
        keys = [f.key for f in engine._states["buffer"]]
        engine.drop_state("buffer")
        deadline = time.monotonic() + 10
        while any(client.who_has(keys).values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(client.who_has(keys).values()), "dropped states are released"


def test_put_state_places_states_next_to_their_partitions(data, client):
    X, y, w = data
    with make_engine(X, y, w, family=Binomial(), client=client, n_partitions=4) as engine:
        parts_at = _holders(client, engine.parts)
        engine.map_stateful(rows_and_rounds, "c", kind="rows")
        fetched = engine.fetch_state("c")
        assert fetched == [1] * 4
        engine.put_state("c", [5, None, 7, 8])
        assert _holders(client, [f for f in engine._states["c"] if f is not None]) == \
            [parts_at[i] for i in (0, 2, 3)]
        got = engine.map_stateful(rows_and_rounds, "c", kind="rows")
        assert [r for _, r in got.result] == [5, 0, 7, 8] and got.reset == ()
        assert engine.fetch_state("c") == [6, 1, 8, 9]
        assert _holders(client, engine._states["c"]) == parts_at


def test_state_survives_regrouping(data, client):
    X, y, w = data
    Xd, yd, wd = (da.from_array(a, chunks=(300,) + a.shape[1:]) for a in (X, y, w))
    with make_engine(Xd, yd, wd, family=Binomial(), client=client, split_every=2) as engine:
        n = engine.n_partitions
        holders = client.who_has(engine.parts)
        by_worker = {}
        for index, future in enumerate(engine.parts):
            by_worker.setdefault(holders[future.key][0], []).append(index)
        groupings = ([[i] for i in range(n)], list(by_worker.values()),
                     [part for indices in by_worker.values()
                      for part in (indices[::2], indices[1::2]) if part])
        params = params_of(X)
        results = []
        for groups in groupings:
            engine.groups = groups
            results.append(engine.reduce_stateful(tracked_gradient, "s", params, kind="st").result)
        for other in results[1:]:
            assert_same_stats(other, results[0])
        states = engine.fetch_state("s")
        assert [s["rounds"] for s in states] == [len(groupings)] * n
        singles = engine.map(gradient, params, kind="check")
        for state, single in zip(states, singles):
            np.testing.assert_array_equal(state["grad_sum"], single.grad * 3)


def worker_address(part):
    from distributed import get_worker

    return get_worker().address


def test_task_rounds_run_each_group_on_its_own_worker(data, client):
    """With a copy of every partition on every worker (as work stealing under load leaves
    them), a task round still runs each group on the worker it was grouped on, where a
    sharded fit registered the group's columns."""
    import dask

    X, y, w = data
    Xd, yd = (da.from_array(a, chunks=(250,) + a.shape[1:]) for a in (X, y))
    with dask.config.set({"daskglm.direct-rounds": False}), \
            make_engine(Xd, yd, family=Binomial(), client=client) as engine:
        holders = client.who_has(engine.parts)
        expected = [holders[part.key][0] for part in engine.parts]
        assert len(set(expected)) == 2  # both workers hold groups
        client.replicate(engine.parts)
        holders = client.who_has(engine.parts)
        assert all(len(holders[part.key]) == 2 for part in engine.parts)
        for _ in range(5):
            assert engine.map(worker_address, kind="where") == expected


@pytest.mark.parametrize("dask_input", [False, True], ids=["numpy", "dask"])
def test_a_killed_workers_state_is_reset_or_recomputed(data, own_client, dask_input):
    """Scattered partitions have no lineage: their states are reported lost and start
    again from None.  Partitions computed from a Dask array do: Dask recomputes their
    states, and nothing is reported."""
    client = own_client
    X, y, w = data
    if dask_input:
        X, y, w = (da.from_array(a, chunks=(500,) + a.shape[1:]) for a in (X, y, w))
    with make_engine(X, y, w, family=Binomial(), client=client, n_partitions=4) as engine:
        params = params_of(data[0])
        for _ in range(2):
            engine.reduce_stateful(tracked_gradient, "s", params, kind="st")
        holders = _holders(client, engine._states["s"])
        victim = holders[0][0]
        on_victim = tuple(i for i, h in enumerate(holders) if victim in h)
        assert 0 < len(on_victim) < engine.n_partitions
        kill_worker(client, victim)
        got = engine.reduce_stateful(tracked_gradient, "s", params, kind="st")
        states = engine.fetch_state("s")
        assert_same_stats(got.result, engine.reduce(gradient, params, kind="gradient"))
    record = [r for r in engine.ledger.records if r.kind == "st"][-1]
    if dask_input:
        assert got.reset == () and record.state_reset == ()
        assert [s["rounds"] for s in states] == [3] * 4
    else:
        assert got.reset == on_victim and record.state_reset == on_victim
        assert [s["rounds"] for s in states] == [1 if i in on_victim else 3 for i in range(4)]
        assert [s["first"] for s in states] == [i in on_victim for i in range(4)]


# deadline rounds, in this process ---------------------------------------------------------
def _partition_weights(w, n_partitions):
    return [w[a:b].sum() for a, b in partitions_module._split_rows(len(w), n_partitions)]


def test_deadline_round_in_process_drops_the_slow_partition(data):
    X, y, w = data
    params = params_of(X)
    with make_engine(X, y, w, family=Binomial(), client=None, n_partitions=5) as engine:
        full = engine.reduce(gradient, params, kind="gradient")
        everything = engine.reduce_by_deadline(gradient, params, kind="deadline")
        assert everything.dropped == () and everything.arrived == tuple(range(5))
        assert_same_stats(everything.result, full)
        slow = engine.reduce_by_deadline(SlowOn(engine.parts[4], 3.0, gradient), params, kind="deadline",
                                         deadline=1.0)
        assert isinstance(slow, DeadlineRound)
        assert slow.dropped == (4,) and slow.arrived == (0, 1, 2, 3)
        masked = engine.reduce_each(masked_gradient, [True] * 4 + [False], params, kind="check")
        assert_same_stats(slow.result, masked)
        weights = _partition_weights(w, 5)
        assert slow.weight_total == pytest.approx(w.sum(), rel=1e-14)
        assert slow.weight_arrived == pytest.approx(sum(weights[:4]), rel=1e-14)
        assert slow.fraction == pytest.approx(sum(weights[:4]) / w.sum(), rel=1e-14)
        assert engine.ledger.records[-2].dropped == (4,)
        assert [r.kind for r in engine.ledger.records].count("weights") == 1  # once
        # returns as soon as enough weight arrived, without waiting for the slow one
        fraction = sum(weights[:4]) / w.sum() * (1 - 1e-9)
        enough = engine.reduce_by_deadline(SlowOn(engine.parts[4], 3.0, gradient), params, kind="fraction",
                                           min_fraction=fraction)
        assert enough.dropped == (4,) and enough.weight_arrived >= fraction * w.sum()
        assert engine.ledger.records[-1].dropped == (4,)  # returned before it arrived
        # the late results are dropped: later rounds are the same as before
        assert_same_stats(engine.reduce(gradient, params, kind="gradient"), full)
        assert_same_stats(engine.reduce_by_deadline(gradient, params, kind="deadline").result,
                          full)


# deadline rounds, on a cluster -----------------------------------------------------------




def _delays(client):
    return client.run(lambda: dict(engine_tasks.TASK_DELAYS))


def test_deadline_round_on_a_cluster_drops_the_slowed_worker(data, client):
    X, y, w = data
    params = params_of(X)
    # three partitions in contiguous runs over two workers: two on one, one on the other
    with make_engine(X, y, w, family=Binomial(), client=client, n_partitions=3) as engine:
        holders = _holders(client, engine.parts)
        slow = next(h[0] for h in holders if sum(h[0] in g for g in holders) == 1)
        alone = holders.index((slow,))
        others = tuple(i for i in range(3) if i != alone)
        full = engine.reduce(gradient, params, kind="gradient")
        weights = _partition_weights(w, 3)

        with slow_worker(client, slow, 3.0):
            assert _delays(client)[slow] == {slow: 3.0}
            got = engine.reduce_by_deadline(gradient, params, kind="deadline", deadline=1.0)
        assert _delays(client) == {address: {} for address in _delays(client)}
        assert got.dropped == (alone,) and got.arrived == others
        keep = [i != alone for i in range(3)]
        masked = engine.reduce_each(masked_gradient, keep, params, kind="check")
        assert_same_stats(got.result, masked)
        assert got.weight_arrived == pytest.approx(sum(weights[i] for i in others), rel=1e-14)
        assert got.weight_total == pytest.approx(w.sum(), rel=1e-14)
        record = [r for r in engine.ledger.records if r.kind == "deadline"][-1]
        assert record.dropped == (alone,) and record.tasks == 3 and record.groups == 3
        assert record.seconds >= 1.0  # the deadline was waited for
        # the late task is no longer wanted by anyone: its result will be dropped
        assert not [k for k in keys_held(client) if k.startswith("daskglm_deadline")]
        # the dropped partition is copied to the worker that met the deadline, once
        assert record.backups == () and record.bytes_replicated == _nbytes(client, engine,
                                                                          [alone])
        assert len([k for k in keys_held(client) if k.startswith("daskglm-replica-")]) == 1
        fast = next(h[0] for h in holders if h[0] != slow)
        replica = engine._backups[alone].replica
        wait(replica)
        assert client.who_has([replica])[replica.key] == (fast,)

        # a later round waits for the worker to finish the late task, then is unaffected;
        # the partition runs twice (its task and a backup), whichever copy comes first
        assert_same_stats(engine.reduce(gradient, params, kind="gradient"), full)
        after = engine.reduce_by_deadline(gradient, params, kind="deadline")
        assert after.dropped == () and after.weight_arrived == after.weight_total
        assert after.backups == (alone,)
        assert_same_stats(after.result, full)
        record = engine.ledger.records[-1]
        assert record.backups == (alone,) and record.bytes_replicated == 0
        # its own task too, unless Dask's memory manager kept only the copy next to the
        # replica (the partition moved there)
        assert record.tasks in (3, 4)

        # min_fraction: the fast worker's partitions arrive first, and the backup of the
        # slow one is waited for: nothing dropped, without waiting for the slow worker
        fraction = sum(weights[i] for i in others) / w.sum() * (1 - 1e-9)
        with slow_worker(client, slow, 3.0):
            enough = engine.reduce_by_deadline(gradient, params, kind="fraction",
                                               min_fraction=fraction)
        assert enough.dropped == () and enough.backups == (alone,)
        assert engine.ledger.records[-1].dropped == ()
        assert_same_stats(enough.result, full)
        # leave the shared cluster idle: this round waits for the late task to end
        assert_same_stats(engine.reduce(gradient, params, kind="gradient"), full)
    # the engine's replicas are released with it (the client sends releases in batches)
    assert released(client, "daskglm-replica-")


def _nbytes(client, engine, indices):
    keys = [engine.parts[i].key for i in indices]
    return sum(client.nbytes(keys, summary=False).values())


def sleepy_gradient(part, seconds, params):
    """A kernel that is slow on some partitions wherever it runs (``seconds`` each)."""
    time.sleep(seconds)
    return gradient(part, params)


def test_backups_cover_a_persistent_straggler_bit_for_bit(data, client):
    X, y, w = data
    params = params_of(X)
    with make_engine(X, y, w, family=Binomial(), client=client, n_partitions=4) as engine:
        holders = _holders(client, engine.parts)
        slow = holders[-1][0]
        on_slow = tuple(i for i, h in enumerate(holders) if h[0] == slow)
        assert len(on_slow) == 2
        full = engine.reduce(gradient, params, kind="gradient")
        rounds = []
        with slow_worker(client, slow, 0.5):
            for _ in range(4):
                rounds.append(engine.reduce_by_deadline(gradient, params, kind="deadline",
                                                        deadline=30.0, min_fraction=0.5))
        records = engine.ledger.records[-4:]
        # the first round drops the slow worker's partitions and copies them, once
        assert rounds[0].dropped == on_slow and rounds[0].backups == ()
        assert records[0].bytes_replicated == _nbytes(client, engine, on_slow)
        # from then on their backups arrive first: the full sum, to the bit
        for got, record in zip(rounds[1:], records[1:]):
            assert got.dropped == () and got.backups == on_slow
            assert record.dropped == () and record.backups == on_slow
            assert 4 <= record.tasks <= 6 and record.bytes_replicated == 0
            assert_same_stats(got.result, full)

        # every copy late: the deadline still ends the round, the partitions dropped
        draws = [0.0 if i not in on_slow else 2.0 for i in range(4)]
        late = engine.reduce_each_by_deadline(sleepy_gradient, draws, params, kind="late",
                                              deadline=0.5)
        assert late.dropped == on_slow and late.backups == on_slow
        assert engine.ledger.records[-1].dropped == on_slow
        # without a deadline, backups are waited for as long again as min_fraction took
        engine.reduce(gradient, params, kind="gradient")  # once the late tasks ended
        late = engine.reduce_each_by_deadline(sleepy_gradient, draws, params, kind="late",
                                              min_fraction=0.5)
        assert late.dropped == on_slow and engine.ledger.records[-1].dropped == on_slow
        assert sorted(engine._backups) == list(on_slow)  # no other worker to move them to
        # the partitions change: the replicas are released
        engine.relabel(1.0)
        assert engine._backups == {}
        assert released(client, "daskglm-replica-")
        # leave the shared cluster idle: this round waits for the late tasks to end
        engine.reduce(gradient, params, kind="gradient")


def test_a_straggler_killed_during_a_round_is_covered_by_its_backups(data, own_client):
    client = own_client
    X, y, w = data
    params = params_of(X)
    with make_engine(X, y, w, family=Binomial(), client=client, n_partitions=4) as engine:
        holders = _holders(client, engine.parts)
        slow = holders[-1][0]
        on_slow = tuple(i for i, h in enumerate(holders) if h[0] == slow)
        full = engine.reduce(gradient, params, kind="gradient")
        with slow_worker(client, slow, 3.0):
            first = engine.reduce_by_deadline(gradient, params, kind="deadline",
                                              min_fraction=0.5)
            assert first.dropped == on_slow
            # every copy takes 0.3 s: the round lasts about 1.2 s on the fast worker
            killer = threading.Timer(0.4, kill_worker, (client, slow))
            killer.start()
            try:
                got = engine.reduce_each_by_deadline(sleepy_gradient, [0.3] * 4, params,
                                                     kind="deadline")
            finally:
                killer.join()
        assert got.dropped == ()
        assert_same_stats(got.result, full)
        # later rounds have every partition (from the copies made for the replicas, or
        # sent again)
        after = engine.reduce_by_deadline(gradient, params, kind="deadline")
        assert after.dropped == ()
        assert_same_stats(after.result, full)


def test_streaming_engines_run_the_new_verbs(data, client):
    """``cache="none"``: in this process, state is kept between rounds as partitions are
    read again; on a cluster the partitions live nowhere, so state is refused, and a
    deadline round reads each partition in its own task."""
    X, y, w = data
    Xd, yd, wd = (da.from_array(a, chunks=(500,) + a.shape[1:]) for a in (X, y, w))
    params = params_of(X)
    with make_engine(Xd, yd, wd, family=Binomial(), client=None, cache="none") as local:
        assert local.cache == "none"
        full = local.reduce(gradient, params, kind="gradient")
        for _ in range(2):
            got = local.reduce_stateful(tracked_gradient, "s", params, kind="st")
        assert_same_stats(got.result, full)
        assert [s["rounds"] for s in local.fetch_state("s")] == [2] * 4
        assert_same_stats(local.reduce_by_deadline(gradient, params, kind="d").result, full)
    with make_engine(Xd, yd, wd, family=Binomial(), client=client, cache="none") as remote:
        assert remote.cache == "none"
        full = remote.reduce(gradient, params, kind="gradient")
        everything = remote.reduce_by_deadline(gradient, params, kind="d")
        assert everything.dropped == () and everything.weight_arrived == everything.weight_total
        assert_same_stats(everything.result, full)
        with pytest.raises(NotImplementedError, match="cache='memory'"):
            remote.reduce_stateful(tracked_gradient, "s", params, kind="st")
        assert remote.state_names() == []


# states kept by the partition holders ------------------------------------------------
def _stateful_rounds(engine, name, rounds):
    results = []
    for round_ in range(rounds):
        results.append(engine.reduce_stateful(tracked_gradient, name,
                                              params_of_width(engine, round_), kind="st"))
    return results


def params_of_width(engine, round_):
    return np.linspace(-0.5, 0.5, engine.n_features + 1) * (1 + round_)


def test_states_kept_by_holders_run_direct_and_equal_states_in_tasks(data, client):
    """A state kept by the partition holders: its rounds go straight to the workers, its
    results and fetched states are those of the same rounds as tasks, bit for bit."""
    X, y, w = data
    with make_engine(X, y, w, family=Binomial(), client=client, n_partitions=4) as engine:
        engine.map(rows_and_rounds_plain, kind="warm")  # the holders are made meanwhile
        engine.keep_states_in_holders("kept")
        kept = _stateful_rounds(engine, "kept", 3)
        in_tasks = _stateful_rounds(engine, "tasks", 3)
        records = [r for r in engine.ledger.records if r.kind == "st"]
        assert [r.route for r in records[:3]] == ["direct"] * 3
        assert all(r.route != "direct" for r in records[3:])
        for a, b in zip(kept, in_tasks):
            assert a.reset == () and b.reset == ()
            assert_same_stats(a.result, b.result)
        assert all(isinstance(s, engine_direct.HeldState) for s in engine._states["kept"])
        fetched, expected = engine.fetch_state("kept"), engine.fetch_state("tasks")
        assert [s["rounds"] for s in fetched] == [3] * 4
        for a, b in zip(fetched, expected):
            np.testing.assert_array_equal(a["grad_sum"], b["grad_sum"])
        engine.put_state("kept", [{"rounds": 10, "grad_sum": 0.0, "first": False}] * 4)
        assert [s["rounds"] for s in engine.fetch_state("kept")] == [10] * 4
        engine.drop_state("kept")
        assert "kept" not in engine.state_names()
        again = engine.reduce_stateful(tracked_gradient, "kept", params_of(X), kind="st")
        assert again.reset == ()
        assert [s["rounds"] for s in engine.fetch_state("kept")] == [1] * 4  # from None


def rows_and_rounds_plain(part):
    return part[0].shape[0]


def test_states_kept_by_holders_are_reset_when_a_worker_is_lost(data, own_client):
    """Kept states have no lineage: a worker lost takes the holders with it, and the next
    round reports every kept state reset and starts them from None, with the right sums."""
    client = own_client
    X, y, w = data
    with make_engine(X, y, w, family=Binomial(), client=client, n_partitions=4) as engine:
        engine.map(rows_and_rounds_plain, kind="warm")
        engine.keep_states_in_holders("kept")
        _stateful_rounds(engine, "kept", 2)
        assert all(isinstance(s, engine_direct.HeldState) for s in engine._states["kept"])
        kill_worker(client, engine._direct.workers[0])
        got = engine.reduce_stateful(tracked_gradient, "kept", params_of(X), kind="st")
        assert got.reset == (0, 1, 2, 3)
        assert_same_stats(got.result, engine.reduce(loss_grad, params_of(X), Binomial(), True,
                                                    kind="gradient"))
        assert [s["first"] for s in engine.fetch_state("kept")] == [True] * 4
