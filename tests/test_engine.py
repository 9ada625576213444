"""The data plane: partitions, one-round reductions, fixed-order trees, validation."""

import dask.array as da
import numpy as np
import pytest

from daskglm.accounting.bytemodel import payload_model
from daskglm.compute.kernels import Stats, gram, loss_grad, loss_grad_hess
from daskglm.compute.tree import tree_sum
from daskglm.engine import DistributedEngine, LocalEngine, make_engine
from daskglm.model.families import Binomial, Gaussian
from tests.conftest import make_data

UNEVEN = (400, 13, 700, 1, 300, 286, 300)  # 7 uneven row chunks of 2000 rows


def gradient_round(engine, params):
    return engine.reduce(loss_grad, params, Binomial(), True, kind="gradient")


@pytest.fixture
def binomial_data():
    return make_data("binomial", weights=True)


def test_one_and_seven_uneven_partitions_agree(binomial_data):
    X, y, w = binomial_data
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    with make_engine(X, y, w, family=Binomial(), client=None, n_partitions=1) as one:
        single = gradient_round(one, params)
    Xd, yd, wd = (da.from_array(a, chunks=(UNEVEN,) + a.shape[1:]) for a in (X, y, w))
    with make_engine(Xd, yd, wd, family=Binomial(), client=None) as seven:
        assert seven.n_partitions == 7
        multi = gradient_round(seven, params)
    assert multi.loss == pytest.approx(single.loss, rel=1e-12)
    np.testing.assert_allclose(multi.grad, single.grad, rtol=1e-11)
    assert multi.weight == pytest.approx(w.sum(), rel=1e-12)


def test_local_and_distributed_engines_agree(binomial_data, client):
    X, y, w = binomial_data
    params = np.linspace(-0.5, 0.5, X.shape[1] + 1)
    Xd, yd, wd = (da.from_array(a, chunks=(UNEVEN,) + a.shape[1:]) for a in (X, y, w))
    with make_engine(Xd, yd, wd, family=Binomial(), client=None) as local:
        expected = gradient_round(local, params)
    with make_engine(Xd, yd, wd, family=Binomial(), client=client, split_every=2) as remote:
        assert isinstance(remote, DistributedEngine)
        got = gradient_round(remote, params)
        again = gradient_round(remote, params)
    # a fixed-order tree: the same sums whatever worker finishes first
    assert got.loss == again.loss
    np.testing.assert_array_equal(got.grad, again.grad)
    # SIMD round-off depends on where a partition's buffer lands in memory
    assert got.loss == pytest.approx(expected.loss, rel=1e-13)
    np.testing.assert_allclose(got.grad, expected.grad, rtol=1e-13)


def test_numpy_input_on_a_cluster_is_scattered(binomial_data, client):
    X, y, w = binomial_data
    with make_engine(X, y, w, family=Binomial(), client=client) as engine:
        assert isinstance(engine, DistributedEngine)
        assert engine.n_partitions == 1  # small data make one partition, on any machine
        assert engine.n_samples == len(y)
        stats = gradient_round(engine, np.zeros(X.shape[1] + 1))
    assert stats.loss == pytest.approx(np.log(2) * w.sum(), rel=1e-12)


def test_one_round_per_reduce_and_tasks_counted(binomial_data):
    X, y, w = binomial_data
    with make_engine(X, y, w, family=Binomial(), client=None, n_partitions=20, split_every=4) as e:
        assert [r.kind for r in e.ledger.records] == ["validate"]
        gradient_round(e, np.zeros(X.shape[1] + 1))
        gradient_round(e, np.ones(X.shape[1] + 1))
        assert e.ledger.count("gradient") == 2
        record = e.ledger.records[-1]
        # 20 partition tasks, then a tree of 5 + 2 combines; the driver sums the last 2
        assert record.tasks == 20 + 5 + 2
        assert record.bytes_sent == 20 * (8 * (X.shape[1] + 1) + 8)


def test_gram_is_exact_and_stable_across_partitions():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 4)) + 1e6  # large offset: a naive one-pass gram cancels
    y = X @ np.array([1.0, -2.0, 0.5, 3.0]) + rng.normal(size=3000)
    Xd, yd = da.from_array(X, chunks=(500, 4)), da.from_array(y, chunks=500)
    with make_engine(Xd, yd, family=Gaussian(), client=None) as engine:
        stats = engine.reduce(gram, kind="gram")
    centred = X - X.mean(0)
    np.testing.assert_allclose(stats.sxx, centred.T @ centred, rtol=1e-8)  # naive: ~1e-4
    np.testing.assert_allclose(stats.sxy, centred.T @ (y - y.mean()), rtol=1e-8)
    np.testing.assert_allclose(stats.mean_x, X.mean(0), rtol=1e-14)


@pytest.mark.parametrize("weights", [False, True])
def test_second_moments_with_more_columns_than_cache_block_rows(monkeypatch, weights):
    import daskglm.compute.row_blocks as row_blocks

    # 64-row cache blocks for 200 columns: the products' blocks grow to 200 rows
    monkeypatch.setattr(row_blocks, "BLOCK_BYTES", 1 << 10)
    assert row_blocks.block_rows(200) == 64 and row_blocks.block_rows(200, products=True) == 200
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1000, 200)) + 3.0
    y = (rng.uniform(size=1000) < 0.4).astype(float)
    w = rng.uniform(0.5, 2.0, size=1000) if weights else None
    params = rng.normal(scale=0.05, size=201)
    stats = loss_grad_hess((X, y, w), params, Binomial(), True)
    eta = X @ params[:-1] + params[-1]
    h = Binomial().variance(eta) * (1.0 if w is None else w)
    design = np.hstack([X, np.ones((1000, 1))])
    np.testing.assert_allclose(stats.hess, design.T @ (h[:, None] * design), rtol=1e-10)
    moments = gram((X, y, w))
    weight = np.ones(1000) if w is None else w
    mean = weight @ X / weight.sum()
    np.testing.assert_allclose(moments.sxx, (X - mean).T @ (weight[:, None] * (X - mean)),
                               rtol=1e-10, atol=1e-8)


def test_column_chunked_and_unknown_chunks_are_handled(binomial_data):
    X, y, _ = binomial_data
    Xd = da.from_array(X, chunks=(500, 2))  # split over columns
    yd = da.from_array(y, chunks=300)  # chunked differently from X
    masked = Xd[da.from_array(np.ones(len(y), bool), chunks=500)]  # unknown chunk sizes
    for data in (Xd, masked):
        with make_engine(data, yd, family=Binomial(), client=None) as engine:
            assert engine.n_samples == len(y)
            stats = gradient_round(engine, np.zeros(X.shape[1] + 1))
            assert stats.loss == pytest.approx(np.log(2) * len(y))


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lambda X, y, w: X.__setitem__((5, 1), np.nan), "X contains NaN"),
        (lambda X, y, w: y.__setitem__(7, np.inf), "y contains NaN"),
        (lambda X, y, w: y.__setitem__(7, 2.0), r"\[0, 1\]"),
        (lambda X, y, w: w.__setitem__(3, -1.0), "negative"),
    ],
    ids=["nan-X", "inf-y", "bad-label", "negative-weight"],
)
def test_validation_round_reports_bad_data(binomial_data, corrupt, message):
    X, y, w = (a.copy() for a in binomial_data)
    corrupt(X, y, w)
    Xd, yd, wd = (da.from_array(a, chunks=(UNEVEN,) + a.shape[1:]) for a in (X, y, w))
    with pytest.raises(ValueError, match=message):
        make_engine(Xd, yd, wd, family=Binomial(), client=None)


def test_engine_releases_its_partitions(binomial_data, client):
    X, y, w = binomial_data
    engine = make_engine(X, y, w, family=Binomial(), client=client)
    keys = [f.key for f in engine.parts]
    engine.close()
    assert engine.parts == []
    who_has = client.who_has(keys)
    assert all(not holders for holders in who_has.values())


def test_local_engine_maps_one_result_per_partition(binomial_data):
    X, y, w = binomial_data
    with make_engine(X, y, w, family=Binomial(), client=None, n_partitions=5) as engine:
        assert isinstance(engine, LocalEngine)
        rows = engine.map(lambda part: part[0].shape[0], kind="count")
    assert sum(rows) == len(y) and len(rows) == 5


def test_tree_sum_is_fixed_order():
    items = [Stats(1.0, float(i), np.array([float(i)])) for i in range(10)]
    assert tree_sum(items).loss == sum(range(10))
    with pytest.raises(ValueError):
        tree_sum([])


def test_validation_returns_the_column_moments_and_checks_entries_through_them(binomial_data):
    X, y, w = binomial_data
    Xd, yd, wd = (da.from_array(a, chunks=(UNEVEN,) + a.shape[1:]) for a in (X, y, w))
    with make_engine(Xd, yd, wd, family=Binomial(), client=None) as engine:
        assert [r.kind for r in engine.ledger.records] == ["validate"]
        moments = engine.column_moments
    np.testing.assert_allclose(moments.sums, w @ X, rtol=1e-12)
    np.testing.assert_allclose(moments.squares, w @ X**2, rtol=1e-12)
    assert moments.weight == pytest.approx(w.sum(), rel=1e-14)

    # squares that overflow are not mistaken for non-finite entries: the column is
    # rescaled by a power of two (or, without ``rescale``, named in a clear error)
    huge = X.copy()
    huge[5, 1] = 1e200
    with pytest.raises(ValueError, match="too large or too small.*1 \\(largest"):
        make_engine(huge, y, w, family=Binomial(), client=None, n_partitions=3)
    with make_engine(huge, y, w, family=Binomial(), client=None, n_partitions=3,
                     rescale=True) as engine:
        assert engine.column_scale[1] == 2.0 ** -664 and engine.column_scale[0] == 1.0
        assert np.isfinite(engine.column_moments.squares).all()
        records = engine.ledger.records
    assert [r.kind for r in records] == ["validate", "maxima", "scale", "validate"]
    for record in records[1:3]:  # the model table knows the two rounds of a rescale
        assert (record.bytes_sent, record.bytes_returned) == payload_model(
            record.kind, n_params=X.shape[1] + 1, n_features=X.shape[1], partitions=3)
    # a NaN in a row of zero weight is still found
    holed, zeroed = X.copy(), w.copy()
    holed[7, 2], zeroed[7] = np.nan, 0.0
    with pytest.raises(ValueError, match="Input X contains NaN or infinity"):
        make_engine(holed, y, zeroed, family=Binomial(), client=None, n_partitions=3)


def test_worker_side_modules_import_neither_scikit_learn_nor_the_estimators():
    """A cold worker unpickling a kernel imports only what the kernel needs."""
    import subprocess
    import sys

    code = ("import sys, daskglm.engine, daskglm.compute.kernels, daskglm.compute.local_solves, "
            "daskglm.compute.stochastic, daskglm.model.families, daskglm.model.penalties, "
            "daskglm.compute.coordinates; "
            "print(sorted(m for m in ('sklearn', 'daskglm.estimators', 'daskglm.solvers') "
            "if m in sys.modules))")
    found = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                           text=True).stdout.strip()
    assert found == "[]"


def test_the_partition_packer_and_task_runners_import_only_their_own_modules():
    """What every first task on a cold worker unpickles (the partition packer, the task
    runners and the kernels) imports none of the engine's driver-side modules."""
    import subprocess
    import sys

    code = ("import sys, daskglm.engine.partitions, daskglm.engine.tasks, "
            "daskglm.compute.kernels, daskglm.compute.summaries; "
            "print(sorted(m for m in sys.modules if m.startswith('daskglm.engine.') "
            "and m not in ('daskglm.engine.partitions', 'daskglm.engine.tasks')))")
    found = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                           text=True).stdout.strip()
    assert found == "[]"


def test_the_top_level_compare_stays_the_function_whatever_was_imported_before():
    """``daskglm.compare`` is the function even after its module was imported on its own
    (a lazy package attribute must not be replaced by a submodule of the same name)."""
    import subprocess
    import sys

    code = ("import daskglm.cli, daskglm.comparison, daskglm; "
            "print(callable(daskglm.compare) and daskglm.compare.__name__)")
    found = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                           text=True).stdout.strip()
    assert found == "compare"
