"""The internals of ``distributed`` that direct rounds use are checked for, and missing
ones send every round to the scheduler with a warning."""

import dask.array as da
import numpy as np
import pytest

import daskglm
from daskglm.engine import dask_compat
from tests.conftest import make_data


def test_the_installed_distributed_has_what_direct_rounds_use():
    assert dask_compat.direct_rounds_supported() == (True, "")


def _fit():
    X, y, _ = make_data("binomial", n=4_000)
    return daskglm.LogisticRegression().fit(da.from_array(X, chunks=(1_000, -1)),
                                            da.from_array(y, chunks=1_000))


def test_without_the_internals_every_round_is_a_task_round(client, monkeypatch):
    expected = _fit()
    assert any(getattr(r, "route", None) == "direct" for r in expected.comm_.records)
    monkeypatch.setattr(dask_compat, "direct_rounds_supported",
                        lambda: (False, "distributed 0.0: send_recv takes []"))
    dask_compat.warn_without_direct_rounds.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="every round as scheduler tasks.*send_recv"):
            model = _fit()
    finally:
        dask_compat.warn_without_direct_rounds.cache_clear()
    assert all(getattr(r, "route", None) != "direct" for r in model.comm_.records)
    np.testing.assert_array_equal(model.coef_, expected.coef_)  # the same rounds' sums


def test_cancel_takes_a_reason_where_the_version_does(client):
    future = client.submit(sum, [1, 2])
    dask_compat.cancel(client, [future], "not needed")
    assert future.cancelled() or future.status in ("cancelled", "finished")


def test_cluster_workers_asks_the_scheduler_not_the_clients_cache(client, monkeypatch):
    """Newer ``distributed`` refreshes the client's cached identity in the background without
    per-worker information; the workers come from the scheduler whatever the cache holds."""
    expected = set(client.nthreads())
    monkeypatch.setattr(client, "_scheduler_identity", {"workers": {}}, raising=False)
    workers = dask_compat.cluster_workers(client)
    assert set(workers) == expected and len(expected) == 2
    assert all("memory_limit" in info and "nthreads" in info for info in workers.values())
