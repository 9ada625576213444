"""Multinomial logistic regression, class weights and starting coefficients.

The references are scikit-learn's ``LogisticRegression`` on the same objective: its
``newton-cg`` solver reaches the optimum to round-off (largest gradient entry about 1e-13),
its ``lbfgs`` stops at a largest gradient entry of about 1e-8, so coefficients are compared
at relative tolerance 1e-8 (absolute 1e-9) with the first and 1e-6 with the second.
"""

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression as SkLogisticRegression

import daskglm
from daskglm.compute.multinomial import multinomial_loss_grad, multinomial_loss_grad_hess

CLASS_NAMES = np.array(["ant", "bee", "cat", "dog", "eel"])


def _data(n_classes, n=400, d=5, seed=0):
    """Separable-ish classes with string labels and positive weights."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n)
    X = rng.normal(size=(n, d)) + 0.8 * np.eye(n_classes, d)[labels] * 2.0
    X[:, -1] = X[:, -1] * 2.0 + 1.0  # an offset, differently scaled column
    weight = rng.uniform(0.5, 2.0, n)
    return X, CLASS_NAMES[labels], weight


def _reference(X, y, weight, C=0.7, solver="newton-cg", **params):
    return SkLogisticRegression(C=C, tol=1e-12, max_iter=10_000, solver=solver,
                                **params).fit(X, y, sample_weight=weight)


def _assert_same_model(ours, reference, rtol, atol):
    np.testing.assert_array_equal(ours.classes_, reference.classes_)
    assert ours.coef_.shape == reference.coef_.shape
    assert ours.intercept_.shape == reference.intercept_.shape
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=rtol, atol=atol)
    np.testing.assert_allclose(ours.intercept_, reference.intercept_, rtol=rtol, atol=atol)


@pytest.mark.parametrize("n_classes", [3, 5])
@pytest.mark.parametrize("solver", ["lbfgs", "gd", "newton"])
def test_multinomial_coefficients_equal_scikit_learn(solver, n_classes):
    X, y, weight = _data(n_classes)
    ours = daskglm.LogisticRegression(C=0.7, solver=solver, tol=1e-10, max_iter=5000)
    ours.fit(X, y, sample_weight=weight)
    assert ours.converged_
    reference = _reference(X, y, weight)
    # newton-cg reaches round-off: 1e-8 relative (1e-9 absolute); scikit-learn's lbfgs stops earlier: 1e-6
    _assert_same_model(ours, reference, rtol=1e-8, atol=1e-9)
    _assert_same_model(ours, _reference(X, y, weight, solver="lbfgs"), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours.predict_proba(X), reference.predict_proba(X), atol=1e-9)
    np.testing.assert_allclose(ours.decision_function(X), reference.decision_function(X),
                               rtol=1e-8, atol=1e-8)
    np.testing.assert_array_equal(ours.predict(X), reference.predict(X))


def test_multinomial_on_a_cluster_equals_in_memory_and_scikit_learn(client):
    X, y, weight = _data(4, n=600)
    # newton: few rounds, each optimum reached to round-off
    in_memory = daskglm.LogisticRegression(C=0.7, tol=1e-10, solver="newton")
    in_memory.fit(X, y, sample_weight=weight)
    _assert_same_model(in_memory, _reference(X, y, weight), rtol=1e-8, atol=1e-9)
    # numeric labels in Dask chunks, found by the validation round and encoded where they live
    labels = da.from_array(np.searchsorted(CLASS_NAMES, y) * 10, chunks=150)
    on_cluster = daskglm.LogisticRegression(C=0.7, tol=1e-10, solver="newton")
    X_dask = da.from_array(X, chunks=(150, 5))
    on_cluster.fit(X_dask, labels, sample_weight=da.from_array(weight, chunks=150))
    # chunks and workers change only the order of additions
    np.testing.assert_allclose(on_cluster.coef_, in_memory.coef_, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(on_cluster.intercept_, in_memory.intercept_, rtol=1e-9, atol=1e-11)
    np.testing.assert_array_equal(on_cluster.classes_, [0, 10, 20, 30])
    kinds = [record.kind for record in on_cluster.comm_.records]
    # the last point, predicted to meet tol, is evaluated without its Hessian
    assert kinds[:2] == ["validate", "encode"] and set(kinds[2:-1]) == {"hessian"}
    assert kinds[-1] == "gradient"
    prob = on_cluster.predict_proba(X_dask)
    assert isinstance(prob, da.Array) and prob.shape == (600, 4)
    np.testing.assert_allclose(prob.compute(), in_memory.predict_proba(X), atol=1e-9)
    np.testing.assert_array_equal(on_cluster.predict(X_dask).compute() // 10,
                                  np.searchsorted(CLASS_NAMES, in_memory.predict(X)))


def test_multinomial_with_string_labels_in_dask_chunks():
    X, y, weight = _data(3, n=300)
    in_memory = daskglm.LogisticRegression(C=0.7, tol=1e-11).fit(X, y, sample_weight=weight)
    ours = daskglm.LogisticRegression(C=0.7, tol=1e-11)
    ours.fit(da.from_array(X, chunks=(70, 5)), da.from_array(y, chunks=70),
             sample_weight=da.from_array(weight, chunks=70))
    np.testing.assert_array_equal(ours.classes_, CLASS_NAMES[:3])
    # other partitions, another path of L-BFGS to the same optimum (largest gradient 1e-11)
    np.testing.assert_allclose(ours.coef_, in_memory.coef_, rtol=1e-9, atol=1e-10)
    decision = ours.decision_function(da.from_array(X, chunks=(70, 5)))
    assert decision.shape == (300, 3)
    np.testing.assert_allclose(decision.compute(), in_memory.decision_function(X), atol=1e-10)
    np.testing.assert_array_equal(ours.predict(da.from_array(X, chunks=(70, 5))).compute(),
                                  in_memory.predict(X))


def test_multinomial_without_intercept_and_on_sparse_input():
    X, y, weight = _data(3)
    for X_in in (X, sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))):
        ours = daskglm.LogisticRegression(C=2.0, fit_intercept=False, tol=1e-10)
        ours.fit(X_in, y, sample_weight=weight)
        reference = _reference(X_in, y, weight, C=2.0, fit_intercept=False)
        _assert_same_model(ours, reference, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("solver", ["auto", "proximal", "newton"])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_multinomial_with_l1_and_elastic_net_penalties_equals_scikit_learn_saga(l1_ratio, solver):
    """Proximal gradient and proximal Newton (each class's block of the quadratic model
    standardised on its own) reach scikit-learn's SAGA optimum; ``auto`` takes one."""
    X, y, _ = _data(3, n=300)
    ours = daskglm.LogisticRegression(C=0.1, l1_ratio=l1_ratio, tol=1e-10, max_iter=5000,
                                      solver=solver)
    ours.fit(X, y)
    assert ours.solver_ in ("proximal", "newton") and ours.converged_
    reference = SkLogisticRegression(C=0.1, l1_ratio=l1_ratio, solver="saga", tol=1e-12,
                                     max_iter=100_000).fit(X, y)
    # saga stops on the change of its iterates: 1e-7 absolute on coefficients of order 1
    _assert_same_model(ours, reference, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(ours.coef_ == 0, reference.coef_ == 0)


def _numeric_gradient(fun, params, step=1e-6):
    grad = np.zeros_like(params)
    for i in range(params.size):
        e = np.zeros_like(params)
        e[i] = step
        grad[i] = (fun(params + e) - fun(params - e)) / (2 * step)
    return grad


@pytest.mark.parametrize("sparse", [False, True])
def test_multinomial_kernels_match_finite_differences(sparse):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 4))
    X = sp.csr_matrix(np.where(X > 0.3, X, 0.0)) if sparse else X
    y = rng.integers(0, 3, 80).astype(float)
    weight = rng.uniform(0.1, 1.0, 80)
    params = rng.normal(size=15) * 0.3
    part = (X, y, weight)
    stats = multinomial_loss_grad_hess(part, params, 3, True)
    first = multinomial_loss_grad(part, params, 3, True)
    assert stats.loss == pytest.approx(first.loss, rel=1e-12)
    np.testing.assert_allclose(stats.grad, first.grad, rtol=1e-12, atol=1e-12)
    numeric = _numeric_gradient(lambda p: multinomial_loss_grad(part, p, 3, True).loss, params)
    np.testing.assert_allclose(first.grad, numeric, rtol=1e-6, atol=1e-6)
    hess_numeric = np.column_stack([
        _numeric_gradient(lambda p, i=i: multinomial_loss_grad(part, p, 3, True).grad[i], params)
        for i in range(15)
    ]).T
    np.testing.assert_allclose(stats.hess, hess_numeric, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats.hess, stats.hess.T, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("n, d, K", [(3000, 60, 3), (20_000, 12, 5)])
def test_multinomial_hessian_equals_the_whole_array_formula(dtype, fit_intercept, n, d, K):
    """Over several row blocks, weighted: ``H_kl = Z^T diag(w p_k (delta_kl - p_l)) Z``
    with ``Z = [X, 1]``; 1e-12 relative (float32 ``X``: its block products may run in
    float32, 2e-6).  60 columns: each pair's product of a block (about 1,100 rows); 12
    columns: every pair from one product of the rows' column products (3 blocks of at
    most 8,192 rows, :mod:`daskglm.compute.softmax_hessian`)."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(n, d)).astype(dtype)
    y = rng.integers(0, K, n).astype(float)
    weight = rng.uniform(0.1, 2.0, n)
    params = rng.normal(size=K * d + K * fit_intercept) * 0.1
    stats = multinomial_loss_grad_hess((X, y, weight), params, K, fit_intercept)
    Z = X.astype(np.float64)
    coef = params[:K * d].reshape(K, d)
    eta = Z @ coef.T + (params[K * d:] if fit_intercept else 0.0)
    prob = np.exp(eta - eta.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    if fit_intercept:
        Z = np.hstack([Z, np.ones((n, 1))])
    blocks = [[Z.T @ ((weight * prob[:, k] * ((k == j) - prob[:, j]))[:, None] * Z)
               for j in range(K)] for k in range(K)]
    expected = np.block(blocks)
    if fit_intercept:  # the parameters are the classes' coefficients, then the intercepts
        order = np.concatenate([np.arange(k * (d + 1), k * (d + 1) + d) for k in range(K)]
                               + [np.arange(K) * (d + 1) + d])
        expected = expected[np.ix_(order, order)]
    rtol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(stats.hess, expected, rtol=rtol,
                               atol=rtol * np.abs(expected).max())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("scale", [0.3, 60.0])
def test_compiled_dense_gradient_equals_the_block_products(dtype, weighted, fit_intercept, scale):
    """The compiled row loop of dense partitions (``compute/softmax_loops.py``) against the
    Hessian kernel's block products (numpy's), over several summing blocks, with
    predictors up to hundreds (``scale=60``: probabilities of 0 and 1 to the last bit):
    1e-12 relative."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1000, 6)).astype(dtype)
    y = rng.integers(0, 4, 1000).astype(float)
    weight = rng.uniform(0.1, 2.0, 1000) if weighted else None
    params = rng.normal(size=4 * 6 + 4 * fit_intercept) * scale
    part = (X, y, weight)
    compiled = multinomial_loss_grad(part, params, 4, fit_intercept)
    blocks = multinomial_loss_grad_hess(part, params, 4, fit_intercept)
    assert compiled.weight == blocks.weight
    assert compiled.loss == pytest.approx(blocks.loss, rel=1e-12)
    np.testing.assert_allclose(compiled.grad, blocks.grad, rtol=1e-12,
                               atol=1e-12 * np.abs(blocks.grad).max())


@pytest.mark.parametrize("bad", [3.0, -1.0, 0.5, np.nan])
def test_compiled_gradient_refuses_targets_that_are_not_class_indices(bad):
    X, y = np.ones((5, 2)), np.array([0.0, 1.0, 2.0, 1.0, bad])
    with pytest.raises(ValueError, match="not a class index"):
        multinomial_loss_grad((X, y, None), np.zeros(6), 3, False)


def test_labels_and_solvers_are_checked_before_any_work():
    X, y, _ = _data(3)
    with pytest.raises(ValueError, match="only one class"):
        daskglm.LogisticRegression().fit(X, np.full(len(y), "ant"))
    with pytest.raises(ValueError, match="does not handle the multinomial model.*'gd', 'lbfgs', 'newton', "
                                         "'proximal'"):
        daskglm.LogisticRegression(solver="admm").fit(X, y)
    with pytest.raises(ValueError, match=r"does not handle the multinomial model.*that can: "
                                         r"\['newton', 'proximal'\]"):
        daskglm.LogisticRegression(solver="averaging", l1_ratio=1.0).fit(X, y)
    with pytest.raises(ValueError, match="multinomial model takes no offset"):
        daskglm.LogisticRegression().fit(X, y, offset=np.zeros(len(y)))
    with pytest.raises(ValueError, match="inference=True is for two classes"):
        daskglm.LogisticRegression(C=np.inf, inference=True).fit(X, y)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("class_weight", ["balanced", {"ant": 3.0, "bee": 0.5}])
def test_class_weight_equals_scikit_learn(class_weight, n_classes):
    X, y, weight = _data(n_classes, n=300)
    ours = daskglm.LogisticRegression(C=0.7, class_weight=class_weight, tol=1e-10)
    ours.fit(X, y, sample_weight=weight)
    reference = _reference(X, y, weight, class_weight=class_weight)
    _assert_same_model(ours, reference, rtol=1e-8, atol=1e-9)
    # on Dask input the balanced weights take one pass over y
    ours_dask = daskglm.LogisticRegression(C=0.7, class_weight=class_weight, tol=1e-10)
    ours_dask.fit(da.from_array(X, chunks=(100, 5)), da.from_array(y, chunks=100),
                  sample_weight=da.from_array(weight, chunks=100))
    # another partitioning, another path to the optimum (largest gradient 1e-10)
    np.testing.assert_allclose(ours_dask.coef_, ours.coef_, rtol=1e-8, atol=1e-8)


def test_bad_class_weight_is_rejected():
    X, y, _ = _data(3, n=60)
    with pytest.raises(ValueError, match="not in class_weight|class labels"):
        daskglm.LogisticRegression(class_weight={"zebra": 2.0}).fit(X, y)
    with pytest.raises(ValueError, match="class_weight must be"):
        daskglm.LogisticRegression(class_weight="even").fit(X, y)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_coef_init_and_warm_start_start_from_the_given_coefficients(n_classes):
    X, y, weight = _data(n_classes, n=300)
    reference = _reference(X, y, weight)
    ours = daskglm.LogisticRegression(C=0.7, tol=1e-8)
    ours.fit(X, y, sample_weight=weight, coef_init=reference.coef_,
             intercept_init=reference.intercept_)
    assert ours.n_iter_ <= 1 and ours.converged_
    _assert_same_model(ours, reference, rtol=1e-8, atol=1e-9)
    cold = daskglm.LogisticRegression(C=0.7, tol=1e-8, warm_start=True)
    cold.fit(X, y, sample_weight=weight)
    cold.set_params(C=0.8).fit(X, y, sample_weight=weight)
    warm_iterations = cold.n_iter_
    fresh = daskglm.LogisticRegression(C=0.8, tol=1e-8).fit(X, y, sample_weight=weight)
    assert warm_iterations < fresh.n_iter_
    # stopped at a largest gradient entry of 1e-8
    _assert_same_model(cold, _reference(X, y, weight, C=0.8), rtol=1e-6, atol=1e-7)


def test_coef_init_of_the_wrong_shape_is_rejected_before_any_work():
    X, y, _ = _data(3, n=60)
    model = daskglm.LogisticRegression()
    with pytest.raises(ValueError, match=r"needs \(3, 5\)"):
        model.fit(X, y, coef_init=np.zeros((1, 5)))
    with pytest.raises(ValueError, match="intercepts have shape"):
        model.fit(X, y, coef_init=np.zeros((3, 5)), intercept_init=np.zeros(2))
    with pytest.raises(ValueError, match="intercept_init needs coef_init"):
        model.fit(X, y, intercept_init=np.zeros(3))
    assert not hasattr(model, "coef_")
    original = X.copy()
    model.fit(X, y, coef_init=np.zeros((3, 5)))
    np.testing.assert_array_equal(X, original)
