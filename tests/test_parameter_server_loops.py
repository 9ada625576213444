"""Parameter-server tasks: the compiled steps between two calls to the holder against the
Python steps they replace.

:func:`~daskglm.compute.parameter_server.parameter_server_task` runs the steps between two
calls to its holder in one call of the compiled loop of local SGD where it can
(:func:`~daskglm.compute.parameter_server.compiled_steps_apply`); with that switched off
it takes one Python :func:`_minibatch_step` a step, the reference.  A single task against
an in-process holder is deterministic, so both paths must push the same changes and
report the same progress, to 1e-10 (the sums of the penalty and of the sample weights are
taken in another order, and steps of few rows use the C library's ``exp``).
"""

import numpy as np
import pytest
import scipy.sparse as sp

from daskglm.compute import parameter_server
from daskglm.compute.parameter_server import (
    ParameterServerConfig,
    _Batches,
    compiled_steps_apply,
    parameter_server_task,
)
from daskglm.engine.parameter_holders import ParameterHolder
from daskglm.model.families import Binomial, Gaussian, Poisson
from daskglm.model.links import Identity
from daskglm.model.penalties import L1, L2, NoPenalty, make_penalty
from daskglm.optim.schedules import OptimalDecay, make_step_rule
from tests.conftest import make_partition

N, D = 300, 6

FAMILIES = {"binomial": Binomial(), "gaussian": Gaussian(), "poisson": Poisson()}
PENALTIES = {"none": NoPenalty(), "l2": L2(0.05)}
RULES = {"constant": make_step_rule("constant", 0.05),
         "invscaling": make_step_rule("invscaling", 0.1, 0.25),
         "optimal": OptimalDecay(1.0)}


def make_part(family, n=N, weights=True, dtype=np.float64, order="C", seed=0):
    return make_partition(family, n, D, weights, dtype, order, seed)


def make_config(family, penalty=None, rule="invscaling", fit_intercept=True, batch_size=7,
                push_every=8, fetch_every=None, bounded=False):
    return ParameterServerConfig(
        family=family, penalty=L2(0.05) if penalty is None else penalty, rule=RULES[rule],
        fit_intercept=fit_intercept, n_features=D, batch_size=batch_size, seed=3,
        push_every=push_every, fetch_every=fetch_every, bounded=bounded, seconds=1e9)


class RecordingHolder(ParameterHolder):
    """The in-process holder, recording every push (its change and its progress), and
    the steps the task had taken at each read and push."""

    def __init__(self, params):
        super().__init__(params)
        self.pushes, self.events, self.blocks = [], [], []
        self.steps = 0

    def pull_for(self, slot):
        self.events.append(("pull", self.steps))
        return super().pull_for(slot)

    def push_from(self, slot, delta, based_on_version, rows=0, loss=0.0, weight=0.0,
                  penalty=0.0, seconds_waiting=0.0):
        self.events.append(("push", self.steps))
        self.pushes.append((np.array(delta), rows, loss, weight, penalty))
        return super().push_from(slot, delta, based_on_version, rows, loss, weight, penalty,
                                 seconds_waiting)


def run_task(part, config, rows_target, monkeypatch, compiled=True):
    """One task of a run of ``rows_target`` rows, its steps compiled or in Python:
    ``(holder, report)``; the holder counts the steps (``blocks``: those of each compiled
    call)."""
    params = np.random.default_rng(1).normal(scale=0.2, size=D + config.fit_intercept)
    holder = RecordingHolder(params)
    holder.start_run(rows_target, 0 if config.bounded else None)
    compiled_steps = parameter_server._compiled_steps
    python_step = parameter_server._minibatch_step

    def counted_block(part, rows, bounds, *args):
        holder.blocks.append(bounds.shape[0] - 1)
        holder.steps += bounds.shape[0] - 1
        return compiled_steps(part, rows, bounds, *args)

    def counted_step(*args):
        holder.steps += 1
        return python_step(*args)

    with monkeypatch.context() as patch:
        if compiled:
            patch.setattr(parameter_server, "_compiled_steps", counted_block)
        else:
            patch.setattr(parameter_server, "compiled_steps_apply", lambda *args: False)
            patch.setattr(parameter_server, "_minibatch_step", counted_step)
        report = parameter_server_task(part, holder, config, 2)
    return holder, report


def both_paths(part, config, rows_target, monkeypatch):
    """The task with compiled steps, and with Python steps."""
    assert compiled_steps_apply(part, config)
    compiled = run_task(part, config, rows_target, monkeypatch)
    reference = run_task(part, config, rows_target, monkeypatch, compiled=False)
    assert compiled[0].steps == reference[0].steps > 0
    assert compiled[0].events == reference[0].events
    return compiled, reference


def assert_same(compiled, reference, rtol=1e-10):
    (holder, report), (reference_holder, reference_report) = compiled, reference
    assert report == reference_report
    assert len(holder.pushes) == len(reference_holder.pushes) > 0
    for got, expected in zip(holder.pushes, reference_holder.pushes):
        np.testing.assert_allclose(got[0], expected[0], rtol=rtol, atol=1e-13)
        assert got[1] == expected[1]
        np.testing.assert_allclose(got[2:], expected[2:], rtol=rtol, atol=1e-13)
    np.testing.assert_allclose(holder.pull()[1], reference_holder.pull()[1], rtol=rtol,
                               atol=1e-13)
    progress, expected = holder.progress(), reference_holder.progress()
    assert progress["rows"] == expected["rows"] and progress["version"] == expected["version"]
    for key in ("loss", "weight", "penalty"):
        assert progress[key] == pytest.approx(expected[key], rel=rtol, abs=1e-13)
    stats, expected = holder.stats(), reference_holder.stats()
    assert (stats["pushes"], stats["pulls"]) == (expected["pushes"], expected["pulls"])


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("penalty", PENALTIES)
@pytest.mark.parametrize("family", FAMILIES)
def test_weighted_steps_with_intercept_equal_the_python_steps(family, penalty, rule,
                                                              monkeypatch):
    family = FAMILIES[family]
    config = make_config(family, PENALTIES[penalty], rule)
    # 3 passes: the orders of 3 epochs, the last step of each with 300 % 7 = 6 rows
    compiled, reference = both_paths(make_part(family), config, 3 * N, monkeypatch)
    assert_same(compiled, reference)
    blocks = compiled[0].blocks
    assert blocks == [8] * len(blocks) and len(blocks) == len(compiled[0].pushes)
    assert compiled[1].rows >= 3 * N and np.isfinite(compiled[0].pull()[1]).all()


@pytest.mark.parametrize("penalty", PENALTIES)
@pytest.mark.parametrize("family", FAMILIES)
def test_steps_without_intercept_or_weights(family, penalty, monkeypatch):
    family = FAMILIES[family]
    config = make_config(family, PENALTIES[penalty], "constant", fit_intercept=False)
    compiled, reference = both_paths(make_part(family, weights=False), config, 2 * N,
                                     monkeypatch)
    assert_same(compiled, reference)
    assert compiled[0].pull()[1].shape == (D,)


@pytest.mark.parametrize("weights", [True, False], ids=["weights", "no-weights"])
def test_float32_partitions(weights, monkeypatch):
    part = make_part(Binomial(), weights=weights, dtype=np.float32)
    compiled, reference = both_paths(part, make_config(Binomial()), 2 * N, monkeypatch)
    assert_same(compiled, reference)


@pytest.mark.parametrize("push_every, fetch_every, bounded, reads", [
    (8, None, False, range(0, 25, 8)),
    (8, 16, False, [0, 16]),
    (8, 3, False, range(0, 25, 3)),
    (4, 6, False, range(0, 25, 6)),
    (5, None, True, range(0, 25, 5)),
    (6, 4, True, [0, 4, 6, 10, 12, 16, 18, 22, 24]),  # after every push and every 4 steps
    (1, None, False, range(25)),
], ids=["fetch-auto", "fetch-multiple", "fetch-3", "fetch-6-push-4", "bounded",
        "bounded-fetch-4", "push-every-step"])
def test_blocks_end_at_every_call_to_the_holder(push_every, fetch_every, bounded, reads,
                                                monkeypatch):
    """A compiled block runs the steps up to the next read or push, whichever is first;
    a read follows every push with ``fetch_every=None`` or a staleness bound."""
    config = make_config(Gaussian(), push_every=push_every, fetch_every=fetch_every,
                         bounded=bounded)
    compiled, reference = both_paths(make_part(Gaussian()), config, 2 * N, monkeypatch)
    assert_same(compiled, reference)
    expected = []
    for step in range(25):
        if step and step % push_every == 0:
            expected.append(("push", step))
        if step in reads:
            expected.append(("pull", step))
    events = compiled[0].events
    assert [event for event in events if event[1] <= 24] == expected
    calls = sorted({step for _, step in events})  # the run ends at a push
    assert compiled[0].blocks == list(np.diff(calls)) and calls[-1] == compiled[0].steps


def test_reads_follow_every_push_when_the_task_sizes_its_pushes(monkeypatch):
    """``push_every=None``: the first push after one step, then pushes of the size the
    task chose, each followed by a read (``fetch_every=None``)."""
    config = make_config(Binomial(), push_every=None)
    monkeypatch.setattr(parameter_server, "amortising_steps", lambda *args: 16)
    compiled, reference = both_paths(make_part(Binomial()), config, 3 * N, monkeypatch)
    assert_same(compiled, reference)
    blocks = compiled[0].blocks
    assert blocks[0] == 1 and blocks[1:] == [16] * (len(blocks) - 1)
    assert compiled[1].push_every == 16
    events = compiled[0].events
    assert events[:3] == [("pull", 0), ("push", 1), ("pull", 1)]
    assert events[3:7] == [("push", 17), ("pull", 17), ("push", 33), ("pull", 33)]


def test_the_task_times_its_compiled_steps(monkeypatch):
    """``push_every=None`` sizes the pushes from the seconds of the compiled blocks."""
    config = make_config(Binomial(), push_every=None, batch_size=4)
    calls = []
    real = parameter_server.amortising_steps

    def recorded(push_seconds, step_seconds, ratio):
        calls.append((push_seconds, step_seconds))
        return real(push_seconds, step_seconds, ratio)

    monkeypatch.setattr(parameter_server, "amortising_steps", recorded)
    holder, report = run_task(make_part(Binomial(), n=4000), config, 4 * 4000, monkeypatch)
    assert len(calls) == report.pushes >= 2
    assert all(push > 0 and step > 0 for push, step in calls)
    assert report.push_every == min(real(*calls[-2], 10.0), 1000) == holder.blocks[-1]


def test_pushes_are_sized_at_most_one_pass(monkeypatch):
    """However fast the steps, a task sizing its pushes pushes once a pass over its rows
    at least (300 rows, 7 a step: 43 steps)."""
    monkeypatch.setattr(parameter_server, "amortising_steps", lambda *args: 1024)
    config = make_config(Gaussian(), push_every=None)
    compiled, reference = both_paths(make_part(Gaussian()), config, 4 * N, monkeypatch)
    assert_same(compiled, reference)
    assert compiled[0].blocks[1:] == [43] * (len(compiled[0].blocks) - 1)
    assert compiled[1].push_every == 43


def test_the_l2_clip_is_taken_by_both_paths(monkeypatch):
    """Where the rate times the L2 strength exceeds 1, a step sets the coefficients to
    zero (as synchronous SGD and scikit-learn do), compiled or not."""
    config = make_config(Gaussian(), L2(30.0), "constant", push_every=4)
    compiled, reference = both_paths(make_part(Gaussian()), config, N, monkeypatch)
    assert_same(compiled, reference)
    params = compiled[0].pull()[1]
    np.testing.assert_array_equal(params[:D], 0.0)
    assert params[D] != 0.0


def test_steps_of_many_rows_and_a_partition_smaller_than_a_step(monkeypatch):
    config = make_config(Poisson(), batch_size=40, push_every=3)  # the chunked loop
    compiled, reference = both_paths(make_part(Poisson()), config, 2 * N, monkeypatch)
    assert_same(compiled, reference)
    small = make_part(Poisson(), n=5)
    compiled, reference = both_paths(small, make_config(Poisson()), 40, monkeypatch)
    assert_same(compiled, reference)
    assert compiled[1].rows == 40


@pytest.mark.parametrize("n_rows, count, steps", [(300, 7, 200), (30, 7, 1), (5, 7, 9),
                                                  (64, 8, 16), (10, 3, 3)])
def test_take_steps_draws_the_rows_of_take(n_rows, count, steps):
    batches, reference = (_Batches(n_rows, np.random.default_rng(4)) for _ in range(2))
    for _ in range(3):
        rows, bounds = batches.take_steps(count, steps)
        assert bounds.shape == (steps + 1,) and bounds[0] == 0 and bounds[-1] == rows.shape[0]
        for k in range(steps):
            np.testing.assert_array_equal(np.sort(rows[bounds[k]:bounds[k + 1]]),
                                          reference.take(count))
        assert batches.position == reference.position
    np.testing.assert_array_equal(batches.order, reference.order)


def test_other_cases_keep_the_python_steps():
    X, y, w = make_part(Binomial())
    config = make_config(Binomial())
    assert compiled_steps_apply((X, y, w), config)
    assert compiled_steps_apply((X, y, None), make_config(Binomial(), NoPenalty()))
    assert not compiled_steps_apply((sp.csr_matrix(X), y, w), config)
    assert not compiled_steps_apply((X.astype(np.int64), y, w), config)
    assert not compiled_steps_apply((X, y.astype(np.int64), w), config)
    for penalty in (L1(0.05), make_penalty("elasticnet", 0.05, 0.5)):
        assert not compiled_steps_apply((X, y, w), make_config(Binomial(), penalty))
    adagrad = ParameterServerConfig(Binomial(), L2(0.05), make_step_rule("adagrad", 0.1), True,
                                    D, 7, 0)
    assert not compiled_steps_apply((X, y, w), adagrad)
    hogwild = ParameterServerConfig(Binomial(), L2(0.05), RULES["constant"], True, D, 7, 0,
                                    hogwild=2)
    assert not compiled_steps_apply((X, y, w), hogwild)
    assert not compiled_steps_apply((X, y, w), make_config(Poisson(link=Identity())))


def test_a_one_partition_fit_equals_the_python_steps(monkeypatch):
    """One task at a time in this process: the compiled fit is the Python fit."""
    from daskglm.engine import make_engine
    from daskglm.solvers import Problem, get_solver

    X, y, w = make_part(Binomial(), n=1000)
    problem = Problem(Binomial(), L2(0.01), True, D)

    def fit():
        options = {"batch_size": 16, "random_state": 0, "push_every": 8, "seconds": 1e9}
        with make_engine(X, y, w, family=problem.family, client=None, n_partitions=1) as engine:
            solver = get_solver("async", problem, tol=None, max_iter=3, options=options)
            return solver.solve(problem, engine, np.zeros(problem.n_params))

    compiled = fit()
    monkeypatch.setattr(parameter_server, "compiled_steps_apply", lambda *args: False)
    reference = fit()
    np.testing.assert_allclose(compiled.params, reference.params, rtol=1e-10, atol=1e-13)
    for got, expected in zip(compiled.history, reference.history):
        assert got["version"] == expected["version"]
        assert got["loss"] == pytest.approx(expected["loss"], rel=1e-10)
