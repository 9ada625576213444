"""The in-process engine's stacked partitions (:mod:`daskglm.engine.device_rows`).

On a GPU the engine stacks dense CuPy partitions into one buffer per array and runs
row-additive kernels once per round on it (``tests/test_gpu.py`` fits CuPy chunks).  Here
the same engine logic runs on numpy partitions, stacked by making :meth:`DeviceRows.of`
accept them: the fits must equal those on partitions apart (round-off apart), with one
task per round, and maps must still see every partition.
"""

import warnings

import dask.array as da
import numpy as np
import pytest

import daskglm
from daskglm.compute.kernels import loss_grad
from daskglm.compute.tree import maximal_nodes, row_additive
from daskglm.engine import make_engine
from daskglm.engine.device_rows import DeviceRows
from daskglm.model.families import Binomial
from tests.conftest import make_data


@pytest.fixture
def stacked(monkeypatch):
    """Every in-process engine made while the fixture is active stacks its partitions."""
    monkeypatch.setattr(DeviceRows, "of", classmethod(lambda cls, parts: cls()))


def chunked(X, y, w):
    rows = 250
    return (da.from_array(X, chunks=(rows, -1)), da.from_array(y, chunks=rows),
            None if w is None else da.from_array(w, chunks=rows))


def test_a_row_additive_round_runs_once_on_views_of_one_buffer(stacked, monkeypatch):
    X, y, w = make_data("binomial", n=2000, weights=True)
    engine = make_engine(*chunked(X, y, w), family=Binomial(), client=None)
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    stats = engine.reduce(loss_grad, params, Binomial(), True, kind="gradient")
    assert engine.ledger.records[-1].tasks == 1
    whole, _ = engine.device_rows.whole(engine.parts)
    assert whole[0].shape == X.shape
    assert all(np.shares_memory(part[0], whole[0]) for part in engine.parts)
    monkeypatch.undo()
    apart = make_engine(*chunked(X, y, w), family=Binomial(), client=None)
    assert apart.device_rows is None
    expected = apart.reduce(loss_grad, params, Binomial(), True, kind="gradient")
    np.testing.assert_allclose(stats.grad, expected.grad, rtol=1e-12)
    assert stats.loss == pytest.approx(expected.loss, rel=1e-12)
    # a map still sees the partitions one by one
    sizes = engine.map(lambda part: part[0].shape[0], kind="sizes")
    assert sizes == [250] * 8


@pytest.mark.parametrize("solver", ["lbfgs", "newton", "averaging"])
def test_stacked_fits_equal_fits_apart(solver, stacked, monkeypatch):
    X, y, w = make_data("binomial", n=2000, weights=True)
    labels = np.where(y > 0, 3.0, -1.0)  # encoded after validation: y is stacked again
    make = lambda: daskglm.LogisticRegression(solver=solver, tol=1e-10)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make().fit(*chunked(X, labels, w)[:2], sample_weight=chunked(X, y, w)[2])
        monkeypatch.undo()
        reference = make().fit(*chunked(X, labels, w)[:2], sample_weight=chunked(X, y, w)[2])
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, rtol=0, atol=1e-8)
    np.testing.assert_array_equal(model.classes_, [-1.0, 3.0])
    # one task per round: the stacked rows, or the partitions one after another
    rounds = [r for r in model.comm_.records if r.kind != "encode"]
    assert len(rounds) >= 2 and all(r.tasks == 1 for r in rounds)


def test_partitions_of_several_dtypes_are_not_stacked():
    rows = DeviceRows()
    parts = [(np.ones((3, 2)), np.ones(3), None), (np.ones((3, 2), np.float32), np.ones(3), None)]
    whole, same = rows.whole(parts)
    assert whole is None
    assert all(a is b for part, other in zip(parts, same) for a, b in zip(part, other))


def test_host_partitions_are_not_stacked_by_default():
    X, y, _ = make_data("binomial", n=400)
    engine = make_engine(*chunked(X, y, None)[:2], family=Binomial(), client=None)
    assert engine.device_rows is None and len(engine.groups) == engine.n_partitions


@pytest.mark.parametrize("workers", [1, 2])
def test_partition_holders_run_a_row_additive_round_once_per_subtree(workers, stacked,
                                                                     monkeypatch):
    """On a cluster, each worker's partition holder stacks its partitions per complete
    subtree and runs a row-additive kernel once on each stack: the same sums (round-off
    apart) as the partitions one by one; a map still sees every partition.  One worker
    holds every partition: one call over all the rows.  Two workers make as many calls
    as their partitions' placement makes subtrees (the scheduler's choice)."""
    from distributed import Client, LocalCluster

    from daskglm.engine.partition_holders import PartitionHolder

    X, y, w = make_data("binomial", n=2000, weights=True)
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    with LocalCluster(n_workers=workers, threads_per_worker=2, processes=False, memory_limit=0,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        engine = make_engine(*chunked(X, y, w), family=Binomial(), client=client)
        engine.reduce(loss_grad, params, Binomial(), True, kind="gradient")  # makes holders
        holders = engine._ready_direct()
        assert holders is not None
        ROWS_SEEN.clear()
        stats = engine.reduce(counted_loss_grad, params, Binomial(), True, kind="gradient")
        assert engine.ledger.records[-1].route == "direct"
        # one call per complete subtree of each worker's partitions, on all of their rows
        subtrees = [len(leaves) for group in _worker_indices(engine)
                    for _, leaves in maximal_nodes(group, engine.n_partitions)]
        assert sorted(ROWS_SEEN) == sorted(250 * k for k in subtrees)
        if workers == 1:
            assert ROWS_SEEN == [2000]
        monkeypatch.setattr(PartitionHolder, "_run_stacked", None)  # not called for a map
        sizes = engine.map(lambda part: part[0].shape[0], kind="sizes")
        assert sizes == [250] * 8
        engine.close()
    apart = make_engine(*chunked(X, y, w), family=Binomial(), client=None)
    monkeypatch.undo()
    expected = apart.reduce(loss_grad, params, Binomial(), True, kind="gradient")
    np.testing.assert_allclose(stats.grad, expected.grad, rtol=1e-12)
    assert stats.loss == pytest.approx(expected.loss, rel=1e-12)


#: the rows of each partition :func:`counted_loss_grad` was called on (in this process)
ROWS_SEEN = []


@row_additive
def counted_loss_grad(part, *args):
    """:func:`loss_grad`, counting its calls in :data:`ROWS_SEEN`."""
    ROWS_SEEN.append(part[0].shape[0])
    return loss_grad(part, *args)


def _worker_indices(engine):
    """The partition indices of each worker of a distributed engine."""
    by_worker = {}
    for group in engine.groups:
        by_worker.setdefault(engine.group_workers[tuple(group)], []).extend(group)
    return list(by_worker.values())
