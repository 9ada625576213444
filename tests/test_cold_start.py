"""A fresh cluster's first fit: workers warmed by the preload, partitions packed where
their rows are."""

import time

import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def _loops_loaded():
    """Whether this worker process has the float64 loops of a first fit, without loading
    them."""
    import sys

    fused = sys.modules.get("daskglm.compute.fused_loops")
    moments = sys.modules.get("daskglm.compute.moment_loops")
    if fused is None or moments is None:
        return False
    return bool(fused.fused_rows.signatures) and bool(moments.weighted_moments.signatures)


def _wait_loaded(client, seconds=60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        loaded = client.run(_loops_loaded)
        if all(loaded.values()):
            return loaded
        time.sleep(0.1)
    return client.run(_loops_loaded)


def test_preloaded_workers_load_the_loops_before_any_task():
    from distributed import Client, LocalCluster

    from daskglm import LogisticRegression
    from daskglm.preload import PRELOAD

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, worker_dashboard_address=None,
                      preload=[PRELOAD]) as cluster, Client(cluster) as client:
        loaded = _wait_loaded(client)
        assert list(loaded.values()) == [True, True]
        rng = np.random.default_rng(0)
        X = rng.standard_normal((2000, 4))
        y = (X[:, 0] > 0).astype(float)
        fitted = LogisticRegression(tol=1e-8).fit(X, y)
        reference = LogisticRegression(tol=1e-8).fit(X, y)  # the same fit, in process
        np.testing.assert_allclose(fitted.coef_, reference.coef_, rtol=1e-6, atol=1e-8)


def test_plain_workers_load_nothing_until_asked_then_the_plugin_warms_them(own_client):
    from daskglm.preload import WarmUp

    assert not any(own_client.run(_loops_loaded).values())
    own_client.register_plugin(WarmUp())
    assert list(_wait_loaded(own_client).values()) == [True, True]


def test_dask_partitions_are_packed_on_the_worker_holding_their_rows(own_client):
    """On a fresh cluster no block of X is copied to pack it: each partition is made on the
    worker that holds its block (the scheduler, not knowing how long a packing task takes,
    would otherwise balance them over the workers)."""
    import dask.array as da
    from dask.core import flatten
    from distributed import wait

    from daskglm.engine.build import make_engine
    from daskglm.model.families import Binomial

    rng = da.random.default_rng(0)
    X = rng.standard_normal((200_000, 50), chunks=(25_000, 50)).persist()
    y = (rng.random(200_000, chunks=25_000) > 0.5).astype(float).persist()
    wait([X, y])
    blocks = [X.dask[key] for key in flatten(X.__dask_keys__())]
    before = own_client.who_has(blocks)
    engine = make_engine(X, y, client=own_client, family=Binomial())
    try:
        packed = own_client.who_has(engine.parts)
        for block, part in zip(blocks, engine.parts):
            assert packed[part.key] == before[block.key]
        assert own_client.who_has(blocks) == before  # no block was copied
    finally:
        engine.close()
