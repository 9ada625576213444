"""The validation round's column moments of dense numpy and scipy CSR partitions, in one
compiled read (:mod:`daskglm.compute.moment_loops`): numpy's weighted sums, whatever the
dtype, layout and number of rows; scipy's sparse products, to the bit."""

import numpy as np
import pytest
import scipy.sparse as sp

from daskglm.compute.label_counts import count_labels
from daskglm.compute.moment_loops import BLOCK_ROWS
from daskglm.compute.summaries import column_moments
from tests.conftest import assert_moments_by_class


def reference(X, weight):
    w = np.ones(X.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    X = X.astype(np.float64)
    return w.sum(), w @ X, w @ (X * X)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (BLOCK_ROWS + 1, 7), (3001, 50)])
@pytest.mark.parametrize("weighted", [False, True])
def test_weighted_sums_and_squares(dtype, shape, weighted):
    """Agreement with numpy's float64 products to 1e-12 relative (different summation
    orders); columns with a mean far from zero, as real data have."""
    rng = np.random.default_rng(shape[0])
    X = (rng.normal(size=shape) * 10 + 5).astype(dtype)
    weight = rng.uniform(0, 3, size=shape[0]) if weighted else None
    moments = column_moments((X, None, weight))
    total, sums, squares = reference(X, weight)
    assert moments.weight == pytest.approx(total, rel=1e-12)
    np.testing.assert_allclose(moments.sums, sums, rtol=1e-12, atol=1e-12 * max(total, 1))
    np.testing.assert_allclose(moments.squares, squares, rtol=1e-12)
    assert moments.sums.dtype == moments.squares.dtype == np.float64


def test_any_memory_layout():
    X = np.asfortranarray(np.random.default_rng(0).normal(size=(700, 4)))
    np.testing.assert_allclose(column_moments((X, None, None)).sums, X.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(column_moments((X[::2], None, None)).squares,
                               (X[::2] ** 2).sum(axis=0), rtol=1e-12)


def test_nan_and_overflow_carry_into_the_sums():
    """What summarize's finiteness check reads: NaN stays NaN, a square past 1e308 is inf,
    with no floating-point error even under np.errstate(all="raise")."""
    X = np.ones((5, 3))
    X[2, 1] = np.nan
    X[3, 2] = 1e200
    with np.errstate(all="raise"):
        moments = column_moments((X, None, None))
    assert np.isnan(moments.sums[1]) and np.isnan(moments.squares[1])
    assert np.isfinite(moments.sums[2]) and np.isinf(moments.squares[2])
    assert moments.sums[0] == 5.0 and moments.squares[0] == 5.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (3001, 200)])
def test_csr_sums_and_squares_are_scipys_products(dtype, weighted, shape):
    """One read of a CSR partition's values gives what the two sparse products gave,
    ``X.T @ w`` and ``(X ** 2).T @ w``, to the bit (the same products, in the same order)."""
    rng = np.random.default_rng(shape[0])
    X = sp.random(*shape, density=0.05, format="csr", random_state=rng, dtype=dtype)
    X.data = (X.data * 10 - 5).astype(dtype)
    weight = rng.uniform(0, 3, size=shape[0]) if weighted else None
    moments = column_moments((X, None, weight))
    w = np.ones(shape[0]) if weight is None else weight
    wide = X.astype(np.float64)
    assert moments.weight == pytest.approx(w.sum(), rel=1e-12)
    np.testing.assert_array_equal(moments.sums, wide.T @ w)
    np.testing.assert_array_equal(moments.squares, wide.multiply(wide).T @ w)


def test_csr_moments_by_class():
    """The per-class moments of a CSR partition (the validation round of class labels)
    are the moments of each class's rows (1e-12)."""
    rng = np.random.default_rng(3)
    X = sp.random(2000, 30, density=0.1, format="csr", random_state=rng)
    y = rng.integers(0, 3, 2000).astype(np.float64)
    weight = rng.uniform(0, 2, 2000)
    counts = count_labels((X, y, weight), per_class_moments=True)
    assert_moments_by_class(counts, X.toarray(), y, weight)


def test_csr_nan_carries_into_the_sums():
    X = sp.csr_matrix(np.array([[1.0, 0.0], [np.nan, 2.0]]))
    moments = column_moments((X, None, None))
    assert np.isnan(moments.sums[0]) and moments.sums[1] == 2.0
