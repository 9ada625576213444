"""The deadline guard: a deadline is kept only where its rounds beat waiting rounds, as
measured in the fit (a deadline never makes a fit slower than waiting, beyond the
guard's few measured rounds)."""

import time
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import daskglm
from daskglm.accounting.ledger import CommReport
from daskglm.solvers.deadline_guard import DeadlineGuard
from daskglm.testing import slow_worker


def _run(guard, seconds_of):
    """Drive ``guard`` for 10 rounds whose durations ``seconds_of(waits)`` gives; the kinds
    it chose, in order."""
    kinds = []
    for _ in range(10):
        waits = guard.next_round_waits()
        guard.timed(waits, time.sleep, seconds_of(waits))
        kinds.append("wait" if waits else "deadline")
    return kinds


def test_it_waits_where_the_deadline_does_not_pay():
    ledger = CommReport()
    kinds = _run(DeadlineGuard(ledger), lambda waits: 0.001 if waits else 0.02)
    assert kinds == ["deadline"] * 4 + ["wait"] * 6
    value, reason = ledger.choices["deadline"]
    assert value == "wait" and "does not pay" in reason


def test_it_keeps_a_deadline_that_beats_waiting():
    ledger = CommReport()
    kinds = _run(DeadlineGuard(ledger), lambda waits: 0.03 if waits else 0.002)
    assert kinds == ["deadline"] * 4 + ["wait"] * 2 + ["deadline"] * 4
    assert ledger.choices["deadline"][0] == "deadline"


def test_one_off_costs_do_not_count_against_either_kind():
    """The first deadline round copies partitions to replicas: the fastest round of each
    kind decides."""
    guard = DeadlineGuard()
    durations = iter([0.05, 0.002, 0.002, 0.002, 0.01, 0.01])
    for _ in range(6):
        guard.timed(guard.next_round_waits(), time.sleep, next(durations))
    assert guard.next_round_waits() is False


@pytest.mark.parametrize("solver", ["gd", "sgd"])
def test_a_fit_with_a_straggler_keeps_its_deadline(client, solver):
    """On two worker processes, one slowed by 0.3 s a task: the deadline's rounds (the
    slow worker's partitions backed up on the fast one) beat waiting for it, and the fit
    says so in its ledger."""
    import dask.array as da

    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 5))
    y = (rng.uniform(size=4000) < 1 / (1 + np.exp(-X @ np.ones(5)))).astype(float)
    Xd, yd = da.from_array(X, chunks=1000), da.from_array(y, chunks=1000)
    options = {"deadline": 5.0, "min_fraction": 0.5}
    if solver == "sgd":
        options.update(batch_size=500, random_state=0)
    model = daskglm.LogisticRegression(solver=solver, max_iter=8, tol=None if solver == "sgd"
                                       else 1e-4, solver_options=options)
    with slow_worker(client, sorted(client.nthreads())[1], 0.3), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # gd: 8 iterations
        model.fit(Xd, yd)
    value, reason = model.comm_.choices["deadline"]
    assert value == "deadline", reason
