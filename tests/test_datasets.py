"""Synthetic data sets: reproducible chunk by chunk, the promised distributions, sparse
variants, and zarr stores written in parallel."""

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
import zarr

import daskglm
from daskglm.datasets import KINDS, make_classification, make_poisson, make_regression

MAKERS = pytest.mark.parametrize("kind", sorted(KINDS))


@MAKERS
@pytest.mark.parametrize("density", [None, 0.1], ids=["dense", "sparse"])
def test_same_seed_same_data_in_any_order(kind, density):
    X1, y1, coef1 = KINDS[kind](1000, 20, chunks=300, random_state=3, density=density)
    X2, y2, coef2 = KINDS[kind](1000, 20, chunks=300, random_state=3, density=density)
    assert X1.chunks == ((300, 300, 300, 100), (20,)) and y1.chunks == ((300, 300, 300, 100),)
    np.testing.assert_array_equal(coef1, coef2)
    # chunk by chunk in reverse order, each in its own computation, against all at once
    blocks = [X2.blocks[i].compute() for i in reversed(range(4))][::-1]
    targets = [y2.blocks[i].compute() for i in reversed(range(4))][::-1]
    stack = sp.vstack if density else np.vstack
    X_all, y_all = dask.compute(X1, y1)
    dense = (lambda a: a.toarray()) if density else np.asarray
    np.testing.assert_array_equal(dense(stack(blocks)), dense(X_all))
    np.testing.assert_array_equal(np.concatenate(targets), y_all)


def test_other_seeds_and_chunks_give_other_data():
    X1 = make_regression(200, 3, chunks=100, random_state=1)[0].compute()
    X2 = make_regression(200, 3, chunks=100, random_state=2)[0].compute()
    assert not np.array_equal(X1, X2)
    X3 = make_regression(200, 3, chunks=50, random_state=1)[0].compute()
    np.testing.assert_array_equal(X3[:50], X1[:50])  # chunk 0 has the same stream
    assert not np.array_equal(X3[50:100], X1[50:100])


@pytest.mark.parametrize("density", [None, 0.5], ids=["dense", "sparse"])
def test_targets_follow_the_family(density):
    X, y, _ = make_classification(3000, 8, chunks=1000, random_state=0, density=density)
    assert set(np.unique(y.compute())) == {0.0, 1.0}
    _, y, _ = make_poisson(3000, 8, chunks=1000, random_state=0, density=density)
    counts = y.compute()
    assert counts.min() >= 0 and np.array_equal(counts, np.round(counts))
    X, y, coef = make_regression(3000, 8, chunks=1000, random_state=0, density=density,
                                 noise=0.0, intercept=-1.5)
    np.testing.assert_allclose(y.compute(), np.asarray(X.compute() @ coef).ravel() - 1.5)


@pytest.mark.parametrize(
    "kind, estimator",
    [
        ("classification", daskglm.LogisticRegression(penalty=None, tol=1e-8)),
        ("regression", daskglm.LinearRegression()),
        ("poisson", daskglm.PoissonRegressor(alpha=0.0, tol=1e-8)),
    ],
    ids=["classification", "regression", "poisson"],
)
def test_the_true_model_is_recovered(kind, estimator):
    X, y, coef = KINDS[kind](40_000, 5, chunks=10_000, random_state=0)
    fit = estimator.fit(X, y)
    np.testing.assert_allclose(np.ravel(fit.coef_), coef, atol=0.06)
    assert float(np.ravel(fit.intercept_)[0]) == pytest.approx(0.5, abs=0.06)


def test_sparse_chunks_are_csr_with_the_requested_density():
    X, _, coef = make_classification(2000, 500, chunks=700, random_state=0, density=0.02)
    assert isinstance(X._meta, sp.csr_matrix)
    block = X.blocks[0].compute()
    assert sp.issparse(block) and block.format == "csr" and block.has_canonical_format
    row_nnz = np.diff(X.compute().indptr)
    assert row_nnz.max() <= 10 and row_nnz.mean() > 9.5  # round(0.02 * 500) drawn per row
    assert coef.std() == pytest.approx(1 / np.sqrt(10), rel=0.2)


@pytest.mark.parametrize("density", [None, 0.05], ids=["dense", "sparse"])
def test_path_writes_the_same_data_to_zarr(tmp_path, density):
    path = tmp_path / "data.zarr"
    X, y, coef = make_poisson(900, 40, chunks=250, random_state=4, path=path, density=density)
    X_mem, y_mem, coef_mem = make_poisson(900, 40, chunks=250, random_state=4, density=density)
    group = zarr.open_group(str(path), mode="r")
    assert ("X/indices" in group) == (density is not None)
    assert X.chunks == X_mem.chunks
    dense = (lambda a: a.toarray()) if density else np.asarray
    np.testing.assert_array_equal(dense(X.compute()), dense(X_mem.compute()))
    np.testing.assert_array_equal(y.compute(), y_mem.compute())
    np.testing.assert_array_equal(coef, coef_mem)


def test_path_generates_each_chunk_once_and_never_the_whole_array(tmp_path):
    """Writing runs one task per chunk for X and y together: no chunk is made twice and
    no task ever returns more than one chunk's rows."""
    X, y, _ = make_regression(1000, 4, chunks=100, random_state=0)
    largest, generated = [], []

    class Watch(dask.callbacks.Callback):
        def _posttask(self, key, result, dsk, state, worker_id):
            if hasattr(result, "shape") and len(result.shape) > 0:
                largest.append(result.shape[0])
            if str(key).startswith("('_features"):
                generated.append(key)

    from daskglm.io import write_zarr

    with Watch(), dask.config.set(scheduler="threads"):
        write_zarr(tmp_path / "d.zarr", X, y, chunks=100)
    assert largest and max(largest) <= 100
    assert len(generated) == len(set(generated)) == 10


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"density": 0.0}, "density"),
        ({"density": 1.5}, "density"),
        ({"chunks": 0}, "chunks"),
        ({"random_state": -1}, "random_state"),
    ],
    ids=["zero-density", "density-above-1", "zero-chunks", "negative-seed"],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_classification(100, 5, **kwargs)


def test_dask_arrays_are_lazy():
    X, y, _ = make_classification(10**9, 1000, chunks=10**7, random_state=0)  # 8 TB if made
    assert X.shape == (10**9, 1000) and X.numblocks == (100, 1) and isinstance(y, da.Array)
