"""Sparse (CSR) features: the kernels, sparse mini-batch gradients, the lazy L2 update, and
the estimators, which must give the same coefficients on sparse and dense copies of X."""

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
import sparse

import daskglm
from daskglm.accounting.bytemodel import nbytes
from daskglm.compute.csr_products import csr_weighted_gram
from daskglm.compute.kernels import as_csr_or_dense, gram, loss_grad, loss_grad_hess
from daskglm.compute.local_sgd_rounds import _lazy_l2_applies, local_sgd
from daskglm.compute.sparse_vectors import ScaledVector, SparseGradient, column_gradient
from daskglm.compute.stochastic import SGDConfig, batch_loss_grad
from daskglm.compute.summaries import column_moments, summarize
from daskglm.model.families import Binomial, Gaussian, Poisson
from daskglm.model.penalties import L1, L2, NoPenalty
from daskglm.optim.schedules import make_step_rule

N, D = 600, 40
FAMILIES = {"gaussian": Gaussian(), "binomial": Binomial(), "poisson": Poisson()}


def sparse_data(family="binomial", n=N, d=D, density=0.1, seed=0, weights=False):
    """A CSR matrix with uneven column scales and offsets, a target and optional weights."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed,
                  data_rvs=lambda size: rng.normal(1.0, 2.0, size=size))
    eta = X @ rng.normal(scale=0.5, size=d) + 0.3
    if family == "gaussian":
        y = eta + rng.normal(size=n)
    elif family == "binomial":
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    else:
        y = rng.poisson(np.exp(0.5 * eta)).astype(float)
    w = rng.uniform(0.2, 3.0, size=n) if weights else None
    return X, y, w


def dask_csr(X, rows):
    """A Dask array whose chunks are CSR matrices, from a CSR matrix."""
    return da.from_array(X.toarray(), chunks=(rows, X.shape[1])).map_blocks(
        sp.csr_matrix, dtype=X.dtype, meta=sp.csr_matrix((0, 0), dtype=X.dtype)
    )


# the canonical partition layout ---------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda A: sp.coo_matrix(A),
        lambda A: sp.csc_matrix(A),
        lambda A: sp.csr_array(A),
        lambda A: sparse.COO.from_numpy(A),
        lambda A: sparse.GCXS.from_numpy(A, compressed_axes=(1,)),
    ],
    ids=["scipy-coo", "scipy-csc", "scipy-csr-array", "pydata-coo", "pydata-gcxs"],
)
def test_as_csr_or_dense_makes_canonical_csr(make):
    A = sp.random(30, 8, density=0.3, random_state=1).toarray()
    X = as_csr_or_dense(make(A))
    assert sp.issparse(X) and X.format == "csr" and X.has_canonical_format
    np.testing.assert_array_equal(X.toarray(), A)


def test_as_csr_or_dense_sums_duplicates_without_touching_the_input():
    X = sp.csr_matrix((np.array([1.0, 2.0, 5.0]), np.array([3, 3, 0]), np.array([0, 2, 3])),
                      shape=(2, 4))
    out = as_csr_or_dense(X)
    assert out.has_canonical_format and out.nnz == 2 and out[0, 3] == 3.0
    assert X.nnz == 3  # the caller's matrix is left as it was


def test_as_csr_or_dense_converts_dtypes_and_dense_input():
    X = as_csr_or_dense(sp.csr_matrix(np.eye(3, dtype=np.int64)))
    assert X.dtype == np.float64
    assert as_csr_or_dense(sp.csr_matrix(np.eye(3, dtype=np.float32))).dtype == np.float32
    dense = as_csr_or_dense(np.asfortranarray(np.ones((3, 2), dtype=int)))
    assert dense.dtype == np.float64 and dense.flags.c_contiguous


# kernels: sparse equals dense -----------------------------------------------------------------
@pytest.mark.parametrize("weights", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
def test_kernels_agree_on_sparse_and_dense(family, weights, fit_intercept):
    X, y, w = sparse_data(family, weights=weights)
    params = np.random.default_rng(2).normal(scale=0.1, size=D + int(fit_intercept))
    fam = FAMILIES[family]
    for kernel in (loss_grad, loss_grad_hess):
        a = kernel((X, y, w), params, fam, fit_intercept)
        b = kernel((X.toarray(), y, w), params, fam, fit_intercept)
        assert a.weight == b.weight and a.loss == pytest.approx(b.loss, rel=1e-12)
        np.testing.assert_allclose(a.grad, b.grad, rtol=1e-10, atol=1e-10)
        if b.hess is not None:
            np.testing.assert_allclose(a.hess, b.hess, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("weights", [False, True], ids=["unweighted", "weighted"])
def test_gram_and_moments_agree_on_sparse_and_dense(weights):
    X, y, w = sparse_data("gaussian", weights=weights)
    a, b = gram((X, y, w)), gram((X.toarray(), y, w))
    assert a.weight == pytest.approx(b.weight)
    for name in ("mean_x", "mean_y", "sxx", "sxy", "syy"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-10, atol=1e-10)
    a, b = column_moments((X, y, w)), column_moments((X.toarray(), y, w))
    np.testing.assert_allclose(a.sums, b.sums, rtol=1e-12)
    np.testing.assert_allclose(a.squares, b.squares, rtol=1e-12)


def test_sparse_gram_never_densifies_x(monkeypatch):
    X, y, w = sparse_data("gaussian", weights=True)
    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        def guarded(self, *args, _original=cls.toarray, **kwargs):
            assert self.shape[0] == self.shape[1], f"a matrix of shape {self.shape} was densified"
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "toarray", guarded)
    stats = gram((X, y, w))  # only the d x d product X^T W X may be made dense
    assert stats.sxx.shape == (D, D)


def test_gram_of_a_partition_without_weight_is_empty():
    X, y, _ = sparse_data("gaussian", n=20)
    stats = gram((X, y, np.zeros(20)))
    assert stats.weight == 0 and not stats.sxx.any()


def test_summarize_finds_non_finite_sparse_entries():
    X, y, _ = sparse_data("gaussian", n=50)
    X = X.copy()
    X.data[3] = np.nan
    assert "Input X contains NaN or infinity." in summarize((X, y, None), Gaussian()).problems


# estimators: sparse equals dense --------------------------------------------------------------
ESTIMATORS = {
    "lbfgs": lambda: daskglm.LogisticRegression(C=0.5, solver="lbfgs", tol=1e-10, max_iter=500),
    "newton": lambda: daskglm.LogisticRegression(C=0.5, solver="newton", tol=1e-10),
    "proximal": lambda: daskglm.LogisticRegression(
        penalty="l1", C=0.5, solver="proximal", tol=1e-10, max_iter=5000),
    "normal": lambda: daskglm.Ridge(alpha=1.0, solver="normal"),
    "poisson-lbfgs": lambda: daskglm.PoissonRegressor(alpha=0.01, solver="lbfgs", tol=1e-10),
    "admm": lambda: daskglm.GLM("binomial", penalty="l1", alpha=0.005, solver="admm",
                                tol=1e-8, max_iter=2000),
}
FAMILY_OF = {"normal": "gaussian", "poisson-lbfgs": "poisson"}


# ADMM on three Dask chunks (about 4 s, over half the parametrisation's time) runs with -m slow;
# ADMM on one scipy matrix and every other method on Dask chunks run by default
@pytest.mark.parametrize("name, input_kind", [
    pytest.param(name, kind, marks=pytest.mark.slow) if (name, kind) == ("admm", "dask-csr-chunks")
    else (name, kind)
    for name in ESTIMATORS for kind in ("scipy-csr", "dask-csr-chunks")
])
def test_estimators_fit_sparse_as_dense(name, input_kind):
    X, y, w = sparse_data(FAMILY_OF.get(name, "binomial"), weights=True)
    if input_kind == "scipy-csr":
        X_sparse, X_dense = X, X.toarray()
    else:
        X_sparse, X_dense = dask_csr(X, 250), da.from_array(X.toarray(), chunks=(250, D))
    sparse_fit = ESTIMATORS[name]().fit(X_sparse, y, sample_weight=w)
    dense_fit = ESTIMATORS[name]().fit(X_dense, y, sample_weight=w)
    rtol = 1e-5 if name == "admm" else 1e-7
    np.testing.assert_allclose(sparse_fit.coef_, dense_fit.coef_, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(sparse_fit.intercept_, dense_fit.intercept_, rtol=rtol, atol=rtol)
    prediction = sparse_fit.predict(X_sparse)
    np.testing.assert_allclose(np.asarray(prediction), np.asarray(dense_fit.predict(X_dense)))


SGD_OPTIONS = {
    "l2-optimal": {},
    "l2-invscaling": {"learning_rate": "invscaling", "eta0": 0.05},
    "adagrad": {"learning_rate": "adagrad", "eta0": 0.1},
    "elasticnet": {"penalty": "elasticnet", "l1_ratio": 0.5},
    "averaged": {"average": True},
    "local-sgd": {"sync_every": 4},
}


@pytest.mark.parametrize("chunk_rows", [N, 250], ids=["one-partition", "three-partitions"])
@pytest.mark.parametrize("options", list(SGD_OPTIONS))
def test_sgd_fits_sparse_as_dense(options, chunk_rows):
    X, y, _ = sparse_data("binomial")
    params = dict(random_state=7, max_iter=5, tol=None, batch_size=32, **SGD_OPTIONS[options])
    sparse_fit = daskglm.SGDClassifier(**params).fit(dask_csr(X, chunk_rows), y)
    dense_fit = daskglm.SGDClassifier(**params).fit(
        da.from_array(X.toarray(), chunks=(chunk_rows, D)), y)
    assert sparse_fit.t_ == dense_fit.t_
    np.testing.assert_allclose(sparse_fit.coef_, dense_fit.coef_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sparse_fit.intercept_, dense_fit.intercept_, rtol=1e-9, atol=1e-9)


def test_sparse_fit_on_a_cluster_matches_in_process(client):
    X, y, w = sparse_data("binomial", weights=True)
    est = daskglm.LogisticRegression(C=0.5, solver="lbfgs", tol=1e-10, max_iter=500)
    on_cluster = est.fit(dask_csr(X, 150), y, sample_weight=w).coef_
    in_process = daskglm.LogisticRegression(C=0.5, solver="lbfgs", tol=1e-10, max_iter=500).fit(
        X.toarray(), y, sample_weight=w).coef_
    np.testing.assert_allclose(on_cluster, in_process, rtol=1e-7, atol=1e-9)


def test_pydata_sparse_chunks_are_fitted_as_csr():
    X, y, _ = sparse_data("binomial")
    chunks = da.from_array(X.toarray(), chunks=(250, D)).map_blocks(
        sparse.COO.from_numpy, meta=sparse.COO.from_numpy(np.zeros((0, 0))))
    fit = daskglm.LogisticRegression(solver="lbfgs", tol=1e-10).fit(chunks, y)
    expected = daskglm.LogisticRegression(solver="lbfgs", tol=1e-10).fit(X, y)
    np.testing.assert_allclose(fit.coef_, expected.coef_, rtol=1e-7)


# sparse mini-batch gradients ------------------------------------------------------------------
def test_sparse_gradient_sums_exactly_as_dense():
    a = SparseGradient(10, np.array([1, 4], dtype=np.int32), np.array([1.5, -2.0]))
    b = SparseGradient(10, np.array([4, 7], dtype=np.int32), np.array([0.25, 3.0]))
    total = a + b
    assert isinstance(total, SparseGradient)
    np.testing.assert_array_equal(total.toarray(), a.toarray() + b.toarray())
    dense = np.arange(10.0)
    for result in (dense + a, a + dense):
        assert type(result) is np.ndarray
        np.testing.assert_array_equal(result, dense + a.toarray())
    np.testing.assert_array_equal(dense, np.arange(10.0))  # operands unchanged
    assert (SparseGradient.zeros(10) + a).toarray().tolist() == a.toarray().tolist()


def test_sparse_gradient_becomes_dense_when_that_is_smaller():
    a = SparseGradient(4, np.array([0, 1], dtype=np.int32), np.ones(2))
    b = SparseGradient(4, np.array([2, 3], dtype=np.int32), np.ones(2))
    total = a + b  # 4 entries: 48 bytes sparse against 32 dense
    assert type(total) is np.ndarray and total.tolist() == [1.0] * 4


def test_column_gradient_is_the_transpose_product_on_used_columns():
    X, _, _ = sparse_data(n=40, d=1000, density=0.005)
    r = np.random.default_rng(3).normal(size=40)
    columns, values = column_gradient(X, r)
    assert np.array_equal(columns, np.unique(X.indices))
    full = X.T @ r
    np.testing.assert_allclose(values, full[columns], rtol=1e-14)
    assert not np.delete(full, columns).any()


def sgd_config(penalty, d, n, total_weight, rule=None, average_from=None, batch=16):
    rule = make_step_rule("invscaling", 0.05, 0.25) if rule is None else rule
    return SGDConfig(Binomial(), penalty, rule, True, d, batch, n, total_weight, 11,
                     average_from)


@pytest.mark.parametrize("weights", [False, True], ids=["unweighted", "weighted"])
def test_batch_gradient_of_sparse_rows_is_sent_sparse(weights):
    d = 2000
    X, y, w = sparse_data(n=300, d=d, density=0.002, weights=weights)
    config = sgd_config(NoPenalty(), d, 300, 300.0)
    params = np.random.default_rng(0).normal(scale=0.1, size=d + 1)
    sparse_stats = batch_loss_grad((X, y, w), (0, 16), params, config, 5)
    dense_stats = batch_loss_grad((X.toarray(), y, w), (0, 16), params, config, 5)
    assert isinstance(sparse_stats.grad, SparseGradient)
    assert nbytes(sparse_stats) < nbytes(dense_stats) / 10
    np.testing.assert_allclose(sparse_stats.grad.toarray(), dense_stats.grad, rtol=1e-12,
                               atol=1e-15)
    assert sparse_stats.loss == pytest.approx(dense_stats.loss, rel=1e-12)
    assert sparse_stats.weight == dense_stats.weight
    empty = batch_loss_grad((X, y, w), (0, 0), params, config, 5)
    assert isinstance(empty.grad, SparseGradient) and empty.grad.values.size == 0


def test_sgd_rounds_return_fewer_bytes_for_sparse_rows():
    d = 3000
    X, y, _ = sparse_data(n=900, d=d, density=0.002)
    # step-synchronous rounds over the chunks (at "auto" this process joins them into one)
    params = dict(random_state=0, max_iter=1, tol=None, batch_size=16,
                  solver_options={"sync_every": None})
    sparse_fit = daskglm.SGDClassifier(**params).fit(dask_csr(X, 300), y)
    dense_fit = daskglm.SGDClassifier(**params).fit(da.from_array(X.toarray(), chunks=(300, d)), y)

    def returned(fit):
        return sum(r.bytes_returned for r in fit.comm_.records if r.kind == "sgd_batch")

    assert returned(sparse_fit) < returned(dense_fit) / 5
    np.testing.assert_allclose(sparse_fit.coef_, dense_fit.coef_, rtol=1e-10, atol=1e-12)


# the lazy L2 update ---------------------------------------------------------------------------
def test_scaled_vector_scales_in_constant_time_and_stays_exact():
    rng = np.random.default_rng(0)
    reference = rng.normal(size=50)
    vector = ScaledVector(reference)
    for _ in range(2000):  # the scale falls below RESCALE_BELOW and is folded in
        factor = rng.uniform(0.97, 0.999)
        indices = np.unique(rng.integers(0, 50, size=5))
        increments = rng.normal(size=indices.size)
        vector.scale_by(factor)
        reference = reference * factor
        vector.add_at(indices, increments)
        reference[indices] += increments
    np.testing.assert_allclose(vector.toarray(), reference, rtol=1e-9, atol=1e-12)
    vector.scale_by(0.0)
    assert not vector.toarray().any()


@pytest.mark.parametrize(
    "penalty, rule, average_from, lazy",
    [
        (L2(0.01), make_step_rule("invscaling", 0.05, 0.25), None, True),
        (NoPenalty(), make_step_rule("constant", 0.05), None, True),
        (L2(0.01), make_step_rule("optimal", alpha=0.01), None, True),
        (L1(0.01), make_step_rule("invscaling", 0.05, 0.25), None, False),
        (L2(0.01), make_step_rule("adagrad", 0.1), None, False),
        (L2(0.01), make_step_rule("invscaling", 0.05, 0.25), 0, False),
    ],
    ids=["l2", "none", "optimal", "l1-dense-path", "adagrad-dense-path", "averaged-dense-path"],
)
def test_local_sgd_on_sparse_rows_matches_dense(penalty, rule, average_from, lazy):
    d = 500
    X, y, w = sparse_data(n=400, d=d, density=0.01, weights=True)
    config = sgd_config(penalty, d, 400, float(w.sum()), rule, average_from)
    assert _lazy_l2_applies(X, config) is lazy
    params = np.random.default_rng(1).normal(scale=0.1, size=d + 1)
    counts = np.array([16, 0, 16, 16, 3, 16, 16, 16])  # a step without rows still shrinks
    state = rule.init(params)
    a = local_sgd((X, y, w), (0, 0, counts), params, state, None, config)
    b = local_sgd((X.toarray(), y, w), (0, 0, counts), params, state, None, config)
    np.testing.assert_allclose(a.params, b.params, rtol=1e-10, atol=1e-13)
    assert a.loss == pytest.approx(b.loss, rel=1e-10)
    assert a.batch_weight == pytest.approx(b.batch_weight, rel=1e-12)
    np.testing.assert_allclose(a.rate, b.rate, rtol=1e-12)


@pytest.mark.parametrize("dtype, index_dtype", [(np.float64, np.int32), (np.float32, np.int64)],
                         ids=["float64-int32", "float32-int64"])
def test_compiled_weighted_gram_is_the_sparse_product(dtype, index_dtype):
    rng = np.random.default_rng(4)
    X = sp.random(500, 30, density=0.2, format="csr", random_state=4, dtype=dtype)
    X.data[X.indptr[7] : X.indptr[8]] = 0.0
    X.eliminate_zeros()  # row 7 stores no entries
    X = as_csr_or_dense(X)
    assert X.indptr[7] == X.indptr[8]
    X.indices, X.indptr = X.indices.astype(index_dtype), X.indptr.astype(index_dtype)
    h = rng.uniform(0.0, 2.0, size=500)
    h[::9] = 0.0
    reference = (X.T @ sp.diags(h) @ X).toarray()
    got = csr_weighted_gram(X, h)
    np.testing.assert_allclose(got, reference, rtol=1e-12 if dtype == np.float64 else 1e-6,
                               atol=1e-12)
    np.testing.assert_array_equal(got, got.T)
    np.testing.assert_allclose(csr_weighted_gram(X), (X.T @ X).toarray(), rtol=1e-6, atol=1e-12)
    assert csr_weighted_gram(X[:0]).shape == (30, 30)
