"""The cache policy: keep the partitions in memory, or stream them from zarr every round."""

import logging

import numpy as np
import pytest

import daskglm
import daskglm.engine.cache as engine_module
from daskglm.datasets import make_classification
from daskglm.io import load_zarr


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "data.zarr"
    make_classification(4000, 6, chunks=700, random_state=1, path=str(path))
    return load_zarr(str(path))


def _fit(X, y, cache):
    model = daskglm.LogisticRegression(C=0.5, solver="lbfgs", tol=1e-10, max_iter=500, cache=cache)
    return model.fit(X, y)


@pytest.mark.parametrize("where", ["in-process", "cluster"])
def test_streaming_and_caching_give_the_same_model(store, where, request):
    if where == "cluster":
        request.getfixturevalue("client")
    X, y, _ = store
    cached = _fit(X, y, "memory")
    streamed = _fit(X, y, "none")
    assert (cached.cache_, streamed.cache_) == ("memory", "none")
    np.testing.assert_allclose(streamed.coef_, cached.coef_, rtol=1e-12)
    data_bytes = X.nbytes + y.nbytes
    # memory: the data are read once, by the round that persists them
    assert [r.bytes_read for r in cached.comm_.records][0] == data_bytes
    assert cached.comm_.bytes_read == data_bytes
    # none: every round reads every partition from the store
    assert all(r.bytes_read == data_bytes for r in streamed.comm_.records)
    assert streamed.comm_.bytes_read == data_bytes * streamed.comm_.rounds


@pytest.mark.parametrize("where", ["in-process", "cluster"])
def test_streamed_runs_read_ahead_and_give_the_sums_of_one_task_per_partition(
        store, where, request, monkeypatch):
    """A streamed tree round runs a few tasks per thread, each over a run of the
    partitions read one ahead of its kernel (``engine/tasks.run_streamed_task``): the
    same model, to the bit, as one task per partition, in fewer tasks per round."""
    import daskglm.engine.tasks as tasks

    threads = 2 if where == "in-process" else sum(
        request.getfixturevalue("client").nthreads().values())
    if where == "in-process":
        monkeypatch.setattr("os.cpu_count", lambda: threads)
    X, y, _ = store  # 6 chunks of 700 rows
    runs = _fit(X, y, "none")
    monkeypatch.setattr(tasks, "STREAM_RUNS_PER_THREAD", 0)
    one_each = _fit(X, y, "none")
    np.testing.assert_array_equal(runs.coef_, one_each.coef_)
    np.testing.assert_array_equal(runs.intercept_, one_each.intercept_)
    assert runs.n_iter_ == one_each.n_iter_
    gradients = [r for r in runs.comm_.records if r.kind == "gradient"]
    assert gradients and all(r.groups == min(6, 2 * threads) for r in gradients)
    assert all(r.groups == 6 for r in one_each.comm_.records if r.kind == "gradient")
    assert runs.comm_.bytes_read == one_each.comm_.bytes_read


def test_a_run_carries_only_its_own_partitions_reads(store):
    """Each streamed partition travels with the tasks that read it, not the whole graph
    of the store; a partition made from a persisted collection's chunks has none of its
    own (its reads are the round task's dependencies)."""
    from daskglm.engine.partitions import delayed_partitions
    from daskglm.engine.tasks import sources_of

    X, y, _ = store
    parts, _ = delayed_partitions(X, y, None)
    sources = sources_of(parts)
    assert all(source is not None for source in sources)
    whole = dict(parts[0].__dask_graph__())
    assert len(whole) > 12  # every chunk's reads
    assert all(len(source.graph) <= 5 for source in sources)  # X's and y's reads, packing
    for source, part in zip(sources, parts):
        read, expected = source.read(), part.compute(scheduler="sync")
        np.testing.assert_array_equal(read[0], expected[0])
        np.testing.assert_array_equal(read[1], expected[1])


def test_a_persisted_array_streamed_on_a_cluster_reads_its_chunks_as_dependencies(client):
    """Chunks already on the cluster are no source a task can read by itself: one task
    per partition, with the chunks as its dependencies, as before the runs."""
    import dask.array as da

    rng = np.random.default_rng(0)
    X = da.from_array(rng.standard_normal((4000, 5)), chunks=(700, -1)).persist()
    y = da.from_array((rng.random(4000) < 0.5).astype(float), chunks=700).persist()
    streamed = _fit(X, y, "none")
    cached = _fit(X, y, "memory")
    np.testing.assert_allclose(streamed.coef_, cached.coef_, rtol=1e-12)
    assert all(r.groups == 6 for r in streamed.comm_.records if r.kind == "gradient")


def test_auto_streams_when_the_data_do_not_fit(store, monkeypatch, caplog):
    X, y, _ = store
    with caplog.at_level(logging.INFO, logger="daskglm"):
        assert _fit(X, y, "auto").cache_ == "memory"
        monkeypatch.setattr(engine_module, "free_memory", lambda client: 1000)
        assert _fit(X, y, "auto").cache_ == "none"  # not even one partition fits
    messages = " ".join(record.getMessage() for record in caplog.records)
    assert "-> 'memory'" in messages and "-> 'none'" in messages and "streaming" in messages


@pytest.mark.parametrize("where", ["in-process", "cluster"])
def test_auto_keeps_the_partitions_that_fit_and_streams_the_others(store, where, request,
                                                                   monkeypatch):
    """Free memory for two of the six partitions (half of it kept free): those two are
    read once and kept, the other four read from the store in every round, and the fit
    is the all-in-memory fit's."""
    if where == "cluster":
        request.getfixturevalue("client")
    X, y, _ = store
    cached = _fit(X, y, "memory")
    data_bytes = X.nbytes + y.nbytes
    monkeypatch.setattr(engine_module, "free_memory", lambda client: X.nbytes)
    partial = _fit(X, y, "auto")
    assert partial.cache_ == "partial"
    np.testing.assert_allclose(partial.coef_, cached.coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(partial.intercept_, cached.intercept_, rtol=0, atol=1e-10)
    assert X.chunks[0] == (700,) * 5 + (500,)
    streamed = data_bytes * (4 * 700 - 200) // 4000  # the last four chunks' rows
    reads = [r.bytes_read for r in partial.comm_.records]
    assert reads[0] == data_bytes  # the validation round reads everything, once
    assert reads[1:] and all(read == streamed for read in reads[1:])


@pytest.mark.parametrize("where", ["in-process", "cluster"])
def test_auto_starts_from_the_kept_partitions_and_reads_the_store_fewer_times(
        store, where, request, monkeypatch):
    """With some partitions kept and the others streamed, solver="auto" first solves on
    the kept ones (no read of the store), then on all the data from there: the same
    coefficients as all in memory, in fewer rounds that read the store."""
    if where == "cluster":
        request.getfixturevalue("client")
    X, y, _ = store

    def fit(cache):
        return daskglm.LogisticRegression(C=0.5, tol=1e-8, cache=cache).fit(X, y)

    cached = fit("memory")
    monkeypatch.setattr(engine_module, "free_memory", lambda client: X.nbytes)
    started = fit("auto")
    assert started.cache_ == "partial"
    value, reason = started.comm_.choices["start"]
    assert value == "kept part" and "1400 rows kept in memory" in reason
    np.testing.assert_allclose(started.coef_, cached.coef_, rtol=0, atol=1e-7)
    monkeypatch.setattr(daskglm.LogisticRegression, "_start_on_kept_part",
                        lambda self, plan, name, problem, solver, engine, params0: params0)
    from_zero = fit("auto")
    assert "start" not in from_zero.comm_.choices
    assert from_zero.solver_ == started.solver_

    def reads(model):
        return sum(1 for r in model.comm_.records if r.bytes_read)

    kept_rounds = [r for r in started.comm_.records if not r.bytes_read]
    assert kept_rounds and reads(started) < reads(from_zero)


def test_in_memory_input_is_always_cached():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 3)), rng.integers(0, 2, 200)
    model = daskglm.LogisticRegression(cache="none").fit(X, y)
    assert model.cache_ == "memory" and model.comm_.bytes_read == 0


def test_sparse_chunks_are_sized_by_their_non_zeros():
    # pydata sparse chunks (COO) take their non-zeros' bytes, not their shape's: a wide
    # hashed design that fits is kept in memory, not read from the graph every round
    import dask.array as da
    import scipy.sparse as sp
    import sparse

    from daskglm.engine import choose_cache
    from daskglm.engine.cache import data_nbytes

    rng = np.random.default_rng(0)
    X = sp.csr_matrix((np.ones(20_000), rng.integers(0, 2**20, 20_000),
                       np.arange(0, 20_001, 10)), shape=(2_000, 2**20))
    coo = da.from_array(sparse.COO.from_scipy_sparse(X), chunks=(500, 2**20),
                        asarray=False, name=False)
    y = da.zeros(2_000, chunks=500)
    assert data_nbytes(coo, y) < 1e6  # dense, it would be 16.8 GB
    assert choose_cache("auto", coo, y, None, None).policy == "memory"


def test_bad_cache_policy_is_rejected():
    with pytest.raises(ValueError, match="cache must be"):
        daskglm.Ridge(cache="disk").fit(np.ones((3, 1)), np.ones(3))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_store_twice_the_workers_memory_fits_without_losing_a_worker(tmp_path):
    """2 workers of 600 MB, a 2.4 GB zarr store: streamed with bounded memory."""
    from distributed import Client, LocalCluster
    from distributed.diagnostics import MemorySampler

    path = str(tmp_path / "big.zarr")
    n, d = 6_000_000, 49  # X 2.35 GB + y 48 MB
    make_classification(n, d, chunks=100_000, random_state=0, path=path)
    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="600MB",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        X, y, _ = load_zarr(path)
        assert X.nbytes + y.nbytes >= 2 * 2 * 600e6 * 0.95
        workers_before = set(client.nthreads())
        sampler = MemorySampler()
        with sampler.sample("fit", measure="process"):
            model = daskglm.LogisticRegression(solver="lbfgs", max_iter=5, tol=1e-6).fit(X, y)
        assert model.cache_ == "none"
        assert set(client.nthreads()) == workers_before  # none restarted
        peak = sampler.to_pandas()["fit"].max()
        assert peak < 2 * 600e6  # both workers together stay under their limits
        assert model.comm_.bytes_read >= model.comm_.rounds * X.nbytes


def test_auto_counts_passes_over_the_source_when_the_data_are_streamed():
    """With every round reading the data from their source, ``solver="auto"`` weighs
    methods by their passes: a slow source turns the choice from L-BFGS (many cheap
    rounds) to Newton (few rounds, each dearer in compute)."""
    from daskglm.estimators.auto_choice import choose_solver as _choose_solver
    from daskglm.model.families import Binomial
    from daskglm.model.penalties import L2
    from daskglm.model.problem import Problem

    problem = Problem(Binomial(), L2(1e-4), True, 50)
    assert _choose_solver(problem, 100_000, 1e-4, 2) == "lbfgs"
    assert _choose_solver(problem, 100_000, 1e-4, 2, pass_seconds=1.0) == "newton"


def test_a_streamed_fit_chooses_its_solver_from_the_measured_pass(store):
    X, y, _ = store
    streamed = daskglm.LogisticRegression(cache="none").fit(X, y)
    value, reason = streamed.comm_.choices["solver"]
    assert value == streamed.comm_.method and "read from their source" in reason
    cached = daskglm.LogisticRegression(cache="memory").fit(X, y)
    assert "solver" not in cached.comm_.choices


def _kept_x_dtypes(engine, client):
    """The dtype of ``X`` in each partition the engine keeps in memory, in order."""
    from distributed import Future

    parts = [part.result() if isinstance(part, Future) else part for part in engine.parts
             if isinstance(part, (tuple, Future))]
    return [part[0].dtype for part in parts]


@pytest.mark.parametrize("where", ["in-process", "cluster"])
def test_float32_copies_keep_twice_the_rows_when_asked(store, where, request, monkeypatch):
    """Free memory for two of the six partitions as read (float64): with
    ``daskglm.kept-copies="float32"`` four are kept, as float32 copies, and two read from
    the store in every round; rounds read the partitions' bytes as read, and the fit is
    that of X rounded to float32 on the kept rows."""
    import dask

    from daskglm.engine import make_engine
    from daskglm.model.families import Binomial

    client = request.getfixturevalue("client") if where == "cluster" else None
    X, y, _ = store
    exact = _fit(X, y, "memory")
    monkeypatch.setattr(engine_module, "free_memory", lambda client: X.nbytes)
    assert _fit(X, y, "auto").comm_.choices.get("kept copies") is None  # the default: exact
    data_bytes = X.nbytes + y.nbytes
    with dask.config.set({"daskglm.kept-copies": "float32"}):
        copies = _fit(X, y, "auto")
        with make_engine(X, y, family=Binomial(), client=client, cache="auto") as engine:
            dtypes = _kept_x_dtypes(engine, client)
    assert dtypes == [np.float32] * 4
    assert copies.cache_ == "partial"
    value, reason = copies.comm_.choices["kept copies"]
    assert value == "float32" and "first 4 of 6 partitions (70% of the rows)" in reason
    reads = [r.bytes_read for r in copies.comm_.records]
    assert reads[0] == data_bytes  # the validation round reads everything, once, as float64
    streamed = data_bytes * (700 + 500) // 4000  # the last two chunks' rows
    assert reads[1:] and all(read == streamed for read in reads[1:])
    # X rounded to float32 on 2,800 of 4,000 rows moves these coefficients by about 1e-9
    np.testing.assert_allclose(copies.coef_, exact.coef_, rtol=0, atol=1e-7)
    assert np.any(copies.coef_ != exact.coef_)


def test_float32_copies_of_data_that_fit_keep_everything(store, monkeypatch):
    """Data that fit only as float32 copies are all kept so (``cache_`` "memory"), and a
    partition with a value beyond float32's range is kept as read."""
    import dask

    from daskglm.engine.partitions import _float32_copy

    X, y, _ = store
    monkeypatch.setattr(engine_module, "free_memory", lambda client: 2 * X.nbytes)
    with dask.config.set({"daskglm.kept-copies": "float32"}):
        model = _fit(X, y, "auto")
    assert model.cache_ == "memory" and model.comm_.choices["kept copies"][0] == "float32"
    assert [r.bytes_read for r in model.comm_.records][1:] == [0] * (len(model.comm_.records) - 1)
    big = np.ones((3, 2))
    big[1, 1] = 1e39
    part = (big, np.zeros(3), None)
    assert _float32_copy(part) is part
    assert _float32_copy((big[:1], np.zeros(1), None))[0].dtype == np.float32


def test_an_unknown_kept_copies_value_is_refused_before_any_work(store):
    import dask

    X, y, _ = store
    with dask.config.set({"daskglm.kept-copies": "float16"}), \
            pytest.raises(ValueError, match="daskglm.kept-copies.*'exact' or 'float32'"):
        _fit(X, y, "auto")
