"""scikit-learn's conventions of LassoCV / ElasticNetCV / LogisticRegression, against
scikit-learn on the same data and folds.

``positive``, explicit ``alphas`` grids (checks, layout of ``alphas_``, ``l1_ratio=0``) and
splitters whose test sets do not partition the rows (ShuffleSplit, TimeSeriesSplit).  Path
fits stop at ``tol=1e-10`` (ours) and ``1e-12`` (scikit-learn's coordinate descent): the
grids agree to 1e-12 relative, held-out errors to 1e-8 relative, coefficients to 1e-8
absolute; the chosen alphas are the same grid point.
"""

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn import linear_model as sk
from sklearn.model_selection import GroupKFold, KFold, ShuffleSplit, TimeSeriesSplit

import daskglm


def _regression(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = X @ np.array([0.0, 0.0, 1.5, -2.0, 0.5, -0.3]) + 1.0 + rng.normal(size=n)
    return X, y


def _assert_same_path(ours, reference):
    np.testing.assert_allclose(ours.alphas_, reference.alphas_, rtol=1e-12)
    np.testing.assert_allclose(ours.alpha_, reference.alpha_, rtol=1e-12)
    np.testing.assert_allclose(ours.mse_path_, reference.mse_path_, rtol=1e-8)
    np.testing.assert_allclose(ours.coef_, reference.coef_, atol=1e-8)
    np.testing.assert_allclose(ours.intercept_, reference.intercept_, atol=1e-8)


SPLITTERS = [KFold(4), ShuffleSplit(5, test_size=0.2, random_state=0), TimeSeriesSplit(3)]


@pytest.mark.parametrize("cv", SPLITTERS, ids=lambda cv: type(cv).__name__)
@pytest.mark.parametrize("positive", [False, True], ids=["free", "positive"])
def test_lasso_cv_equals_scikit_learn_for_any_splitter(cv, positive):
    X, y = _regression()
    ours = daskglm.LassoCV(alphas=8, cv=cv, positive=positive, tol=1e-10,
                           max_iter=100_000).fit(X, y)
    reference = sk.LassoCV(alphas=8, cv=cv, positive=positive, tol=1e-12,
                           max_iter=100_000).fit(X, y)
    _assert_same_path(ours, reference)
    if positive:
        assert ours.coef_.min() >= 0
    else:
        assert ours.coef_.min() < 0  # the constraint above is not idle on these data


def test_splits_that_leave_rows_out_equal_scikit_learn():
    """Test sets that overlap and leave rows out (ShuffleSplit with train + test < 1,
    GroupKFold's test sets halved)."""
    X, y = _regression(n=150)
    cv = ShuffleSplit(4, train_size=0.6, test_size=0.25, random_state=3)
    ours = daskglm.ElasticNetCV(alphas=6, l1_ratio=[0.3, 0.9], cv=cv, tol=1e-10,
                                max_iter=100_000).fit(X, y)
    reference = sk.ElasticNetCV(alphas=6, l1_ratio=[0.3, 0.9], cv=cv, tol=1e-12,
                                max_iter=100_000).fit(X, y)
    _assert_same_path(ours, reference)
    groups = np.arange(150) % 10
    folds = [(train, test[: len(test) // 2]) for train, test in GroupKFold(5).split(X, y, groups)]
    ours = daskglm.LassoCV(alphas=5, cv=folds, tol=1e-10, max_iter=100_000).fit(X, y)
    reference = sk.LassoCV(alphas=5, cv=folds, tol=1e-12, max_iter=100_000).fit(X, y)
    _assert_same_path(ours, reference)


def test_splits_that_leave_rows_out_on_a_cluster_equal_in_memory(client):
    """The per-split row codes are cut per partition of a Dask array: the same path up to
    round-off (1e-9)."""
    X, y = _regression(n=150)
    cv = ShuffleSplit(3, train_size=0.6, test_size=0.25, random_state=3)
    in_memory = daskglm.LassoCV(alphas=4, cv=cv).fit(X, y)
    chunked = daskglm.LassoCV(alphas=4, cv=cv).fit(da.from_array(X, chunks=(40, 6)),
                                                   da.from_array(y, chunks=40))
    np.testing.assert_allclose(chunked.mse_path_, in_memory.mse_path_, rtol=1e-9)
    np.testing.assert_allclose(chunked.coef_, in_memory.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(chunked.alpha_, in_memory.alpha_, rtol=1e-12)  # same grid point


def test_explicit_alphas_stay_one_grid_for_several_l1_ratios():
    X, y = _regression()
    options = dict(alphas=[0.1, 1.0, 0.01], l1_ratio=[0.2, 0.8], cv=KFold(3), max_iter=100_000)
    ours = daskglm.ElasticNetCV(tol=1e-10, **options).fit(X, y)
    reference = sk.ElasticNetCV(tol=1e-12, **options).fit(X, y)
    assert ours.alphas_.shape == reference.alphas_.shape == (3,)
    _assert_same_path(ours, reference)
    assert ours.l1_ratio_ == reference.l1_ratio_


def test_l1_ratio_zero_needs_and_takes_an_explicit_grid():
    X, y = _regression()
    with pytest.raises(ValueError, match="not supported for l1_ratio=0"):
        daskglm.ElasticNetCV(l1_ratio=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = daskglm.ElasticNetCV(l1_ratio=0, alphas=[0.1, 10], cv=KFold(3), tol=1e-10).fit(X, y)
    reference = sk.ElasticNetCV(l1_ratio=0, alphas=[0.1, 10], cv=KFold(3), tol=1e-12).fit(X, y)
    _assert_same_path(ours, reference)


@pytest.mark.parametrize("alphas, error, message", [
    ((0.1, -1.0, -10.0), ValueError, r"alphas\[1\] == -1.0, must be >= 0.0."),
    ((1, 1.0, "1"), TypeError, r"alphas\[2\] must be an instance of float, not str"),
])
def test_alphas_are_checked_with_scikit_learns_messages(alphas, error, message):
    X, y = _regression(n=20)
    for cls in (daskglm.LassoCV, sk.LassoCV):
        with pytest.raises(error, match=message):
            cls(alphas=alphas).fit(X, y)


def _user_warnings(estimator, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    return sorted(str(w.message) for w in caught if w.category is UserWarning)


@pytest.mark.parametrize("params, n_warnings", [
    (dict(penalty=None, C=4.0), 1), (dict(penalty="l1", l1_ratio=0.5), 2),
    (dict(penalty="l1", l1_ratio=0.0), 1), (dict(penalty="l2", l1_ratio=1.0), 1),
    (dict(C=np.inf, l1_ratio=0.5), 1), (dict(C=np.inf), 0), (dict(penalty=None), 0),
    (dict(l1_ratio=0.5), 0), (dict(penalty="elasticnet", l1_ratio=0.5), 0),
], ids=str)
def test_logistic_regression_warns_of_ignored_parameters_as_scikit_learn(params, n_warnings):
    """The same UserWarnings, word for word (scikit-learn's FutureWarnings for ``penalty``
    are its own deprecation cycle)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + rng.normal(size=60) > 0).astype(int)
    ours = _user_warnings(daskglm.LogisticRegression(**params), X, y)
    theirs = _user_warnings(sk.LogisticRegression(solver="saga", max_iter=5000, **params), X, y)
    assert ours == theirs
    assert len(ours) == n_warnings


@pytest.mark.parametrize("requested", [False, True], ids=["unweighted", "weighted"])
def test_logistic_cv_routes_metadata_as_scikit_learn(requested):
    """With metadata routing, ``groups`` reach the splitter and ``sample_weight`` reaches
    the scorer only when it asks for it; held-out accuracies are counts, equal exactly
    (the fits agree to 1e-8, far from any decision boundary's tie)."""
    import sklearn
    from sklearn.metrics import get_scorer

    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] - X[:, 1] + rng.normal(size=300) > 0).astype(int)
    weight = np.where(np.arange(300) < 150, 2.0, 1.0)
    groups = np.arange(300) % 6
    with sklearn.config_context(enable_metadata_routing=True):
        fitted = []
        for cls, options in [(daskglm.LogisticRegressionCV, dict(tol=1e-10)),
                             (sk.LogisticRegressionCV, dict(solver="newton-cg", tol=1e-12,
                                                            use_legacy_attributes=True))]:
            scorer = get_scorer("accuracy").set_score_request(sample_weight=requested)
            model = cls(Cs=4, scoring=scorer, cv=GroupKFold(3), **options)
            fitted.append(model.fit(X, y, sample_weight=weight, groups=groups))
        ours, reference = fitted
        np.testing.assert_array_equal(ours.scores_[1], reference.scores_[1])
        np.testing.assert_array_equal(ours.C_, reference.C_)
        np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-6)
        if requested:
            assert ours.score(X, y, sample_weight=weight) == reference.score(X, y, sample_weight=weight)
        else:
            with pytest.raises(TypeError, match="score got unexpected argument"):
                ours.score(X, y, sample_weight=weight)
            assert ours.score(X, y) == reference.score(X, y)
    with pytest.raises(ValueError, match="only supported if enable_metadata_routing=True"):
        daskglm.LogisticRegressionCV(Cs=2).fit(X, y, extra_param=1.0)
    with pytest.raises(ValueError, match="only supported if enable_metadata_routing=True"):
        ours.score(X, y, extra_param=1.0)


@pytest.mark.parametrize("cv, alphas, error, message", [
    (None, (0.0, 1.0, 10.0), ValueError, r"alphas\[0\] == 0.0, must be > 0.0."),
    (None, (1.0, -1.0, -100.0), ValueError, r"alphas\[1\] == -1.0, must be > 0.0"),
    (3, (1.0, -1.0), ValueError, r"alphas\[1\] == -1.0, must be >= 0.0"),
    (None, (1, 1.0, "1"), TypeError, r"alphas\[2\] must be an instance of float, not str"),
    (None, (-0.5,), ValueError, r"alphas == -0.5, must be > 0.0"),
])
def test_ridge_cv_checks_alphas_with_scikit_learns_messages(cv, alphas, error, message):
    X, y = _regression(n=20)
    for cls in (daskglm.RidgeCV, sk.RidgeCV):
        with pytest.raises(error, match=message):
            cls(alphas=alphas, cv=cv).fit(X, y)


@pytest.mark.parametrize("shape", [(30, 4), (6, 10)], ids=["tall", "wide"])
def test_ridge_cv_takes_alpha_zero_with_k_folds(shape):
    """alpha 0 with k folds is least squares (minimum-norm on wide training sets), as
    scikit-learn's Ridge; scores and coefficients to 1e-8 relative."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=shape)
    y = X @ rng.normal(size=shape[1]) + 0.5 * rng.normal(size=shape[0])
    ours = daskglm.RidgeCV(alphas=(0.0, 1.0, 10.0), cv=KFold(3)).fit(X, y)
    reference = sk.RidgeCV(alphas=(0.0, 1.0, 10.0), cv=KFold(3)).fit(X, y)
    assert ours.alpha_ == reference.alpha_
    np.testing.assert_allclose(ours.best_score_, reference.best_score_, rtol=1e-8)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-8, atol=1e-10)
    folds = list(KFold(3).split(X))
    for fold, (train, test) in enumerate(folds):  # every fold's score at alpha 0
        fitted = sk.Ridge(alpha=0.0, solver="svd").fit(X[train], y[train])
        np.testing.assert_allclose(ours.cv_scores_[0, fold], fitted.score(X[test], y[test]),
                                   rtol=1e-8)


@pytest.mark.parametrize("cv", [KFold(4), 10], ids=["4 folds", "one row per fold"])
def test_ridge_cv_explained_variance_with_k_folds_equals_scikit_learn(cv):
    X, y = _regression(n=40)
    alphas = [1e-3, 0.1, 1.0, 10.0, 1e3]
    ours = daskglm.RidgeCV(alphas=alphas, cv=cv, scoring="explained_variance").fit(X[:, :3], y)
    reference = sk.RidgeCV(alphas=alphas, cv=cv, scoring="explained_variance").fit(X[:, :3], y)
    assert ours.alpha_ == reference.alpha_
    np.testing.assert_allclose(ours.best_score_, reference.best_score_, rtol=1e-10)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-10)


def test_lasso_cv_routes_groups_to_the_splitter_as_scikit_learn():
    import sklearn

    X, y = _regression()
    groups = np.arange(120) % 8
    with sklearn.config_context(enable_metadata_routing=True):
        ours = daskglm.LassoCV(alphas=6, cv=GroupKFold(4), tol=1e-10,
                               max_iter=100_000).fit(X, y, groups=groups)
        reference = sk.LassoCV(alphas=6, cv=GroupKFold(4), tol=1e-12,
                               max_iter=100_000).fit(X, y, groups=groups)
    _assert_same_path(ours, reference)
    with pytest.raises(ValueError, match="only supported if enable_metadata_routing=True"):
        daskglm.LassoCV().fit(X, y, groups=groups)


def test_eps_one_is_a_grid_of_alpha_max_as_scikit_learn():
    X, y = _regression()
    ours = daskglm.ElasticNetCV(alphas=3, eps=1, cv=KFold(3)).fit(X, y)
    reference = sk.ElasticNetCV(alphas=3, eps=1, cv=KFold(3)).fit(X, y)
    np.testing.assert_allclose(ours.alphas_, reference.alphas_, rtol=1e-12)
    np.testing.assert_allclose(ours.coef_, 0.0)  # alpha_max zeroes every coefficient
