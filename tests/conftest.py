"""Shared fixtures: data sets, and a real two-process LocalCluster."""

import os
import signal
import time

import numpy as np
import pytest


@pytest.fixture(scope="session")
def cluster():
    """A LocalCluster of 2 single-threaded worker processes, started once per session."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
        worker_dashboard_address=None,
    ) as cluster:
        yield cluster


@pytest.fixture
def client(cluster):
    """A Client connected to :func:`cluster`, the default client only during the test."""
    from distributed import Client

    with Client(cluster) as client:
        yield client


@pytest.fixture
def own_client():
    """A two-process cluster of its own, for tests that kill workers."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      worker_dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


def kill_worker(client, worker):
    """End the process of ``worker`` abruptly and wait until the scheduler has noticed."""
    pid = client.run(os.getpid, workers=[worker])[worker]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while worker in client.nthreads() and time.monotonic() < deadline:
        time.sleep(0.05)


class SlowOn:
    """``kernel``, sleeping ``seconds`` first on one partition of an in-process engine."""

    def __init__(self, part, seconds, kernel):
        self.part, self.seconds, self.kernel = part, seconds, kernel

    def __call__(self, part, *args):
        if part is self.part:
            time.sleep(self.seconds)
        return self.kernel(part, *args)


def make_data(family, n=2000, d=6, seed=0, weights=False):
    """Synthetic ``(X, y, sample_weight)`` for a family, with an intercept and uneven features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, size=d) + rng.normal(size=d)
    coef = rng.normal(scale=1.0 / np.sqrt(d), size=d)
    eta = X @ coef - X.mean(0) @ coef + 0.3
    if family == "gaussian":
        y = eta + rng.normal(size=n)
    elif family == "binomial":
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    elif family == "poisson":
        y = rng.poisson(np.exp(0.5 * eta)).astype(float)
    else:
        raise ValueError(family)
    sample_weight = rng.uniform(0.2, 3.0, size=n) if weights else None
    return X, y, sample_weight


def make_partition(family, n, d, weights=True, dtype=np.float64, order="C", seed=0):
    """One partition ``(X, y, sample_weight)`` of ``n`` rows and ``d`` columns whose target
    suits ``family`` (binomial 0/1, Gaussian, Poisson counts, plus 0.5 for the Gamma)."""
    from daskglm.model.families import Binomial, Gamma, Gaussian

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    eta = 0.3 * X @ rng.normal(size=d)
    if isinstance(family, Binomial):
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    elif isinstance(family, Gaussian):
        y = eta + rng.normal(size=n)
    else:
        y = rng.poisson(np.exp(eta)).astype(float) + (0.5 if isinstance(family, Gamma) else 0.0)
    w = rng.uniform(0.2, 3.0, size=n) if weights else None
    return np.asarray(X, dtype=dtype, order=order), y, w


def keys_held(client):
    """Keys the scheduler keeps for ``client``."""
    def held(dask_scheduler, client_id=client.id):
        state = dask_scheduler.clients.get(client_id)
        return sorted(ts.key for ts in state.wants_what) if state else []

    return client.run_on_scheduler(held)


def wait_until(condition, seconds=60.0, every=0.05):
    """Poll ``condition()`` until it is true; fail the test if it is still false after
    ``seconds`` (generous: a timeout means it never happens, not that the machine is slow)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not true within {seconds} s: {condition}"
        time.sleep(every)


def released(client, prefix, seconds=60.0):
    """Whether the scheduler forgets ``client``'s keys named ``prefix...`` within ``seconds``
    (a client sends its releases in batches; generous, it returns as soon as they are)."""
    deadline = time.monotonic() + seconds
    while [k for k in keys_held(client) if k.startswith(prefix)]:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def assert_moments_by_class(counts, dense, y, weight):
    """The per-class column sums and sums of squares ``counts`` (``count_labels`` with
    ``per_class_moments``) are those of each class's rows of ``dense`` (1e-12)."""
    for k, label in enumerate(counts.labels):
        rows = y == label
        np.testing.assert_allclose(counts.sums[k], weight[rows] @ dense[rows], rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(counts.squares[k], weight[rows] @ dense[rows] ** 2,
                                   rtol=1e-12, atol=1e-12)
