"""Data sources: daskglm's zarr layout (formats 2 and 3, dense and sparse) and parquet files
read by Dask DataFrame, each fitted as the same data held in memory."""

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
import sparse
import zarr

import daskglm
from daskglm.io import ELL_FORMAT, load_zarr, write_zarr

FORMATS = pytest.mark.parametrize("zarr_format", [2, 3], ids=["zarr-v2", "zarr-v3"])


def dense_data(n=1000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) + rng.normal(size=d)
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > X.mean(0) @ np.ones(d)).astype(float)
    return X, y, rng.uniform(0.5, 2.0, size=n)


def sparse_matrix(n=1000, d=60, density=0.05, seed=0):
    X = sp.random(n, d, density=density, format="csr", random_state=seed)
    X.data -= 0.5
    return X


def store_format(path):
    return zarr.open_group(str(path), mode="r").metadata.zarr_format


@FORMATS
def test_dense_round_trip(tmp_path, zarr_format):
    X, y, w = dense_data()
    path = tmp_path / "dense.zarr"
    write_zarr(path, da.from_array(X, chunks=(300, 5)), y, w, zarr_format=zarr_format)
    assert store_format(path) == zarr_format
    Xl, yl, wl = load_zarr(path)
    assert Xl.chunks == ((300, 300, 300, 100), (5,))
    assert yl.chunks == wl.chunks == ((300, 300, 300, 100),)
    np.testing.assert_array_equal(Xl.compute(), X)
    np.testing.assert_array_equal(yl.compute(), y)
    np.testing.assert_array_equal(wl.compute(), w)


@FORMATS
def test_uncompressed_and_chosen_codecs(tmp_path, zarr_format):
    X, y, w = dense_data(n=400)
    plain = write_zarr(tmp_path / "plain.zarr", X, y, w, zarr_format=zarr_format,
                       compressor=None)
    packed = write_zarr(tmp_path / "packed.zarr", X, y, w, zarr_format=zarr_format)
    for name in ("X", "y", "sample_weight"):
        assert zarr.open_array(f"{plain}/{name}", mode="r").compressors == ()
        assert zarr.open_array(f"{packed}/{name}", mode="r").compressors != ()
    for path in (plain, packed):
        Xl, yl, wl = load_zarr(path)
        np.testing.assert_array_equal(Xl.compute(), X)
        np.testing.assert_array_equal(wl.compute(), w)
    sparse_plain = write_zarr(tmp_path / "sparse.zarr", sparse_matrix(n=400), y,
                              zarr_format=zarr_format, compressor=None)
    assert zarr.open_array(f"{sparse_plain}/X/data", mode="r").compressors == ()
    if zarr_format == 3:
        from zarr.codecs import BloscCodec

        chosen = write_zarr(tmp_path / "blosc.zarr", X, y, compressor=BloscCodec(cname="lz4"))
        codecs = zarr.open_array(f"{chosen}/X", mode="r").compressors
        assert [type(codec) for codec in codecs] == [BloscCodec]
    with pytest.raises(ValueError, match="compressor must be 'default', None or a codec"):
        write_zarr(tmp_path / "bad.zarr", X, y, compressor="zstd")


def test_numpy_input_is_chunked_and_weights_are_optional(tmp_path):
    X, y, _ = dense_data(n=250)
    write_zarr(tmp_path / "s.zarr", X, y, chunks=100)
    Xl, yl, wl = load_zarr(tmp_path / "s.zarr")
    assert wl is None and Xl.chunks[0] == (100, 100, 50)
    np.testing.assert_array_equal(Xl.compute(), X)


def test_irregular_dask_chunks_are_made_regular(tmp_path):
    X, y, _ = dense_data(n=100)
    Xd = da.from_array(X, chunks=((10, 40, 30, 20), (5,)))
    write_zarr(tmp_path / "s.zarr", Xd, da.from_array(y, chunks=25), chunks=30)
    Xl, yl, _ = load_zarr(tmp_path / "s.zarr")
    assert Xl.chunks[0] == yl.chunks[0] == (30, 30, 30, 10)
    np.testing.assert_array_equal(yl.compute(), y)


@FORMATS
@pytest.mark.parametrize(
    "as_input",
    [
        lambda X: X,
        lambda X: da.from_array(X.toarray(), chunks=(300, X.shape[1])).map_blocks(
            sp.csr_matrix, meta=sp.csr_matrix((0, 0))),
        lambda X: da.from_array(X.toarray(), chunks=(300, X.shape[1])).map_blocks(
            sparse.COO.from_numpy, meta=sparse.COO.from_numpy(np.zeros((0, 0)))),
    ],
    ids=["scipy-csr", "dask-csr-chunks", "dask-pydata-chunks"],
)
def test_sparse_round_trip(tmp_path, zarr_format, as_input):
    X = sparse_matrix()
    y = np.arange(X.shape[0], dtype=float)
    path = tmp_path / "sparse.zarr"
    write_zarr(path, as_input(X), y, chunks=300, zarr_format=zarr_format)
    group = zarr.open_group(str(path), mode="r")
    assert group["X"].attrs["format"] == ELL_FORMAT
    k = int(np.diff(X.indptr).max())
    assert group["X/indices"].shape == group["X/data"].shape == (X.shape[0], k)
    Xl, yl, _ = load_zarr(path)
    assert Xl.chunks == ((300, 300, 300, 100), (X.shape[1],))
    block = Xl.blocks[1].compute()
    assert sp.issparse(block) and block.format == "csr" and block.has_canonical_format
    loaded = Xl.compute()
    assert sp.issparse(loaded) and (loaded != X).nnz == 0
    np.testing.assert_array_equal(yl.compute(), y)


def test_sparse_rows_longer_than_max_row_nnz_are_refused(tmp_path):
    X = sparse_matrix(n=50)
    with pytest.raises(ValueError, match="more than max_row_nnz=1"):
        write_zarr(tmp_path / "s.zarr", X, np.zeros(50), max_row_nnz=1)


def test_an_empty_sparse_row_round_trips(tmp_path):
    X = sp.csr_matrix(np.array([[0.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]]))
    write_zarr(tmp_path / "s.zarr", X, np.zeros(3))
    loaded = load_zarr(tmp_path / "s.zarr")[0].compute()
    assert loaded.nnz == 1 and loaded[1, 1] == 2.0


def test_a_store_written_by_zarr_itself_is_read(tmp_path):
    X, y, _ = dense_data(n=200)
    group = zarr.open_group(str(tmp_path / "plain.zarr"), mode="w", zarr_format=2)
    group.create_array("X", shape=X.shape, chunks=(64, 5), dtype="f8")[:] = X
    group.create_array("y", shape=y.shape, chunks=(64,), dtype="f8")[:] = y
    Xl, yl, wl = load_zarr(tmp_path / "plain.zarr")
    assert Xl.chunks[0] == (64, 64, 64, 8) and wl is None
    np.testing.assert_array_equal(Xl.compute(), X)


def test_load_names_what_is_missing(tmp_path):
    group = zarr.open_group(str(tmp_path / "bad.zarr"), mode="w")
    group.create_array("X", shape=(3, 2), dtype="f8")
    with pytest.raises(ValueError, match="no y"):
        load_zarr(tmp_path / "bad.zarr")


def test_writing_computes_each_chunk_once(tmp_path):
    """X and y of a lazily generated data set are stored in ONE pass over its chunks."""
    calls = []

    def generate(block_id=None):
        calls.append(block_id[0])
        return np.full((10, 3), float(block_id[0]))

    X = da.map_blocks(generate, chunks=((10,) * 6, (3,)), dtype=float)
    y = X.sum(axis=1)
    with dask.config.set(scheduler="threads"):
        write_zarr(tmp_path / "lazy.zarr", X, y)
    assert sorted(calls) == list(range(6))
    np.testing.assert_array_equal(load_zarr(tmp_path / "lazy.zarr")[1].compute()[::10],
                                  3.0 * np.arange(6))


@FORMATS
def test_fit_from_zarr_matches_in_memory(tmp_path, zarr_format):
    X, y, w = dense_data(n=2000)
    write_zarr(tmp_path / "d.zarr", X, y, w, chunks=500, zarr_format=zarr_format)
    Xl, yl, wl = load_zarr(tmp_path / "d.zarr")
    est = daskglm.LogisticRegression(C=1.0, tol=1e-10, max_iter=500)
    from_store = est.fit(Xl, yl, sample_weight=wl).coef_
    in_memory = daskglm.LogisticRegression(C=1.0, tol=1e-10, max_iter=500).fit(
        X, y, sample_weight=w).coef_
    np.testing.assert_allclose(from_store, in_memory, rtol=1e-7)
    assert est.comm_.records[0].partitions == 4  # one partition per zarr chunk


def test_written_and_fitted_on_a_cluster(tmp_path, client):
    X = sparse_matrix(n=1200, d=30, density=0.2)
    y = (X @ np.linspace(-2, 2, 30) > 0).astype(float)
    write_zarr(tmp_path / "c.zarr", X, y, chunks=400)  # the workers write the chunks
    Xl, yl, _ = load_zarr(tmp_path / "c.zarr")
    fit = daskglm.LogisticRegression(C=1.0, tol=1e-8).fit(Xl, yl)
    expected = daskglm.LogisticRegression(C=1.0, tol=1e-8).fit(X, y)
    np.testing.assert_allclose(fit.coef_, expected.coef_, rtol=1e-5, atol=1e-7)


# dask's parquet reader calls a pandas method pandas has deprecated
@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index")
def test_fit_a_dask_dataframe_read_from_parquet(tmp_path):
    """A single-column read fuses files into fewer partitions than the frame reports."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    X, y, _ = dense_data(n=900, d=4)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(target=y)
    dd.from_pandas(frame, npartitions=3).to_parquet(tmp_path / "data.parquet", write_index=False)
    df = dd.read_parquet(tmp_path / "data.parquet")
    assert df.npartitions == 3
    features = ["a", "b", "c", "d"]
    est = daskglm.LogisticRegression(C=1.0, tol=1e-10).fit(df[features], df["target"])
    expected = daskglm.LogisticRegression(C=1.0, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(est.coef_, expected.coef_, rtol=1e-7)
    assert list(est.feature_names_in_) == features
    assert est.score(df[features], df["target"]) == pytest.approx(expected.score(X, y))


def test_write_zarr_takes_a_parquet_datasets_columns(tmp_path):
    """A Dask DataFrame and Series (read from several parquet files, which Dask fuses when
    it counts rows) are written as their values, every row in place."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.standard_normal(900), "b": rng.standard_normal(900),
                          "label": rng.integers(0, 2, 900).astype(float)})
    dd.from_pandas(frame, npartitions=6).to_parquet(tmp_path / "table")
    ddf = dd.read_parquet(tmp_path / "table")
    write_zarr(tmp_path / "data.zarr", ddf[["a", "b"]], ddf["label"], chunks=200)
    X, y, weight = load_zarr(tmp_path / "data.zarr")
    np.testing.assert_array_equal(X.compute(), frame[["a", "b"]].to_numpy())
    np.testing.assert_array_equal(y.compute(), frame.label.to_numpy())
    assert weight is None and X.chunks[0] == (200,) * 4 + (100,)
