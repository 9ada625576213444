"""A driver killed mid-fit leaves the cluster clean: its long-lived tasks and actors end
within seconds, and the next client's fit takes its usual time.

Each test starts a LocalCluster of worker processes, times an ordinary fit of 1e5 x 5 on
it, then starts a driver process (``sys.executable -c``) that fits Dask data with the
method under test, kills it with SIGKILL while the fit's work runs on the workers, waits
until no daskglm task or actor is left on any worker, and times the same ordinary fit
again.
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

#: Seconds after the kill within which every task and actor of the fit must be gone.
CLEAN_WITHIN = 10.0

#: Seconds the ordinary fit may take after the kill on this loaded two-core machine.
USUAL_FIT_SECONDS = 30.0


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


def _ordinary_fit_seconds():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100_000, 5))
    y = (X @ rng.normal(size=5) + rng.logistic(size=100_000) > 0).astype(float)
    start = time.monotonic()
    model = daskglm.LogisticRegression().fit(X, y)
    seconds = time.monotonic() - start
    assert model.comm_.engine == "distributed" and model.comm_.workers == 2
    return seconds


def kill_driver_mid_fit(method):
    """Run the scenario for ``method``; returns ``(seconds of the ordinary fit before,
    seconds until the cluster was clean after the kill, seconds of the fit after)``."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, worker_dashboard_address=None) as cluster, \
            Client(cluster) as client, tempfile.TemporaryFile("w+") as errors:
        _ordinary_fit_seconds()  # the first also loads the compiled kernels on the workers
        before = _ordinary_fit_seconds()
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
            time.sleep(2.0)  # mid-fit: its tasks and actors are at work
            assert driver.poll() is None, "the fit ended before the kill"
        finally:
            driver.send_signal(signal.SIGKILL)
            driver.wait()
            driver.stdout.close()
        killed = time.monotonic()
        while _work_left(client) and time.monotonic() - killed < 60:
            time.sleep(0.2)
        clean = time.monotonic() - killed
        left = _work_left(client)
        assert not left, f"still on the workers {clean:.0f} s after the kill: {left}"
        after = _ordinary_fit_seconds()
    return before, clean, after


def check(method):
    before, clean, after = kill_driver_mid_fit(method)
    print(f"{method}: ordinary fit {before:.1f} s before, cluster clean {clean:.1f} s after "
          f"the kill, ordinary fit {after:.1f} s after")
    assert clean <= CLEAN_WITHIN, (method, clean)
    assert after < USUAL_FIT_SECONDS, (method, before, after)


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
