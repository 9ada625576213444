"""Steps per round chosen from the measured cost of a round (``"auto"`` options)."""

import math

import dask.array as da
import numpy as np
import pytest

import daskglm
from daskglm.accounting.kinds import Kind
from daskglm.compute.amortise import amortising_steps
from daskglm.solvers.round_sizing import COMPUTE_TO_FIXED, StepTimer, size_rounds
from tests.conftest import make_data


@pytest.mark.parametrize("fixed, per_step, expected", [
    (5e-3, 1e-4, 512),   # 10 x 5 ms / 0.1 ms = 500 -> 512
    (5e-3, 5e-5, 1024),  # exactly 1000 -> 1024
    (1e-3, 1e-2, 1),     # a step outweighs the fixed cost: one step a round
    (1e-3, 0.0, 1),      # nothing measured
], ids=["500-to-512", "1000-to-1024", "step-outweighs", "unmeasured"])
def test_amortising_steps_is_the_smallest_power_of_two_that_amortises(fixed, per_step, expected):
    steps = amortising_steps(fixed, per_step, COMPUTE_TO_FIXED)
    assert steps == expected
    if per_step > 0 and steps > 1:
        assert steps * per_step >= COMPUTE_TO_FIXED * fixed > (steps // 2) * per_step


def test_size_rounds_caps_at_one_epoch_and_says_why():
    sizing = size_rounds(5e-3, 1e-6, most=3000)
    assert sizing.steps == 3000 and "at most one epoch" in sizing.reason
    sizing = size_rounds(5e-3, 1e-4, most=3000)
    assert sizing.steps == 512
    assert "5.00 ms" in sizing.reason and "100.0 us" in sizing.reason and "10x" in sizing.reason


def test_step_timer_doubles_until_compute_stands_out_then_fits_a_line():
    timer = StepTimer(empty_seconds=0.005, most=10**6)
    walls = {64: 0.050, 128: 0.006, 256: 0.007, 512: 0.009, 1024: 0.013, 2048: 0.021}
    sizing = None
    while sizing is None:  # 64 (cold), 128, ... until 3x the shortest warm round
        sizing = timer.add(walls[timer.steps])
    assert [steps for steps, _ in timer.walls] == [64, 128, 256, 512, 1024, 2048]
    assert sizing.step_seconds == pytest.approx(0.008 / 1024)  # 1024 -> 2048 steps
    assert sizing.fixed_seconds == pytest.approx(0.013 - 1024 * 0.008 / 1024)
    assert sizing.steps == 8192  # 10 x 5 ms / 7.8 us = 6400 -> 8192
    # an epoch caps both the timing rounds and the choice
    short = StepTimer(empty_seconds=0.005, most=300)
    while (sizing := short.add(0.006)) is None:
        pass
    assert [steps for steps, _ in short.walls] == [64, 128, 256, 300] and sizing.steps == 300
    # noise at the cap: a slope that is not positive bounds the step by the last round
    noisy = StepTimer(empty_seconds=0.001, most=256)
    for wall in (0.050, 0.010, 0.008):
        sizing = noisy.add(wall)
    assert sizing.step_seconds == pytest.approx(0.008 / 256)


def _dask_data(n=20_000, d=5, chunks=2_500):
    X, y, _ = make_data("binomial", n=n, d=d)
    return da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=chunks)


def test_sgd_on_a_cluster_sizes_local_sgd_rounds_by_their_cost(client):
    X, y = _dask_data()
    model = daskglm.LogisticRegression(solver="sgd", max_iter=3, tol=None,
                                       solver_options={"random_state": 0}).fit(X, y)
    value, reason = model.comm_.choices["sync_every"]
    steps_per_epoch = math.ceil(20_000 / 16)
    assert isinstance(value, int) and 1 <= value <= steps_per_epoch
    assert value & (value - 1) == 0 or value == steps_per_epoch  # a power of two, or an epoch
    assert "fixed cost" in reason
    assert model.solver_options_["sync_every"] == value
    assert model.comm_.count(Kind.STEP_PROBE) >= 3
    assert model.comm_.count(Kind.SGD_BATCH) == 0
    assert model.comm_.count(Kind.LOCAL_SGD) == 3 * math.ceil(steps_per_epoch / value)
    assert "chosen: sync_every=" in repr(model.comm_)
    # the chosen value passed back repeats the fit bit for bit
    again = daskglm.LogisticRegression(solver="sgd", max_iter=3, tol=None,
                                       solver_options={"random_state": 0, "sync_every": value})
    again.fit(X, y)
    np.testing.assert_array_equal(again.coef_, model.coef_)
    assert "sync_every" not in again.comm_.choices and again.comm_.count(Kind.STEP_PROBE) == 0


def test_sgd_in_this_process_stays_synchronous():
    """In this process a Dask array's chunks are one partition for SGD at "auto" (a
    round an epoch: the in-memory fit's iterates, each step one mini-batch); with
    ``sync_every=None`` in its options a round a step over the chunks."""
    X, y = _dask_data(n=4_000)
    model = daskglm.SGDClassifier(max_iter=2, tol=None, random_state=0).fit(X, y)
    assert "one partition" in model.comm_.choices["sync_every"][1]
    in_memory = daskglm.SGDClassifier(max_iter=2, tol=None, random_state=0).fit(
        X.compute(), y.compute())
    np.testing.assert_array_equal(model.coef_, in_memory.coef_)
    synchronous = daskglm.SGDClassifier(max_iter=2, tol=None, random_state=0,
                                        solver_options={"sync_every": None}).fit(X, y)
    assert min(r.partitions for r in synchronous.comm_.records) > 1


def test_sgd_deadline_with_auto_sizes_local_rounds(client):
    X, y = _dask_data(n=4_000, chunks=1_000)
    model = daskglm.LogisticRegression(solver="sgd", max_iter=3, tol=None,
                                       solver_options={"deadline": 5.0, "batch_size": 25})
    model.fit(X, y)
    value, reason = model.comm_.choices["sync_every"]
    assert isinstance(value, int) and 1 <= value <= 160 and "fixed cost" in reason
    # the deadline guard's first 4 rounds use the deadline, the next 2 wait for everyone,
    # and the rest do what it chose
    deadline = model.comm_.count(Kind.DEADLINE_LOCAL_SGD)
    waiting = model.comm_.count(Kind.LOCAL_SGD)
    rounds = 3 * math.ceil(160 / value)
    assert deadline + waiting == rounds
    assert deadline >= min(rounds, 4) and waiting == min(max(rounds - 4, 0), 2) + (
        max(rounds - 6, 0) if model.comm_.choices.get("deadline", ("deadline",))[0] == "wait"
        else 0)


def test_gossip_on_a_cluster_sizes_its_local_steps(client):
    X, y = _dask_data()
    model = daskglm.LogisticRegression(solver="gossip", max_iter=3, tol=None,
                                       solver_options={"random_state": 0}).fit(X, y)
    value, reason = model.comm_.choices["local_steps"]
    steps_per_epoch = math.ceil(20_000 / 32)
    assert 1 <= value <= steps_per_epoch and "fixed cost" in reason
    assert model.solver_options_["local_steps"] == value
    # the first rounds time 64, 128, ... steps (into the second epoch, when an epoch is
    # short); the rest take ``value`` steps a round
    assert model.comm_.count(Kind.GOSSIP) == sum(e["rounds_in_epoch"] for e in model.history_)
    assert model.history_[-1]["rounds_in_epoch"] == math.ceil(steps_per_epoch / value)


def test_async_tasks_size_their_pushes(client):
    X, y = _dask_data()
    model = daskglm.LogisticRegression(solver="async", max_iter=2, tol=None).fit(X, y)
    value, reason = model.comm_.choices["push_every"]
    assert value >= 1 and "push" in reason
    pushes = model.comm_.by_kind()[Kind.PUSH]
    steps = 2 * 20_000 / 32
    assert pushes["rounds"] >= 1
    # far fewer pushes than steps: one push per step was the old default
    assert model.history_[-1]["version"] < steps / 2


def test_one_slowed_timing_round_does_not_size_the_rounds():
    """Steps of 5 us and rounds of 3 ms fixed cost, the last timing round slowed by 60 ms
    (a loaded machine): the step's time is the least slope between the warm rounds, not
    the one that ends on the slowed round (which said 240 us a step, and rounds of 128 steps)."""
    from daskglm.solvers.round_sizing import StepTimer

    timer = StepTimer(empty_seconds=0.003, most=100_000)
    sizing = None
    for extra in (0.050, 0.0, 0.0, 0.060, 0.0, 0.0, 0.0, 0.0):
        sizing = timer.add(0.003 + 5e-6 * timer.steps + extra)
        if sizing is not None:
            break
    assert sizing is not None and sizing.step_seconds == pytest.approx(5e-6, rel=1e-6)
    assert sizing.steps >= 4096
