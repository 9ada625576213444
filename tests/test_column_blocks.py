"""Column-block model parallelism (dense or CSR X cut into feature blocks), its rebuild
after a lost worker, and the layout cost model.

Tolerances: the column-block fit and the in-memory reference L-BFGS (:func:`plain_lbfgs`,
the same iteration on numpy vectors) agree to ``1e-8`` in every coefficient, after the
same 8 iterations on a real two-process LocalCluster (the same iterates), and at
convergence (the same number of iterations) on CSR ``X`` there and in this process.
After a lost worker the fit restarts its L-BFGS memory, so it reaches the reference
only at convergence: ``1e-6``, as the sharded fit's test of the same.
"""

import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import daskglm
from daskglm.accounting.bytemodel import nbytes, payload_model
from daskglm.accounting.costmodel import layout_bytes
from daskglm.accounting.kinds import Kind
from daskglm.optim.vector_free_lbfgs import plain_lbfgs
from tests.conftest import make_data
from tests.test_sharded_lbfgs import (
    TIGHT,
    C,
    chunked,
    coordinates,
    criterion_scales,
    fit_killing_a_worker,
    objective,
    params_of,
    sparse_data,
)

BLOCKS = {"sharded": True, "column_blocks": True}


def reference(X, y, max_iter=TIGHT["max_iter"]):
    x, outcome = plain_lbfgs(objective(X, y, 1.0 / (C * X.shape[0])), np.zeros(X.shape[1] + 1),
                             tol=TIGHT["tol"], max_iter=max_iter,
                             criterion_scales=criterion_scales(X),
                             **coordinates(X, 1.0 / (C * X.shape[0])))
    return x, outcome


def test_column_blocks_on_a_cluster_match_the_reference(client):
    X, y, _ = make_data("binomial", n=2000, d=12)
    Xd, yd = da.from_array(X, chunks=(1000, 12)), da.from_array(y, chunks=1000)
    with pytest.warns(ConvergenceWarning, match="max_iter=8"):
        model = daskglm.LogisticRegression(C=C, solver="lbfgs", solver_options=BLOCKS,
                                           tol=TIGHT["tol"], max_iter=8).fit(Xd, yd)
    expected, outcome = reference(X, y, max_iter=8)
    assert model.n_iter_ == outcome.n_iter == 8
    np.testing.assert_allclose(params_of(model), expected, rtol=0, atol=1e-8)
    report = model.comm_
    assert report.count(Kind.BLOCK_SPLIT) == 1
    assert report.count(Kind.BLOCK_GRADIENT) == report.count(Kind.SHARD_PUSH) > 0
    assert report.count(Kind.SPARSE_GRADIENT) == 0
    # per round: one predictor and one residual per tile (2 row partitions x 2 blocks),
    # plus 16 bytes of identifiers per tile and per row partition's loss
    record = next(r for r in report.records if r.kind == Kind.BLOCK_GRADIENT)
    assert record.bytes_sent == 8 * 2 * 2000 + 16 * 4
    assert record.bytes_returned == 8 * 2 * 2000 + 16 * 2


def test_column_blocks_in_process_with_three_blocks():
    X, y, _ = make_data("binomial", n=1500, d=10)
    model = daskglm.LogisticRegression(C=C, solver="lbfgs",
                                       solver_options={**BLOCKS, "shards": 3}, **TIGHT).fit(X, y)
    expected, outcome = reference(X, y)
    assert model.converged_ and outcome.converged and model.n_iter_ == outcome.n_iter
    np.testing.assert_allclose(params_of(model), expected, rtol=0, atol=1e-8)


def test_sparse_column_blocks_on_a_cluster_match_the_reference(client):
    X, y = sparse_data(n=2000, d=400)
    model = daskglm.LogisticRegression(C=C, solver="lbfgs", solver_options=BLOCKS,
                                       **TIGHT).fit(*chunked(X, y))
    expected, outcome = reference(X, y)
    assert model.converged_ and outcome.converged and model.n_iter_ == outcome.n_iter
    np.testing.assert_allclose(params_of(model), expected, rtol=0, atol=1e-8)
    records = model.comm_.records
    d, rows, blocks = X.shape[1] + 1, [500] * 4, 2
    # the CSR tiles that moved to the other block's worker: at most half of X's tiles
    (split,) = [r for r in records if r.kind == Kind.BLOCK_SPLIT]
    tiles = [X[i:i + 500][:, lo:hi] for i in range(0, 2000, 500) for lo, hi in ((0, 200),
                                                                                  (200, 400))]
    assert 0 < split.bytes_sent <= sum(sorted(nbytes(t) for t in tiles)[-len(tiles) // 2:])
    evaluations = [r for r in records if r.kind == Kind.BLOCK_GRADIENT]
    assert len(evaluations) == model.comm_.count(Kind.SHARD_PULL) >= outcome.n_iter
    for record in records:
        # per evaluation: every tile pulls and pushes its block's parameters (local calls)
        expected_bytes = {
            Kind.BLOCK_GRADIENT: dict(n_rows=sum(rows), blocks=blocks),
            Kind.SHARD_PULL: dict(touched=len(rows) * d, calls=len(rows) * blocks),
            Kind.SHARD_PUSH: dict(touched=len(rows) * d, calls=len(rows) * blocks),
        }.get(record.kind)
        if expected_bytes is not None:
            assert (record.bytes_sent, record.bytes_returned) == payload_model(
                record.kind, n_params=d, partitions=len(rows), **expected_bytes), record.kind


def test_sparse_column_blocks_in_process_with_three_blocks():
    X, y = sparse_data(n=1500, d=300)
    model = daskglm.LogisticRegression(C=C, solver="lbfgs",
                                       solver_options={**BLOCKS, "shards": 3}, **TIGHT).fit(X, y)
    expected, outcome = reference(X, y)
    assert model.converged_ and outcome.converged and model.n_iter_ == outcome.n_iter
    np.testing.assert_allclose(params_of(model), expected, rtol=0, atol=1e-8)


def test_column_block_worker_killed_mid_fit_is_survived(own_client):
    """A worker holding a shard and tiles is killed while it runs one of the fit's tasks:
    the fit cuts the tiles again for the worker left and reaches the reference."""
    X, y = sparse_data(n=2000)
    Xd, yd = chunked(X, y, rows=500)
    model, caught, victim = fit_killing_a_worker(own_client, Xd, yd, BLOCKS)
    assert model.converged_
    assert any("rebuilt" in w and victim in w for w in caught), (victim, caught)
    assert model.comm_.count(Kind.SHARD_LOAD) == model.comm_.count(Kind.BLOCK_SPLIT) == 2
    expected, _ = reference(X, y)
    np.testing.assert_allclose(params_of(model), expected, rtol=0, atol=1e-6)


def test_column_blocks_need_sharding():
    X, y, _ = make_data("binomial", n=200, d=5)
    with pytest.raises(ValueError, match="needs sharded=True"):
        daskglm.LogisticRegression(solver="lbfgs", solver_options={"column_blocks": True}).fit(X, y)


def test_layout_bytes_says_when_column_blocks_win():
    # dense, a row partition has fewer rows than a block has columns: blocks win
    wide = layout_bytes(10**5, 10**6, partitions=8, blocks=2)
    assert wide["best"] == "column_blocks"
    assert wide["column_blocks"] == 16 * 10**5 * 2
    assert wide["sharded_rows"] == wide["whole_vector"] == 16 * 10**6 * 8
    # the whole vector goes once per task; each worker pulls and pushes once, and the
    # shard on its own worker is local
    grouped = layout_bytes(10**5, 10**6, partitions=8, blocks=2, groups=2, workers=2)
    assert grouped["whole_vector"] == 16 * 10**6 * 2
    assert grouped["sharded_rows"] == 16 * 10**6 * 2 / 2
    assert grouped["column_blocks"] == 16 * 10**5 * 2 / 2
    # tall: rows win (and shards move no less than the whole vector on dense rows)
    assert layout_bytes(10**7, 10**4, partitions=8, blocks=2)["best"] == "whole_vector"
    # hashed features: the touched columns of a partition, d (1 - exp(-z n_p / d))
    sparse = layout_bytes(10**6, 2**24, partitions=20, blocks=2, nonzeros_per_row=50)
    touched = 2**24 * -np.expm1(-50 * 5e4 / 2**24)
    assert sparse["sharded_rows"] == pytest.approx(16 * touched * 20)
    # column blocks move 16 n B whether X is dense or sparse: fewer here than the
    # partitions' 2.3e6 touched columns each
    assert sparse["column_blocks"] == 16 * 10**6 * 2 and sparse["best"] == "column_blocks"
    # ... and more than the workers' unions when the rows outnumber the columns
    assert layout_bytes(10**7, 2**20, partitions=20, blocks=2, nonzeros_per_row=50,
                        groups=2, workers=2)["best"] == "sharded_rows"
    # ... of a worker's partitions together: d (1 - exp(-z n / W / d)), half of it remote
    on_two = layout_bytes(10**6, 2**24, partitions=20, blocks=2, nonzeros_per_row=50,
                          groups=2, workers=2)
    touched = 2**24 * -np.expm1(-50 * 5e5 / 2**24)
    assert on_two["sharded_rows"] == pytest.approx(16 * touched * 2 / 2)
    # there the workers' unions (4.4e6 columns each) outnumber the rows: blocks win
    assert on_two["column_blocks"] == 16 * 10**6 * 2 / 2 and on_two["best"] == "column_blocks"
