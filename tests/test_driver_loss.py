"""A driver killed mid-fit leaves the cluster clean: its long-lived tasks and actors end,
and the next client's fit is the usual one.

Each test starts a LocalCluster of worker processes, makes an ordinary fit of 1e5 x 5 on
it, then starts a driver process (``sys.executable -c``) that fits Dask data with the
method under test, kills it with SIGKILL while the fit's work runs on both workers, waits
until no daskglm task or actor is left on any worker, and makes the same ordinary fit
again: on both workers, in as many rounds, to the same coefficients.  (How fast the
cluster is cleaned is a matter for benchmarks, not for asserts on a shared machine.)
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import daskglm

#: What the driver process runs: ``python -c DRIVER address method``.  It prints FITTING
#: once its data are on the cluster, then fits for far longer than the test waits.
DRIVER = """
import sys
import dask.array as da
import numpy as np
from distributed import Client
import daskglm

address, method = sys.argv[1], sys.argv[2]
client = Client(address)
if method == "sharded":
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    n, d, k = 40_000, 20_000, 40
    X = sp.csr_matrix((rng.normal(size=n * k), rng.integers(0, d, size=n * k),
                       np.arange(0, n * k + 1, k)), shape=(n, d))
    X.sum_duplicates()
    y = (X @ rng.normal(size=d) > 0).astype(float)
    X = da.from_array(X, chunks=(5_000, 20_000), asarray=False)
    y = da.from_array(y, chunks=5_000)
    model = daskglm.LogisticRegression(C=1e6, solver="lbfgs", tol=1e-12, max_iter=100_000,
                                       solver_options={"sharded": True})
else:
    state = da.random.RandomState(0)
    X = state.normal(size=(400_000, 10), chunks=(50_000, 10))
    y = (X[:, 0] - X[:, 1] + state.logistic(size=400_000, chunks=50_000) > 0).astype(float)
    model = daskglm.LogisticRegression(solver=method, tol=None, max_iter=100_000)
X, y = client.persist([X, y])
client.wait_for_workers(1)
y.sum().compute()
print("FITTING", flush=True)
model.fit(X, y)
print("DONE", flush=True)
"""

#: Seconds after the kill to wait for every task and actor of the fit to be gone (the
#: leases lapse within seconds; generous, a timeout means they never end).
CLEAN_WITHIN = 120.0


def _fit_work(dask_worker):
    """The daskglm tasks executing on a worker (actor calls included) and its actors."""
    running = [str(key) for key in dask_worker.active_threads.values()]
    actors = [str(key) for key in dask_worker.state.actors]
    return [key for key in running + actors if "daskglm" in key]


def _work_left(client):
    return {address: keys for address, keys in client.run(_fit_work).items() if keys}


#: What shows that a method's fit has reached its long-lived work on the workers.
MARKERS = {"async": "daskglm_async_sgd", "gossip": "daskglm_gossip", "sharded": "daskglm-shard"}


def _at_work(client, marker):
    return any(marker in key for keys in _work_left(client).values() for key in keys)


def _ordinary_fit():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100_000, 5))
    y = (X @ rng.normal(size=5) + rng.logistic(size=100_000) > 0).astype(float)
    model = daskglm.LogisticRegression().fit(X, y)
    assert model.comm_.engine == "distributed" and model.comm_.workers == 2
    return model


def kill_driver_mid_fit(method):
    """Run the scenario for ``method``; returns ``(the ordinary fit before, the same fit
    after the kill, once the cluster was clean)``."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, worker_dashboard_address=None) as cluster, \
            Client(cluster) as client, tempfile.TemporaryFile("w+") as errors:
        before = _ordinary_fit()
        driver = subprocess.Popen(
            [sys.executable, "-c", DRIVER, cluster.scheduler_address, method],
            stdout=subprocess.PIPE, stderr=errors, text=True,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        try:
            line = driver.stdout.readline()
            errors.seek(0)
            assert line.strip() == "FITTING", errors.read()[-3000:]
            deadline = time.monotonic() + 60
            seen = False
            while not seen and time.monotonic() < deadline:
                seen = _at_work(client, MARKERS[method])
                time.sleep(0.05)
            assert seen, "the fit never reached the workers"
            # mid-fit: its tasks and actors are at work on both workers
            deadline = time.monotonic() + 60
            while len(_work_left(client)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(_work_left(client)) == 2, _work_left(client)
            assert driver.poll() is None, "the fit ended before the kill"
        finally:
            driver.send_signal(signal.SIGKILL)
            driver.wait()
            driver.stdout.close()
        deadline = time.monotonic() + CLEAN_WITHIN
        while _work_left(client) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _work_left(client)
        assert not left, f"still on the workers {CLEAN_WITHIN:.0f} s after the kill: {left}"
        after = _ordinary_fit()
    return before, after


def check(method):
    before, after = kill_driver_mid_fit(method)
    # nothing of the killed fit is left to share the workers with: the same rounds, on
    # both workers, and the same coefficients (the engine's sums are a fixed tree)
    assert after.comm_.workers == before.comm_.workers == 2
    assert after.comm_.rounds == before.comm_.rounds and after.n_iter_ == before.n_iter_
    np.testing.assert_allclose(after.coef_, before.coef_, rtol=1e-12, atol=0)
    np.testing.assert_allclose(after.intercept_, before.intercept_, rtol=1e-12, atol=0)


def test_a_killed_async_driver_leaves_no_task_behind():
    """The parameter-server tasks end once the holder is released with the driver's
    client (their calls to it would otherwise wait forever), or its lease lapses."""
    check("async")


@pytest.mark.slow
def test_a_killed_gossip_driver_leaves_no_task_behind():
    check("gossip")


@pytest.mark.slow
def test_a_killed_sharded_lbfgs_driver_leaves_no_task_or_shard_behind():
    check("sharded")
