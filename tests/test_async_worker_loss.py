"""Parameter-server SGD (``solver="async"``) survives losing a worker mid-fit: the
worker holding the parameter holder (the holder is rebuilt from the driver's last
checkpoint on a worker still there) or another one (its partitions are recomputed by
Dask, or sent again from the driver for in-memory input; its clocks are retired).

Each test fits the same data twice on a LocalCluster of two worker processes (their
nannies start a replacement for a killed one): undisturbed, then with a worker killed
with SIGKILL while the fit's tasks run.  The accuracy of the two fits must agree within
0.01, and ``converged_`` must be what the stopping rule says of the history and the exact
gradient round at its end (the optimality recorded in the last entry) of the optimum.
"""

import threading
import time
import warnings

import dask.array as da
import pytest

import daskglm
from daskglm import progress, testing
from daskglm.solvers.base import EarlyStopping
from tests.conftest import kill_worker

ROWS = 200_000
TOL, PATIENCE = 1e-4, 5


def _data(client, kind):
    """Dask arrays persisted on the cluster, or in-memory arrays (``kind="numpy"``)."""
    state = da.random.RandomState(0)
    X = state.normal(size=(ROWS, 10), chunks=(ROWS // 8, 10))
    y = (X[:, 0] - X[:, 1] + 0.5 * X[:, 2] + state.logistic(size=ROWS, chunks=ROWS // 8)
         > 0).astype(float)
    if kind == "numpy":
        return tuple(client.compute([X, y], sync=True))
    return client.persist([X, y])


def _model():
    return daskglm.LogisticRegression(solver="async", tol=TOL, max_iter=60, solver_options={
        "random_state": 0, "n_iter_no_change": PATIENCE})


def _holders(client):
    """``{key: workers}`` of the parameter holders the scheduler knows."""
    def where(dask_scheduler):
        return {str(key): [ws.address for ws in ts.who_has or ()]
                for key, ts in dask_scheduler.tasks.items()
                if str(key).startswith("daskglm-holder")}

    return client.run_on_scheduler(where)


def _rule_says_stop(history):
    """Whether SGD's stopping rule stops at the last epoch of ``history`` (and not before)."""
    rule = EarlyStopping(TOL, PATIENCE)
    stops = [rule.should_stop(entry["objective"]) for entry in history]
    return stops[-1] and not any(stops[:-1])


def _fit_killing(client, X, y, victim_of):
    """Fit in a thread; once an epoch is done, kill ``victim_of(holder's worker, workers)``
    while the fit's tasks run.  Returns ``(model, warning texts, victim, holder's worker)``."""
    before = set(_holders(client))
    epoch, outcome = threading.Event(), {}

    def fit():
        token = progress._listener.set(lambda entry: epoch.set())
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                outcome["model"] = _model().fit(X, y)
            outcome["warnings"] = [str(w.message) for w in caught]
        except Exception as exc:  # reported below
            outcome["error"] = exc
        finally:
            progress._listener.reset(token)

    thread = threading.Thread(target=fit)
    thread.start()
    assert epoch.wait(120), outcome.get("error")
    holder = next(workers[0] for key, workers in _holders(client).items()
                  if key not in before and workers)
    victim = victim_of(holder, sorted(client.nthreads()))
    deadline = time.monotonic() + 30

    def running():
        return any(client.processing().values())

    while not running() and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert thread.is_alive(), "the fit ended before the kill"
    assert running(), "the fit's tasks run"
    kill_worker(client, victim)
    thread.join(300)
    assert not thread.is_alive() and "error" not in outcome, outcome.get("error")
    return outcome["model"], outcome["warnings"], victim, holder


@pytest.mark.parametrize("lost, kind", [
    ("holder", "dask"),
    pytest.param("other", "dask", marks=pytest.mark.slow),
    pytest.param("holder", "numpy", marks=pytest.mark.slow),
])
def test_async_survives_a_worker_killed_mid_fit(own_client, lost, kind):
    client = own_client
    X, y = _data(client, kind)
    undisturbed = _model().fit(X, y)
    expected = undisturbed.score(X, y)

    def victim_of(holder, workers):
        return holder if lost == "holder" else next(w for w in workers if w != holder)

    if kind == "numpy":  # one partition, on one worker: slow its pushes down
        for worker in client.nthreads():
            client.run(testing._set_delay, worker, 0.02, workers=[worker])
    model, caught, victim, holder = _fit_killing(client, X, y, victim_of)
    assert abs(model.score(X, y) - expected) <= 0.01, (model.score(X, y), expected)
    at_optimum = model.history_[-1].get("optimality", float("inf")) <= TOL
    assert model.converged_ == (_rule_says_stop(model.history_) and at_optimum)
    rebuilt = [w for w in caught if "parameter holder" in w]
    if lost == "holder":
        assert model.comm_.holders_lost == [victim]
        assert len(rebuilt) == 1 and victim in rebuilt[0], caught
        lost_push = next(r for r in model.comm_.records if r.holder_lost is not None)
        assert lost_push.kind == "push"
        assert model.comm_.count("push") == 2, "the lost holder's traffic and the new one's"
    else:  # the victim's partitions are recomputed by Dask: its tasks come back late
        assert victim != holder
        assert model.comm_.holders_lost == [] and not rebuilt, caught
        assert model.comm_.count("push") == 1
