"""Column-block model parallelism (dense X cut into feature blocks) and the layout cost model.

Tolerances: the column-block fit and the in-memory reference L-BFGS (:func:`plain_lbfgs`,
the same iteration on numpy vectors) agree to ``1e-8`` in every coefficient, after the
same 8 iterations on a real two-process LocalCluster (the same iterates), and at
convergence in this process.
"""

import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import daskglm
from daskglm.accounting.costmodel import layout_bytes
from daskglm.accounting.kinds import Kind
from daskglm.compute.vector_free_lbfgs import plain_lbfgs
from tests.conftest import make_data
from tests.test_sharded_lbfgs import TIGHT, C, objective, params_of

BLOCKS = {"sharded": True, "column_blocks": True}


def reference(X, y, max_iter=TIGHT["max_iter"]):
    x, outcome = plain_lbfgs(objective(X, y, 1.0 / (C * X.shape[0])), np.zeros(X.shape[1] + 1),
                             tol=TIGHT["tol"], max_iter=max_iter)
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


def test_column_blocks_need_dense_x_and_sharding():
    import scipy.sparse as sp

    X, y, _ = make_data("binomial", n=200, d=5)
    with pytest.raises(ValueError, match="dense X"):
        daskglm.LogisticRegression(solver="lbfgs", solver_options=BLOCKS).fit(sp.csr_matrix(X), y)
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
    assert sparse["column_blocks"] is None and sparse["best"] == "sharded_rows"
    # ... of a worker's partitions together: d (1 - exp(-z n / W / d)), half of it remote
    on_two = layout_bytes(10**6, 2**24, partitions=20, blocks=2, nonzeros_per_row=50,
                          groups=2, workers=2)
    touched = 2**24 * -np.expm1(-50 * 5e5 / 2**24)
    assert on_two["sharded_rows"] == pytest.approx(16 * touched * 2 / 2)
