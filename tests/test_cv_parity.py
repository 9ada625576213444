"""scikit-learn's fitted attributes and options of the CV estimators, against scikit-learn.

LogisticRegressionCV: ``coefs_paths_``, ``scores_``, ``n_iter_``, ``C_``, ``l1_ratio_`` in
the legacy (dict) and new (array) layouts, ``refit=False`` and any scorer on in-memory
data.  RidgeCV: several targets, ``alpha_per_target``, ``gcv_mode``, ``cv_results_``.
Folds are passed explicitly so both libraries hold out the same rows.  Logistic fits stop
at ``tol`` on both sides (ours 1e-10, scikit-learn's newton-cg 1e-12): coefficients and
scores agree to 1e-6 (relative, absolute 1e-7); the chosen Cs are identical.  Ridge is
exact linear algebra on both sides: 1e-9 relative.
"""

import dask.array as da
import numpy as np
import pytest
from sklearn import linear_model as sk
from sklearn.metrics import get_scorer
from sklearn.model_selection import KFold, StratifiedKFold

import daskglm

CS = np.logspace(-3, 2, 6)


def _classification(n_classes, n=240, d=5, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    scores = X[:, :n_classes] * 1.5 + rng.normal(size=(n, n_classes))
    labels = np.array(["north", "east", "south", "west"])[:n_classes]
    return X, labels[np.argmax(scores, axis=1)]


def _logistic_pair(scoring="neg_log_loss", Cs=CS, folds=4, **options):
    ours = daskglm.LogisticRegressionCV(Cs=Cs, cv=StratifiedKFold(folds), scoring=scoring,
                                        solver="newton", tol=1e-10, **options)
    reference = sk.LogisticRegressionCV(Cs=Cs, cv=StratifiedKFold(folds), scoring=scoring,
                                        solver="newton-cg", tol=1e-12, max_iter=10_000,
                                        l1_ratios=None, **options)
    return ours, reference


def _assert_same(ours, reference, name, rtol=1e-6, atol=1e-7):
    """The attribute ``name`` of both fits: same type, keys, shapes and values."""
    mine, theirs = getattr(ours, name), getattr(reference, name)
    if isinstance(theirs, dict):
        assert isinstance(mine, dict) and list(mine) == list(theirs), name
        for key in theirs:
            np.testing.assert_allclose(mine[key], theirs[key], rtol=rtol, atol=atol,
                                       err_msg=f"{name}[{key}]")
        return
    assert np.shape(mine) == np.shape(theirs), (name, np.shape(mine), np.shape(theirs))
    if np.asarray(theirs).dtype == object:
        np.testing.assert_array_equal(mine, theirs)
    else:
        np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("legacy", [True, False], ids=["legacy", "arrays"])
@pytest.mark.parametrize("refit", [True, False], ids=["refit", "no-refit"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_logistic_cv_attributes_equal_scikit_learn(n_classes, refit, legacy):
    X, y = _classification(n_classes)
    ours, reference = _logistic_pair(refit=refit, use_legacy_attributes=legacy)
    ours.fit(X, y)
    reference.fit(X, y)
    np.testing.assert_array_equal(ours.C_, reference.C_)  # the same choice, exactly
    for name in ("l1_ratio_", "Cs_", "l1_ratios_", "coefs_paths_", "scores_", "coef_",
                 "intercept_"):
        _assert_same(ours, reference, name)
    assert np.shape(ours.n_iter_) == np.shape(reference.n_iter_)
    assert np.all(np.asarray(ours.n_iter_) >= 1)
    np.testing.assert_array_equal(ours.predict(X), reference.predict(X))
    # the rounds: one held-out round for every fold; the final fit only with refit
    kinds = [r.kind for r in ours.comm_.records]
    assert kinds.count("held_out") == 1
    assert ours.converged_


def test_refit_false_averages_each_folds_best_model():
    X, y = _classification(2)
    ours = daskglm.LogisticRegressionCV(Cs=CS, cv=StratifiedKFold(4), refit=False,
                                        solver="newton", tol=1e-10).fit(X, y)
    refitted = daskglm.LogisticRegressionCV(Cs=CS, cv=StratifiedKFold(4), solver="newton",
                                            tol=1e-10).fit(X, y)
    label = ours.classes_[1]
    scores, paths = ours.scores_[label], ours.coefs_paths_[label]
    best = np.argmax(scores, axis=1)
    expected = np.mean([paths[fold, c] for fold, c in enumerate(best)], axis=0)
    np.testing.assert_allclose(ours.coef_[0], expected[:-1], rtol=1e-12)
    assert ours.intercept_[0] == pytest.approx(expected[-1], rel=1e-12)
    assert ours.C_[0] == pytest.approx(np.mean(CS[best]), rel=1e-12)
    # no final fit: the same rounds as the refitted fit, less the fit on all rows
    assert len(ours.comm_.records) < len(refitted.comm_.records)
    np.testing.assert_allclose(ours.coefs_paths_[label], refitted.coefs_paths_[label])


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_refit_false_over_l1_ratios_equals_scikit_learn():
    X, y = _classification(2, n=200)
    Cs, ratios, folds = [0.01, 0.1, 1.0], np.array([0.5, 1.0]), StratifiedKFold(3)
    ours = daskglm.LogisticRegressionCV(Cs=Cs, l1_ratios=ratios, cv=folds, tol=1e-9,
                                        scoring="neg_log_loss", max_iter=5000,
                                        refit=False).fit(X, y)
    reference = sk.LogisticRegressionCV(
        Cs=Cs, l1_ratios=ratios, cv=folds, scoring="neg_log_loss", solver="saga", tol=1e-12,
        max_iter=100_000, use_legacy_attributes=True, random_state=0, refit=False,
    ).fit(X, y)
    positive = ours.classes_[1]
    np.testing.assert_array_equal(ours.C_, reference.C_)
    np.testing.assert_array_equal(ours.l1_ratio_, reference.l1_ratio_)
    assert ours.coefs_paths_[positive].shape == reference.coefs_paths_[positive].shape == (
        3, 3, 2, 6)  # folds, Cs, l1_ratios, features + intercept
    assert ours.n_iter_.shape == reference.n_iter_.shape == (1, 3, 3, 2)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-6, atol=1e-7)


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("scoring,n_classes", [
    ("roc_auc", 2), ("neg_brier_score", 2), ("f1", 2), ("balanced_accuracy", 3),
    ("roc_auc_ovr", 3), ("neg_brier_score", 3), (None, 2), ("accuracy", 3),
])
def test_any_scorer_on_in_memory_data_equals_scikit_learn(scoring, n_classes):
    X, y = _classification(n_classes)
    if scoring == "f1":
        y = (y == "east").astype(int)
    weight = np.random.default_rng(3).uniform(0.5, 2.0, size=y.size)
    ours, reference = _logistic_pair(scoring=scoring, class_weight="balanced",
                                     use_legacy_attributes=True)
    ours.fit(X, y, sample_weight=weight)
    reference.fit(X, y, sample_weight=weight)
    np.testing.assert_array_equal(ours.C_, reference.C_)
    _assert_same(ours, reference, "scores_", rtol=1e-8, atol=1e-9)
    _assert_same(ours, reference, "coef_")


def test_a_callable_scorer_on_in_memory_data():
    X, y = _classification(2)
    scorer = get_scorer("neg_log_loss")
    by_name = daskglm.LogisticRegressionCV(Cs=CS, cv=StratifiedKFold(4), solver="newton",
                                           tol=1e-10, scoring="neg_log_loss").fit(X, y)
    by_callable = daskglm.LogisticRegressionCV(Cs=CS, cv=StratifiedKFold(4), solver="newton",
                                               tol=1e-10, scoring=scorer).fit(X, y)
    label = by_name.classes_[1]
    np.testing.assert_allclose(by_callable.scores_[label], by_name.scores_[label], rtol=1e-10)
    np.testing.assert_array_equal(by_callable.C_, by_name.C_)


def test_scorers_that_need_the_rows_are_refused_on_dask_data():
    X, y = _classification(2, n=80)
    Xd, yd = da.from_array(X, chunks=(20, 5)), da.from_array(y, chunks=20)
    with pytest.raises(ValueError, match="needs in-memory.*'accuracy', 'neg_log_loss'"):
        daskglm.LogisticRegressionCV(Cs=2, scoring="roc_auc").fit(Xd, yd)
    with pytest.raises(ValueError, match="needs in-memory"):
        daskglm.LogisticRegressionCV(Cs=2, scoring=get_scorer("roc_auc")).fit(Xd, yd)
    with pytest.raises(ValueError, match="get_scorer_names"):
        daskglm.LogisticRegressionCV(Cs=2, scoring="no_such_score").fit(X, y)


def test_dask_chunks_give_the_paths_of_in_memory_data():
    X, y = _classification(3, n=180)
    options = dict(Cs=[0.01, 1.0, 10.0], cv=StratifiedKFold(3), scoring="neg_log_loss",
                   solver="newton", tol=1e-10, refit=False)
    in_memory = daskglm.LogisticRegressionCV(**options).fit(X, y)
    chunked = daskglm.LogisticRegressionCV(**options).fit(
        da.from_array(X, chunks=(45, 5)), da.from_array(y, chunks=45))
    for label in in_memory.classes_:
        np.testing.assert_allclose(chunked.coefs_paths_[label], in_memory.coefs_paths_[label],
                                   rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(chunked.scores_[label], in_memory.scores_[label], rtol=1e-10)
    np.testing.assert_array_equal(chunked.C_, in_memory.C_)
    np.testing.assert_allclose(chunked.coef_, in_memory.coef_, rtol=1e-8, atol=1e-10)


# RidgeCV ----------------------------------------------------------------------------------
def _targets(n=40, d=5, seed=42):
    """Three targets whose best alphas differ (the first drives X, the last barely)."""
    rng = np.random.RandomState(seed)
    Y = rng.randn(n, 3)
    X = (Y[:, [0]] @ np.ones((1, d)) + Y[:, [1]] @ np.full((1, d), 0.05)
         + Y[:, [2]] @ np.full((1, d), 0.001) + rng.randn(n, d))
    return X, Y


def _assert_ridge_same(ours, reference):
    for name in ("alpha_", "best_score_", "coef_", "intercept_", "cv_results_"):
        if hasattr(reference, name):
            mine, theirs = getattr(ours, name), getattr(reference, name)
            assert np.shape(mine) == np.shape(theirs), (name, np.shape(mine), np.shape(theirs))
            np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("store", [False, True], ids=["", "stored"])
@pytest.mark.parametrize("weighted", [False, True], ids=["", "weighted"])
@pytest.mark.parametrize("scoring", [None, "r2", "neg_mean_squared_error"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("alpha_per_target", [True, False])
def test_ridge_leave_one_out_of_several_targets_equals_scikit_learn(
        alpha_per_target, fit_intercept, scoring, weighted, store):
    X, Y = _targets()
    weight = np.random.default_rng(0).uniform(0.5, 2.0, Y.shape[0]) if weighted else None
    options = dict(alphas=(1, 100, 1000), fit_intercept=fit_intercept, scoring=scoring,
                   alpha_per_target=alpha_per_target, store_cv_results=store)
    for y in (Y, Y[:, :1]):
        ours = daskglm.RidgeCV(**options).fit(X, y, sample_weight=weight)
        reference = sk.RidgeCV(**options).fit(X, y, sample_weight=weight)
        _assert_ridge_same(ours, reference)
        # every target and alpha from the same two passes over the data
        assert [r.kind for r in ours.comm_.records] == ["validate", "gram", "leave_one_out"]


def test_alpha_per_target_chooses_each_targets_own_alpha():
    X, Y = _targets()
    alphas = (1, 100, 1000)
    alone = [daskglm.RidgeCV(alphas=alphas).fit(X, target).alpha_ for target in Y.T]
    together = daskglm.RidgeCV(alphas=alphas, alpha_per_target=True).fit(X, Y)
    np.testing.assert_array_equal(together.alpha_, alone)
    assert len(set(alone)) > 1  # the targets do want different alphas
    np.testing.assert_allclose(together.coef_, sk.Ridge(alpha=together.alpha_).fit(X, Y).coef_,
                               rtol=1e-9)
    one_alpha = daskglm.RidgeCV(alphas=1, alpha_per_target=True, store_cv_results=True)
    one_alpha.fit(X, Y)
    assert one_alpha.alpha_.shape == one_alpha.best_score_.shape == (3,)
    assert one_alpha.cv_results_.shape == (X.shape[0], 3, 1)
    one_target = daskglm.RidgeCV(alphas=alphas, alpha_per_target=True, store_cv_results=True)
    one_target.fit(X, Y[:, 0])
    assert np.isscalar(one_target.alpha_) and np.isscalar(one_target.best_score_)
    assert one_target.cv_results_.shape == (X.shape[0], len(alphas))


@pytest.mark.parametrize("scoring", [None, "r2", "neg_mean_squared_error"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_ridge_k_fold_of_several_targets_equals_scikit_learn(fit_intercept, scoring):
    X, Y = _targets(n=60)
    weight = np.random.default_rng(1).uniform(0.5, 2.0, Y.shape[0])
    options = dict(alphas=np.logspace(-2, 3, 8), fit_intercept=fit_intercept, scoring=scoring,
                   cv=KFold(4))
    ours = daskglm.RidgeCV(**options).fit(X, Y, sample_weight=weight)
    reference = sk.RidgeCV(**options).fit(X, Y, sample_weight=weight)
    _assert_ridge_same(ours, reference)
    assert ours.cv_scores_.shape == ours.mse_path_.shape == (8, 4)
    assert [r.kind for r in ours.comm_.records] == ["validate", "fold_gram"]


@pytest.mark.parametrize("gcv_mode", [None, "auto", "svd", "eigen"])
def test_every_gcv_mode_gives_the_exact_leave_one_out_choice(gcv_mode):
    X, Y = _targets()
    ours = daskglm.RidgeCV(alphas=(1, 10, 100), gcv_mode=gcv_mode, store_cv_results=True)
    reference = sk.RidgeCV(alphas=(1, 10, 100), gcv_mode=gcv_mode, store_cv_results=True)
    _assert_ridge_same(ours.fit(X, Y), reference.fit(X, Y))


def test_ridge_options_scikit_learn_refuses_are_refused():
    X, Y = _targets()
    for cv in (3, KFold(4)):
        with pytest.raises(ValueError, match="cv!=None and alpha_per_target=True are incompat"):
            daskglm.RidgeCV(cv=cv, alpha_per_target=True).fit(X, Y)
        with pytest.raises(ValueError, match="cv!=None and store_cv_results=True are incompat"):
            daskglm.RidgeCV(cv=cv, store_cv_results=True).fit(X, Y)
    with pytest.raises(ValueError, match="gcv_mode must be"):
        daskglm.RidgeCV(gcv_mode="cholesky").fit(X, Y)


def test_ridge_of_several_targets_on_a_cluster_equals_in_memory(client):
    X, Y = _targets(n=80)
    Xd, Yd = da.from_array(X, chunks=(20, 5)), da.from_array(Y, chunks=(20, 3))
    for options in (dict(alpha_per_target=True, store_cv_results=True), dict(cv=KFold(4))):
        options["alphas"] = (1, 10, 100, 1000)
        in_memory = daskglm.RidgeCV(**options).fit(X, Y)
        on_cluster = daskglm.RidgeCV(**options).fit(Xd, Yd)
        np.testing.assert_array_equal(on_cluster.alpha_, in_memory.alpha_)
        np.testing.assert_allclose(on_cluster.coef_, in_memory.coef_, rtol=1e-10)
        np.testing.assert_allclose(on_cluster.best_score_, in_memory.best_score_, rtol=1e-10)
        if "cv" not in options:
            np.testing.assert_allclose(on_cluster.cv_results_, in_memory.cv_results_,
                                       rtol=1e-9)
            assert [r.kind for r in on_cluster.comm_.records] == ["validate", "gram",
                                                                  "leave_one_out"]


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_scorers_on_sparse_input_and_a_second_fit_with_another_scorer():
    import scipy.sparse as sp

    X, y = _classification(2, n=200)
    X[X < 0.3] = 0.0
    ours, reference = _logistic_pair(scoring="roc_auc", Cs=5, folds=3,
                                     use_legacy_attributes=True)
    ours.fit(sp.csr_matrix(X), y)
    reference.fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(ours.C_, reference.C_)
    _assert_same(ours, reference, "scores_", rtol=1e-10, atol=1e-12)
    # refitted with a scorer of the held-out round: nothing of the first fit's rows is used
    ours.set_params(scoring="neg_log_loss").fit(X, y)
    fresh = daskglm.LogisticRegressionCV(Cs=5, cv=StratifiedKFold(3), scoring="neg_log_loss",
                                         solver="newton", tol=1e-10).fit(X, y)
    _assert_same(ours, fresh, "scores_", rtol=1e-12, atol=0)
    assert "_scoring_data" not in vars(ours)


def test_score_uses_the_scoring_as_scikit_learn():
    from sklearn.metrics import log_loss, roc_auc_score

    X, y = _classification(3)
    weight = np.random.default_rng(2).uniform(0.5, 2.0, size=y.size)
    model = daskglm.LogisticRegressionCV(Cs=3, cv=3, scoring="neg_log_loss").fit(X, y)
    expected = -log_loss(y, model.predict_proba(X), sample_weight=weight)
    assert model.score(X, y, weight) == pytest.approx(expected, rel=1e-12)
    chunked = [da.from_array(a, chunks=80) if a.ndim == 1 else da.from_array(a, chunks=(80, 5))
               for a in (X, y, weight)]
    assert model.score(*chunked) == pytest.approx(expected, rel=1e-12)  # lazily, on Dask
    auc = daskglm.LogisticRegressionCV(Cs=3, cv=3, scoring="roc_auc_ovr").fit(X, y)
    assert auc.score(X, y) == pytest.approx(
        roc_auc_score(y, auc.predict_proba(X), multi_class="ovr"), rel=1e-12)
    with pytest.raises(ValueError, match="needs in-memory data"):
        auc.score(*chunked[:2])


def _negative_max_abs_error(estimator, X, y, sample_weight=None):
    return -np.max(np.abs(estimator.predict(X) - y))


@pytest.mark.parametrize("scoring", ["explained_variance", "neg_mean_absolute_error",
                                     _negative_max_abs_error])
@pytest.mark.parametrize("alpha_per_target", [False, True])
def test_ridge_leave_one_out_with_any_scorer_equals_scikit_learn(scoring, alpha_per_target):
    X, Y = _targets()
    weight = np.random.default_rng(4).uniform(0.5, 2.0, Y.shape[0])
    options = dict(alphas=(1, 10, 100, 1000), scoring=scoring,
                   alpha_per_target=alpha_per_target)
    for y in (Y, Y[:, 1]) if not alpha_per_target else (Y,):
        ours = daskglm.RidgeCV(**options).fit(X, y, sample_weight=weight)
        reference = sk.RidgeCV(**options).fit(X, y, sample_weight=weight)
        _assert_ridge_same(ours, reference)
        # the scorer reads the rows' leave-one-out predictions: still two passes
        assert [r.kind for r in ours.comm_.records] == ["validate", "gram", "leave_one_out"]
    with pytest.raises(ValueError, match="needs in-memory"):
        daskglm.RidgeCV(**options).fit(da.from_array(X, chunks=(20, 5)),
                                       da.from_array(Y, chunks=(20, 3)))
    if scoring != "explained_variance":  # which k folds score from their Gram statistics
        with pytest.raises(ValueError, match="with k folds"):
            daskglm.RidgeCV(cv=3, scoring=scoring).fit(X, Y)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(50, 100), (50, 50), (100, 50)], ids=["wide", "square", "tall"])
def test_ridge_leave_one_out_tends_to_the_minimum_norm_solution(shape, dtype, fit_intercept):
    """alpha -> 0 on rank-deficient Gram matrices: the directions the rows do not span get
    no weight (as scikit-learn's n x n modes), not round-off divided by round-off."""
    if dtype == np.float32 and shape[0] == shape[1] and not fit_intercept:
        pytest.skip("a full-rank random square X is too ill-conditioned for float32 data "
                    "to carry its exact interpolant")
    rng = np.random.default_rng(5)
    X = rng.normal(size=shape)
    y = X @ rng.normal(size=shape[1]) + 10.0
    centred = X - X.mean(axis=0) if fit_intercept else X
    expected = np.linalg.lstsq(centred, y - y.mean() if fit_intercept else y, rcond=None)[0]
    ours = daskglm.RidgeCV(alphas=[1e-16], fit_intercept=fit_intercept)
    ours.fit(X.astype(dtype), y.astype(dtype))
    # float32 data: Gram sums accurate to float32 (squared condition number), so 1e-3;
    # round-off divided by round-off would be off by orders of magnitude
    atol = 1e-3 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(ours.coef_, expected, atol=atol * np.abs(expected).max())
