"""Multi-output regression: a 2-D ``y``, equal to scikit-learn's, one Gram round for all.

References: scikit-learn's own fits of the same classes on the same weighted data
(``LinearRegression`` and ``Ridge`` in closed form; ``Lasso`` and ``ElasticNet`` by
coordinate descent at tol=1e-14).  Tolerances: 1e-10 on the coefficients for the normal
equations, 1e-8 for the iterative solvers at tol=1e-10.
"""

import dask.array as da
import numpy as np
import pytest
from sklearn import linear_model as sk
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

import daskglm


def _data(n=500, d=6, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 2, size=d) + rng.normal(size=d)
    Y = X @ rng.normal(size=(d, k)) + rng.normal(size=(n, k)) + np.arange(1.0, k + 1)
    return X, Y, rng.uniform(0.2, 3.0, size=n)


CASES = {
    "LinearRegression": (daskglm.LinearRegression(), sk.LinearRegression(), 1e-10),
    "Ridge": (daskglm.Ridge(alpha=3.0), sk.Ridge(alpha=3.0), 1e-10),
    "Ridge-lbfgs": (daskglm.Ridge(alpha=3.0, solver="lbfgs", tol=1e-10), sk.Ridge(alpha=3.0),
                    1e-8),
    "Lasso": (daskglm.Lasso(alpha=0.05, tol=1e-10),
              sk.Lasso(alpha=0.05, tol=1e-14, max_iter=100_000), 1e-8),
    "ElasticNet": (daskglm.ElasticNet(alpha=0.05, l1_ratio=0.3, tol=1e-10),
                   sk.ElasticNet(alpha=0.05, l1_ratio=0.3, tol=1e-14, max_iter=100_000), 1e-8),
    "LinearRegression-positive": (daskglm.LinearRegression(positive=True),
                                  sk.LinearRegression(positive=True), 1e-10),
}


@pytest.mark.parametrize("case", CASES)
def test_multi_output_equals_scikit_learn(case):
    ours, theirs, atol = CASES[case]
    X, Y, w = _data()
    Y[:, 1] = -Y[:, 1]  # some coefficients at the bound for positive=True
    reference = clone(theirs).fit(X, Y, sample_weight=w)
    model = clone(ours).fit(X, Y, sample_weight=w)
    assert model.coef_.shape == reference.coef_.shape == (3, 6)
    assert model.intercept_.shape == (3,)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=atol)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, atol=10 * atol)
    assert model.predict(X).shape == (500, 3)
    np.testing.assert_allclose(model.predict(X), reference.predict(X), atol=100 * atol)
    assert model.score(X, Y, sample_weight=w) == pytest.approx(
        reference.score(X, Y, sample_weight=w), abs=1e-9)
    if model.solver_ == "normal":
        # every target from the one Gram round: the rounds of a single-target fit
        single = clone(ours).fit(X, Y[:, 0], sample_weight=w)
        assert [r.kind for r in model.comm_.records] == [r.kind for r in single.comm_.records]
        assert model.comm_.rounds == 1 and model.n_iter_ == 1  # validation and Gram fused
    else:  # one fit per target, in turn
        validations = [r for r in model.comm_.records if r.kind.startswith("validate")]
        assert len(validations) == 3 and model.n_iter_.shape == (3,)
        assert {entry["target"] for entry in model.history_} == {0, 1, 2}


@pytest.mark.parametrize("ours, theirs", [(daskglm.LinearRegression(), sk.LinearRegression()),
                                          (daskglm.Ridge(), sk.Ridge()),
                                          (daskglm.Lasso(alpha=0.01), sk.Lasso(alpha=0.01))],
                         ids=["LinearRegression", "Ridge", "Lasso"])
def test_one_column_shapes_as_scikit_learn(ours, theirs):
    X, Y, _ = _data(k=1)
    ours, theirs = clone(ours).fit(X, Y), clone(theirs).fit(X, Y)
    assert ours.coef_.shape == theirs.coef_.shape
    assert np.shape(ours.intercept_) == np.shape(theirs.intercept_)
    assert ours.predict(X).shape == theirs.predict(X).shape
    assert ours.score(X, Y) == pytest.approx(theirs.score(X, Y), abs=1e-6)


def test_no_intercept_as_scikit_learn():
    X, Y, _ = _data()
    ours = daskglm.LinearRegression(fit_intercept=False).fit(X, Y)
    theirs = sk.LinearRegression(fit_intercept=False).fit(X, Y)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-10)
    assert ours.intercept_ == theirs.intercept_ == 0.0


def test_float32_and_sparse_input():
    import scipy.sparse as sp

    X, Y, _ = _data()
    X32 = X.astype(np.float32)
    model = daskglm.LinearRegression().fit(X32, Y)
    assert model.coef_.dtype == np.float32 and model.intercept_.dtype == np.float32
    np.testing.assert_allclose(model.coef_, sk.LinearRegression().fit(X32, Y).coef_, rtol=1e-4)
    sparse = daskglm.Ridge(alpha=2.0).fit(sp.csr_matrix(X), Y)
    np.testing.assert_allclose(sparse.coef_, sk.Ridge(alpha=2.0).fit(X, Y).coef_, atol=1e-10)


def _fit_numpy_and_dask(estimator):
    X, Y, w = _data(n=900)
    local = clone(estimator).fit(X, Y, sample_weight=w)
    chunks = (300, 450, 150)
    Xd = da.from_array(X, chunks=(chunks, -1))
    distributed = clone(estimator).fit(Xd, da.from_array(Y, chunks=(chunks, -1)),
                                       sample_weight=da.from_array(w, chunks=chunks))
    np.testing.assert_allclose(distributed.coef_, local.coef_, atol=1e-9)
    np.testing.assert_allclose(distributed.intercept_, local.intercept_, atol=1e-9)
    return X, Xd, local, distributed


def test_dask_chunks_on_a_cluster_equal_one_numpy_partition(client):
    X, Xd, local, distributed = _fit_numpy_and_dask(daskglm.Ridge(alpha=3.0))
    assert distributed.comm_.engine == "distributed" and distributed.comm_.rounds == 1
    predicted = distributed.predict(Xd)
    assert isinstance(predicted, da.Array) and predicted.shape == (900, 3)
    np.testing.assert_allclose(predicted.compute(), local.predict(X), atol=1e-8)


def test_targets_in_turn_on_dask_chunks_equal_one_numpy_partition():
    # one fit per target: each is an ordinary fit, distributed as any other
    _, _, _, distributed = _fit_numpy_and_dask(
        daskglm.Ridge(alpha=3.0, solver="lbfgs", tol=1e-10))
    assert distributed.comm_.count("validate_gradient") == 3  # validation + first evaluation


def test_bad_targets_are_rejected_before_any_work():
    X, Y, _ = _data()
    bad = Y.copy()
    bad[3, 1] = np.nan
    model = daskglm.LinearRegression()
    with pytest.raises(ValueError, match="NaN"):
        model.fit(X, bad)
    with pytest.raises(ValueError, match="inconsistent|rows"):
        model.fit(X, Y[:-1])
    assert not hasattr(model, "coef_")


def test_check_estimator_with_multi_output_tag():
    estimator = daskglm.Lasso(alpha=0.01)
    assert estimator.__sklearn_tags__().target_tags.multi_output
    results = check_estimator(estimator, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert failed == []
