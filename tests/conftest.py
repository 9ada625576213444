"""Shared fixtures: data sets, and a real two-process LocalCluster."""

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
