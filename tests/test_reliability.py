"""Reproducibility and fault tolerance on a real cluster: placement, partitioning, lost
workers and interrupted fits."""

import _thread
import os
import threading
import time
import warnings

import dask.array as da
import numpy as np
import pytest

import daskglm
from daskglm.compute.kernels import loss_grad_hess
from daskglm.engine import DistributedEngine, make_engine
from daskglm.engine import partitions as engine_module
from daskglm.model.families import Binomial
from tests.conftest import keys_held, kill_worker, make_data

UNEVEN = (400, 13, 700, 1, 300, 286, 300)  # 7 uneven row chunks of 2000 rows


def test_the_reduction_does_not_depend_on_how_partitions_are_grouped(client):
    """The sum of a round depends on partition indices alone: the same bits whether the
    partitions run one per task, all of a worker's in one task, or interleaved."""
    X, y, w = make_data("binomial", weights=True)
    Xd, yd, wd = (da.from_array(a, chunks=(UNEVEN,) + a.shape[1:]) for a in (X, y, w))
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    sums = []
    with make_engine(Xd, yd, wd, family=Binomial(), client=client, split_every=2) as engine:
        assert isinstance(engine, DistributedEngine)
        holders = client.who_has(engine.parts)
        by_worker = {}
        for index, future in enumerate(engine.parts):
            by_worker.setdefault(holders[future.key][0], []).append(index)
        assert len(by_worker) == 2, "the partitions should be spread over both workers"
        for groups in ([[i] for i in range(7)],
                       list(by_worker.values()),
                       [part for indices in by_worker.values()
                        for part in (indices[::2], indices[1::2]) if part]):
            engine.groups = groups  # each group's partitions live on one worker
            sums.append(engine.reduce(loss_grad_hess, params, Binomial(), True, kind="hessian"))
    for other in sums[1:]:
        assert other.loss == sums[0].loss
        np.testing.assert_array_equal(other.grad, sums[0].grad)
        np.testing.assert_array_equal(other.hess, sums[0].hess)


@pytest.mark.parametrize("solver", ["newton", "admm"])
def test_the_same_fit_twice_on_a_cluster_gives_the_same_bits(client, solver):
    X, y, _ = make_data("binomial", n=4000)
    Xd = da.from_array(X, chunks=(500, -1))
    fits = []
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(daskglm.LogisticRegression(solver=solver, max_iter=2).fit(Xd, y))
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    np.testing.assert_array_equal(fits[0].intercept_, fits[1].intercept_)


def test_in_memory_partitioning_does_not_depend_on_the_machine(monkeypatch):
    """Numpy input is cut by size, not by CPU count: averaging gives the same model on a
    machine of 2 CPUs as on one of 64."""
    X, y, _ = make_data("gaussian", n=3000, d=8)
    monkeypatch.setattr(engine_module, "PARTITION_BYTES", 40_000)  # 3000 x 8 x 8 B: 5 parts
    models = []
    for cpus in (2, 64):
        monkeypatch.setattr(os, "cpu_count", lambda cpus=cpus: cpus)
        with make_engine(X, y, family=daskglm.Gaussian(), client=None) as engine:
            assert engine.n_partitions == 5
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # averaging cannot check its optimality
            models.append(daskglm.Ridge(alpha=1.0, solver="averaging").fit(X, y))
    np.testing.assert_array_equal(models[0].coef_, models[1].coef_)


# newton, admm and sgd lose partitions in a reduce, a map_each and a reduce_each round;
# lbfgs, a reduce as newton, runs with -m slow
@pytest.mark.parametrize("solver", [pytest.param("lbfgs", marks=pytest.mark.slow),
                                    "newton", "admm", "sgd"])
def test_a_worker_lost_mid_fit_with_numpy_input_is_survived(own_client, monkeypatch, solver):
    """Numpy partitions lost with a worker are scattered again from the driver: the fit
    goes on and gives the coefficients of an undisturbed fit (1e-10).  Both fits stop at
    the same ``max_iter`` (convergence is not the point: on 10 partitions ADMM needs about
    90 iterations)."""
    monkeypatch.setattr(engine_module, "PARTITION_BYTES", 20_000)  # 4000 x 6 x 8 B: 10 parts
    X, y, _ = make_data("binomial", n=4000)
    if solver == "sgd":
        def make():  # synchronous: "auto" would size the rounds by their timings
            return daskglm.SGDClassifier(max_iter=2, tol=None, batch_size=256, random_state=0,
                                         learning_rate="constant", eta0=0.05, sync_every=None)
    else:
        def make():
            return daskglm.LogisticRegression(solver=solver, tol=1e-8, max_iter=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = make().fit(X, y)

    original = DistributedEngine._execute
    rounds = []

    def execute_then_kill(self, *args):
        rounds.append(None)
        if len(rounds) == 3:
            kill_worker(self.client, sorted(self.client.nthreads())[0])
        return original(self, *args)

    lost_parts = DistributedEngine._lost_parts
    lost = []

    def record_lost(self):
        found = lost_parts(self)
        lost.extend(found)
        return found

    monkeypatch.setattr(DistributedEngine, "_execute", execute_then_kill)
    monkeypatch.setattr(DistributedEngine, "_lost_parts", record_lost)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = make().fit(X, y)
    assert len(rounds) > 3 and lost, "no partition was lost and rebuilt"
    np.testing.assert_allclose(got.coef_, expected.coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got.intercept_, expected.intercept_, rtol=0, atol=1e-10)




def test_an_interrupted_fit_leaves_nothing_on_the_cluster(client):
    """Ctrl-C during a fit: every partition and partial sum is released at once, even
    while the traceback (and with it every frame of the fit) is still held."""
    X, y, _ = make_data("binomial", n=4000)
    Xd = da.from_array(X, chunks=(500, -1))
    stop = threading.Event()

    def interrupt_until_stopped():
        # again each second: Python ignores a KeyboardInterrupt raised in a finaliser or a
        # gc callback (a Future's __del__, distributed's GC diagnosis), and the fit below
        # would then never end
        while not stop.wait(1.0):
            _thread.interrupt_main()

    interrupter = threading.Thread(target=interrupt_until_stopped, daemon=True)
    interrupter.start()
    held = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            daskglm.SGDClassifier(tol=None, max_iter=100_000, batch_size=4).fit(Xd, y)
    except KeyboardInterrupt as exc:
        stop.set()  # first: no second interrupt while the exception is kept
        held = exc  # keeps the traceback's frames alive
    finally:
        stop.set()
        interrupter.join()
    assert held is not None, "the fit ended before the interrupt"
    deadline = time.monotonic() + 10
    while keys_held(client) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert keys_held(client) == []
    del held


def test_cache_auto_keeps_data_in_memory_on_workers_without_a_memory_limit():
    """No memory limit means the machine's memory, not zero free memory."""
    from distributed import Client, LocalCluster

    from daskglm.engine import choose_cache, free_memory

    X = da.ones((10_000, 10), chunks=(2_500, 10))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, memory_limit=0,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        assert free_memory(client) > 0
        choice = choose_cache("auto", X, X[:, 0], None, client)
    assert choice.policy == "memory", choice.reason
