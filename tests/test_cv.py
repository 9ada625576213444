"""Penalties chosen by cross-validation, against scikit-learn's CV estimators on the same folds.

The folds are passed explicitly (``KFold``/``StratifiedKFold`` without shuffling) so both
libraries hold out the same rows.  RidgeCV (k-fold and leave-one-out) is exact linear
algebra on both sides (tolerance 1e-9 relative); the iterative fits stop at ``tol`` (largest gradient entry, or
distance to the subdifferential), scikit-learn's at its own criterion, so coefficients and
held-out errors are compared at 1e-6.
"""

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import linear_model as sk
from sklearn.metrics import log_loss
from sklearn.model_selection import KFold, ShuffleSplit, StratifiedKFold

import daskglm


def _regression(n=240, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 1] = X[:, 1] * 3.0 + 2.0
    coef = rng.normal(size=d)
    coef[:2] = 0.0  # two irrelevant columns, for the lasso
    y = X @ coef + 1.5 + 2.0 * rng.normal(size=n)
    return X, y


def _classification(n_classes, n=240, d=5, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    scores = X[:, :n_classes] * 1.5 + rng.normal(size=(n, n_classes))
    labels = np.array(["north", "east", "south", "west"])[:n_classes]
    return X, labels[np.argmax(scores, axis=1)]


RIDGE_ALPHAS = np.logspace(-2, 3, 12)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("scoring", [None, "neg_mean_squared_error"])
def test_ridge_cv_equals_scikit_learn_from_one_pass(scoring, fit_intercept):
    X, y = _regression()
    ours = daskglm.RidgeCV(alphas=RIDGE_ALPHAS, cv=KFold(4), scoring=scoring,
                           fit_intercept=fit_intercept).fit(X, y)
    reference = sk.RidgeCV(alphas=RIDGE_ALPHAS, cv=KFold(4), scoring=scoring,
                           fit_intercept=fit_intercept).fit(X, y)
    assert ours.alpha_ == reference.alpha_
    assert ours.best_score_ == pytest.approx(reference.best_score_, rel=1e-9)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-9, atol=1e-12)
    assert ours.intercept_ == pytest.approx(reference.intercept_, rel=1e-9, abs=1e-12)
    assert ours.cv_scores_.shape == ours.mse_path_.shape == (RIDGE_ALPHAS.size, 4)
    # one pass over the data for every fold and alpha
    assert [r.kind for r in ours.comm_.records] == ["validate", "fold_gram"]


@pytest.mark.parametrize("cv", [None, KFold(3)], ids=["leave-one-out", "k-fold"])
def test_ridge_cv_on_sparse_input_equals_dense(cv):
    X, y = _regression()
    X[np.abs(X) < 0.8] = 0.0
    dense = daskglm.RidgeCV(alphas=RIDGE_ALPHAS, cv=cv).fit(X, y)
    sparse = daskglm.RidgeCV(alphas=RIDGE_ALPHAS, cv=cv).fit(sp.csr_matrix(X), y)
    assert sparse.alpha_ == dense.alpha_
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-9)
    assert sparse.best_score_ == pytest.approx(dense.best_score_, rel=1e-9)


def test_ridge_cv_with_weights_equals_scikit_learn():
    X, y = _regression()
    weight = np.random.default_rng(5).uniform(0.2, 3.0, len(y))
    ours = daskglm.RidgeCV(alphas=RIDGE_ALPHAS, cv=5).fit(X, y, sample_weight=weight)
    reference = sk.RidgeCV(alphas=RIDGE_ALPHAS, cv=KFold(5)).fit(X, y, sample_weight=weight)
    assert ours.alpha_ == reference.alpha_
    assert ours.best_score_ == pytest.approx(reference.best_score_, rel=1e-9)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-9)
    # the held-out errors of the chosen alpha, refitted fold by fold by scikit-learn
    for fold, (train, test) in enumerate(KFold(5).split(X)):
        model = sk.Ridge(alpha=ours.alpha_).fit(X[train], y[train], sample_weight=weight[train])
        mse = np.average((y[test] - model.predict(X[test])) ** 2, weights=weight[test])
        best = list(RIDGE_ALPHAS).index(ours.alpha_)
        assert ours.mse_path_[best, fold] == pytest.approx(mse, rel=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("scoring", [None, "neg_mean_squared_error", "r2"])
def test_ridge_leave_one_out_equals_scikit_learn(scoring, fit_intercept, weighted):
    X, y = _regression(n=150)
    weight = np.random.default_rng(6).uniform(0.2, 3.0, len(y)) if weighted else None
    params = dict(alphas=RIDGE_ALPHAS, scoring=scoring, fit_intercept=fit_intercept,
                  store_cv_results=True)
    ours = daskglm.RidgeCV(**params).fit(X, y, sample_weight=weight)
    reference = sk.RidgeCV(**params).fit(X, y, sample_weight=weight)
    assert ours.alpha_ == reference.alpha_
    assert ours.best_score_ == pytest.approx(reference.best_score_, rel=1e-9)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.cv_results_, reference.cv_results_, rtol=1e-9, atol=1e-10)
    # one Gram pass, then one pass for every row's leverage and error at every alpha
    assert [r.kind for r in ours.comm_.records] == ["validate", "gram", "leave_one_out"]


def test_ridge_cv_on_a_cluster_equals_in_memory(client):
    X, y = _regression()
    in_memory = daskglm.RidgeCV(alphas=RIDGE_ALPHAS, cv=KFold(4)).fit(X, y)
    ours = daskglm.RidgeCV(alphas=RIDGE_ALPHAS, cv=KFold(4))
    ours.fit(da.from_array(X, chunks=(50, 6)), da.from_array(y, chunks=50))
    assert ours.alpha_ == in_memory.alpha_
    np.testing.assert_allclose(ours.coef_, in_memory.coef_, rtol=1e-10)
    np.testing.assert_allclose(ours.cv_scores_, in_memory.cv_scores_, rtol=1e-10)
    assert [r.kind for r in ours.comm_.records] == ["validate", "sizes", "fold_gram"]
    leave_one_out = daskglm.RidgeCV(alphas=RIDGE_ALPHAS, store_cv_results=True)
    leave_one_out.fit(da.from_array(X, chunks=(50, 6)), da.from_array(y, chunks=50))
    reference = sk.RidgeCV(alphas=RIDGE_ALPHAS, store_cv_results=True).fit(X, y)
    assert leave_one_out.alpha_ == reference.alpha_
    np.testing.assert_allclose(leave_one_out.cv_results_, reference.cv_results_, rtol=1e-9)


def test_lasso_cv_equals_scikit_learn_on_its_grid_and_on_given_alphas():
    X, y = _regression()
    for alphas in (15, np.logspace(-3, 0, 8)):
        ours = daskglm.LassoCV(alphas=alphas, cv=KFold(4), tol=1e-9, max_iter=5000).fit(X, y)
        reference = sk.LassoCV(alphas=alphas, cv=KFold(4), tol=1e-12, max_iter=100_000).fit(X, y)
        np.testing.assert_allclose(ours.alphas_, reference.alphas_, rtol=1e-12)
        assert ours.alpha_ == pytest.approx(reference.alpha_, rel=1e-12)  # the same grid point
        np.testing.assert_allclose(ours.mse_path_, reference.mse_path_, rtol=1e-6)
        np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-6, atol=1e-7)
        assert ours.intercept_ == pytest.approx(reference.intercept_, rel=1e-6)


def test_lasso_cv_on_dask_chunks_in_process_equals_in_memory():
    X, y = _regression()
    params = dict(alphas=np.logspace(-2, 0, 4), cv=KFold(3), tol=1e-10, max_iter=5000)
    in_memory = daskglm.LassoCV(**params).fit(X, y)
    chunked = daskglm.LassoCV(**params)
    # five partitions cut across the folds' boundaries: the fold indices follow the rows
    chunked.fit(da.from_array(X, chunks=(50, 6)), da.from_array(y, chunks=50))
    assert chunked.alpha_ == in_memory.alpha_
    np.testing.assert_allclose(chunked.mse_path_, in_memory.mse_path_, rtol=1e-9)
    np.testing.assert_allclose(chunked.coef_, in_memory.coef_, rtol=1e-8, atol=1e-10)
    kinds = [r.kind for r in chunked.comm_.records]
    # one round for every fold's Gram statistics; the paths are solved on the driver, the
    # only other rounds are the final fit's
    assert kinds[:3] == ["validate", "sizes", "fold_gram"] and kinds.count("fold_gram") == 1
    assert "held_out" not in kinds and "fold_moments" not in kinds
    assert set(kinds[3:]) == {"gradient"}  # the final fit on all rows
    # solver="proximal" keeps every iteration of the folds' paths a round on the data,
    # the three folds' rounds shared (their moments and scores too)
    iterative = daskglm.LassoCV(solver="proximal", **params)
    iterative.fit(da.from_array(X, chunks=(50, 6)), da.from_array(y, chunks=50))
    kinds = [r.kind for r in iterative.comm_.records]
    assert kinds.count("held_out") == 1 and kinds.count("fold_moments") == 1
    np.testing.assert_allclose(iterative.mse_path_, in_memory.mse_path_, rtol=1e-8)


def test_elastic_net_cv_chooses_alpha_and_l1_ratio_as_scikit_learn():
    X, y = _regression()
    ours = daskglm.ElasticNetCV(l1_ratio=[0.2, 0.7, 1.0], alphas=8, cv=KFold(3), tol=1e-9,
                                max_iter=5000).fit(X, y)
    reference = sk.ElasticNetCV(l1_ratio=[0.2, 0.7, 1.0], alphas=8, cv=KFold(3), tol=1e-12,
                                max_iter=100_000).fit(X, y)
    assert ours.l1_ratio_ == reference.l1_ratio_
    assert ours.alpha_ == pytest.approx(reference.alpha_, rel=1e-12)  # the same grid point
    assert ours.mse_path_.shape == (3, 8, 3)
    np.testing.assert_allclose(ours.alphas_, reference.alphas_, rtol=1e-12)
    np.testing.assert_allclose(ours.mse_path_, reference.mse_path_, rtol=1e-6)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-6, atol=1e-7)
    assert ours.solver_ == "proximal" and ours.converged_


@pytest.mark.parametrize("n_classes", [2, 3])
def test_logistic_regression_cv_equals_scikit_learn(n_classes):
    X, y = _classification(n_classes)
    Cs = np.logspace(-3, 2, 6)
    ours = daskglm.LogisticRegressionCV(Cs=Cs, cv=StratifiedKFold(4), scoring="neg_log_loss",
                                        solver="newton", tol=1e-10).fit(X, y)
    reference = sk.LogisticRegressionCV(
        Cs=Cs, cv=StratifiedKFold(4), scoring="neg_log_loss", solver="newton-cg", tol=1e-12,
        max_iter=10_000, l1_ratios=(0.0,), use_legacy_attributes=True,
    ).fit(X, y)
    np.testing.assert_array_equal(ours.C_, reference.C_)
    np.testing.assert_array_equal(ours.Cs_, reference.Cs_)
    assert ours.scores_.keys() == reference.scores_.keys()
    for label, scores in reference.scores_.items():
        np.testing.assert_allclose(ours.scores_[label], np.squeeze(scores), rtol=1e-8)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ours.intercept_, reference.intercept_, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(ours.predict(X), reference.predict(X))


def test_logistic_regression_cv_over_l1_ratios_equals_scikit_learn():
    X, y = _classification(2, n=200)
    Cs, ratios, folds = [0.01, 0.1, 1.0], [0.5, 1.0], StratifiedKFold(3)
    ours = daskglm.LogisticRegressionCV(Cs=Cs, l1_ratios=ratios, cv=folds, tol=1e-9,
                                        scoring="neg_log_loss", max_iter=5000).fit(X, y)
    reference = sk.LogisticRegressionCV(
        Cs=Cs, l1_ratios=ratios, cv=folds, scoring="neg_log_loss", solver="saga", tol=1e-12,
        max_iter=100_000, use_legacy_attributes=True, random_state=0,
    ).fit(X, y)
    positive = ours.classes_[1]
    np.testing.assert_array_equal(ours.C_, reference.C_)
    np.testing.assert_array_equal(ours.l1_ratio_, reference.l1_ratio_)
    assert ours.scores_[positive].shape == (3, 3, 2)  # folds, Cs, l1_ratios
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-6, atol=1e-7)
    # saga stops far from the optimum at the strongest penalty (C=0.01, where its scores
    # change with its seed by 1e-3): there each fold is refitted by LogisticRegression
    np.testing.assert_allclose(ours.scores_[positive][:, 1:], reference.scores_[positive][:, 1:],
                               rtol=1e-6)
    for fold, (train, test) in enumerate(folds.split(X, y)):
        for k, ratio in enumerate(ratios):
            alone = daskglm.LogisticRegression(C=0.01, l1_ratio=ratio, tol=1e-10, max_iter=5000)
            alone.fit(X[train], y[train])
            held_out = -log_loss(y[test], alone.predict_proba(X[test]))
            assert ours.scores_[positive][fold, 0, k] == pytest.approx(held_out, rel=1e-8)


@pytest.mark.slow  # about 50 rounds on the cluster: 10-25 s on two shared cores
def test_logistic_regression_cv_on_a_cluster_equals_scikit_learn(client):
    X, y = _classification(3, n=180)
    Cs = [0.01, 10.0]
    ours = daskglm.LogisticRegressionCV(Cs=Cs, cv=3, scoring="neg_log_loss", solver="newton",
                                        tol=1e-10)
    ours.fit(da.from_array(X, chunks=(45, 5)), da.from_array(y, chunks=45))
    reference = sk.LogisticRegressionCV(
        Cs=Cs, cv=3, scoring="neg_log_loss", solver="newton-cg", tol=1e-12, max_iter=10_000,
        l1_ratios=(0.0,), use_legacy_attributes=True,
    ).fit(X, y)
    np.testing.assert_array_equal(ours.C_, reference.C_)
    np.testing.assert_allclose(ours.scores_["east"], np.squeeze(reference.scores_["east"]),
                               rtol=1e-8)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-7, atol=1e-9)
    kinds = {r.kind for r in ours.comm_.records}
    # Newton's last step of a path fit, predicted to meet tol, is a gradient round
    assert {"validate", "sizes", "fold_moments", "hessian", "gradient", "held_out"} == kinds


def test_bad_folds_and_grids_are_rejected_before_any_work():
    X, y = _regression(n=40)
    with pytest.raises(ValueError, match="every row exactly once"):  # LassoCV takes them
        daskglm.RidgeCV(cv=ShuffleSplit(3, random_state=0)).fit(X, y)
    with pytest.raises(ValueError, match=r"alphas\[1\] == -1.0, must be > 0.0"):
        daskglm.RidgeCV(alphas=[1.0, -1.0]).fit(X, y)
    with pytest.raises(ValueError, match="scoring must be"):
        daskglm.RidgeCV(scoring="no_such_score").fit(X, y)
    with pytest.raises(ValueError, match="with k folds"):
        daskglm.RidgeCV(scoring="neg_max_error", cv=3).fit(X, y)
    with pytest.raises(ValueError, match="store_cv_results needs cv=None"):
        daskglm.RidgeCV(cv=3, store_cv_results=True).fit(X, y)
    with pytest.raises(ValueError, match="not supported for l1_ratio=0"):
        daskglm.ElasticNetCV(l1_ratio=[0.0, 0.5]).fit(X, y)
    with pytest.raises(ValueError, match="l1_ratio must be"):
        daskglm.ElasticNetCV(l1_ratio=[-0.1, 0.5]).fit(X, y)
    Xc, yc = _classification(2, n=40)
    with pytest.raises(ValueError, match="Cs must be"):
        daskglm.LogisticRegressionCV(Cs=0).fit(Xc, yc)
    with pytest.raises(ValueError, match="only one class"):
        daskglm.LogisticRegressionCV().fit(Xc, np.full(40, "north"))
    original = X.copy()
    daskglm.RidgeCV(cv=3).fit(X, y)
    np.testing.assert_array_equal(X, original)


@pytest.mark.slow  # about two minutes: scikit-learn's whole estimator check suite
@pytest.mark.parametrize("estimator", [
    daskglm.RidgeCV(), daskglm.LassoCV(alphas=5, tol=1e-3),
    daskglm.ElasticNetCV(alphas=5, tol=1e-3), daskglm.LogisticRegressionCV(Cs=3, tol=1e-3, cv=3),  # 3 rows per class in some checks
], ids=lambda estimator: type(estimator).__name__)
def test_scikit_learn_estimator_checks(estimator):
    from sklearn.utils.estimator_checks import check_estimator

    check_estimator(estimator)
