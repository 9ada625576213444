"""Estimator behaviour at the edges: scores and predictions checked as fits are, extreme
feature scales, dtypes, parameter semantics, progress and warm starts."""

import logging
import re
import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn import linear_model as sk
from sklearn.datasets import make_regression
from sklearn.exceptions import DataConversionWarning, UndefinedMetricWarning

import daskglm
from tests.conftest import make_data


@pytest.fixture
def regression():
    X, y, _ = make_data("gaussian", n=400, d=4)
    return X, y


@pytest.fixture
def classification():
    X, y, _ = make_data("binomial", n=400, d=4)
    return X, y


# score --------------------------------------------------------------------------------------
def _fitted_pair(regression, classification, as_dask):
    """A fitted regressor and classifier, and their data (X as Dask arrays if asked)."""
    X, y = regression
    Xc, yc = classification
    model = daskglm.LinearRegression().fit(X, y)
    clf = daskglm.LogisticRegression().fit(Xc, yc)
    if as_dask:
        X, Xc = da.from_array(X, chunks=(100, -1)), da.from_array(Xc, chunks=(100, -1))
    return model, clf, (X, y), (Xc, yc)


@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy", "dask"])
def test_score_ravels_a_column_vector_y_instead_of_broadcasting(regression, classification,
                                                                  as_dask):
    model, clf, (X, y), (Xc, yc) = _fitted_pair(regression, classification, as_dask)
    # a regressor takes a column y as one target, as scikit-learn's multi-output regressors
    r2 = model.score(X, y.reshape(-1, 1))
    assert r2 == pytest.approx(sk.LinearRegression().fit(np.asarray(X), y).score(np.asarray(X), y))
    with pytest.warns(DataConversionWarning):
        accuracy = clf.score(Xc, yc.reshape(-1, 1))
    assert accuracy == pytest.approx(clf.score(np.asarray(Xc), yc))


@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy", "dask"])
def test_score_rejects_nan_in_y_and_a_wrong_length(regression, classification, as_dask):
    model, clf, (X, y), (Xc, yc) = _fitted_pair(regression, classification, as_dask)
    holed, holed_c = y.copy(), yc.copy()
    holed[3] = np.nan
    holed_c[3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        model.score(X, holed)
    with pytest.raises(ValueError, match="NaN or infinity"):
        clf.score(Xc, holed_c)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        model.score(X, y[:-1])


def test_weighted_score_on_one_sample_is_nan_with_a_warning_as_scikit_learn(regression):
    X, y = regression
    model = daskglm.LinearRegression().fit(X, y)
    with pytest.warns(UndefinedMetricWarning):
        score = model.score(X[:1], y[:1], sample_weight=[2.0])
    assert np.isnan(score)


# predictions on Dask input ------------------------------------------------------------------
def test_dask_predictions_raise_on_nan_or_inf_rows(classification):
    X, y = classification
    clf = daskglm.LogisticRegression().fit(X, y)
    for bad in (np.nan, np.inf):
        holed = X.copy()
        holed[250, 1] = bad
        Xd = da.from_array(holed, chunks=(100, -1))
        for predict in (clf.predict, clf.predict_proba, clf.decision_function):
            lazy = predict(Xd)  # no pass over X until computed
            with pytest.raises(ValueError, match="NaN or infinity"):
                lazy.compute()
        with pytest.raises(ValueError, match="NaN or infinity"):
            clf.score(Xd, y)


# extreme feature scales ---------------------------------------------------------------------
@pytest.mark.parametrize("factor", [1e-200, 1e200], ids=["tiny", "huge"])
@pytest.mark.parametrize("solver", ["normal", "gd", "lbfgs", "newton", "proximal", "admm"])
def test_extreme_feature_scales_give_the_right_unpenalised_model(factor, solver):
    """Columns near the float64 limits are rescaled by powers of two (exact): the model is
    scikit-learn's, R^2 to 1e-10, coefficients to 1e-8 relative."""
    X, y, _ = make_data("gaussian", n=300, d=3)
    model = daskglm.LinearRegression(solver=solver, tol=1e-10, max_iter=2000).fit(X * factor, y)
    reference = sk.LinearRegression().fit(X, y)
    np.testing.assert_allclose(model.coef_ * factor, reference.coef_, rtol=1e-8)
    assert model.intercept_ == pytest.approx(reference.intercept_, rel=1e-8)
    assert model.score(X * factor, y) == pytest.approx(reference.score(X, y), abs=1e-10)
    assert model.converged_


@pytest.mark.parametrize("factor", [1e-200, 1e200], ids=["tiny", "huge"])
@pytest.mark.parametrize("solver", ["gd", "lbfgs", "newton"])
def test_extreme_feature_scales_give_the_right_unpenalised_logistic_model(factor, solver):
    """As above for the logistic loss (C=inf): scikit-learn's coefficients to 1e-8 of the
    largest (the solvers stop at gradient 1e-10)."""
    X, y, _ = make_data("binomial", n=300, d=3)
    model = daskglm.LogisticRegression(C=np.inf, solver=solver, tol=1e-10, max_iter=2000)
    model.fit(X * factor, y)
    reference = sk.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(model.coef_ * factor, reference.coef_, rtol=0,
                               atol=1e-8 * np.abs(reference.coef_).max())
    assert model.converged_


def test_values_near_the_largest_float_fit_or_fail_clearly():
    rng = np.random.default_rng(0)
    X = np.finfo(np.float64).max * rng.uniform(size=(200, 2))
    y = X[:, 0] / np.finfo(np.float64).max + rng.normal(scale=0.1, size=200)
    model = daskglm.LinearRegression().fit(X, y)
    assert np.isfinite(model.intercept_) and np.isfinite(model.coef_).all()
    assert model.score(X, y) > 0.5
    with pytest.raises(ValueError, match="too large or too small"):
        daskglm.Ridge(alpha=1.0).fit(X, y)  # a penalty depends on scales: no silent rescale


# dtypes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy", "dask"])
def test_boolean_targets_are_accepted_by_regressors(regression, as_dask):
    X, y = regression
    target = y > np.median(y)
    if as_dask:
        X, target = da.from_array(X, chunks=(100, -1)), da.from_array(target, chunks=100)
    for model in (daskglm.GLM(), daskglm.LinearRegression(), daskglm.PoissonRegressor()):
        model.fit(X, target)
        assert np.isfinite(model.coef_).all()


def test_zero_row_dask_input_is_rejected_before_any_round(monkeypatch):
    def no_engine(*args, **kwargs):
        raise AssertionError("an engine was built (data persisted, a round run)")

    # where _GLMBase._engine looks make_engine up
    monkeypatch.setattr(daskglm.estimators.base, "make_engine", no_engine)
    X = da.zeros((0, 3), chunks=(10, 3))
    y = da.zeros(0, chunks=10)
    with pytest.raises(ValueError, match="0 sample"):
        daskglm.LinearRegression().fit(X, y)


@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy", "dask"])
def test_datetime_features_are_rejected(as_dask):
    X = np.arange(np.datetime64("2020-01-01"), np.datetime64("2020-01-21")).reshape(10, 2)
    y = np.arange(10.0)
    if as_dask:
        X = da.from_array(X, chunks=(5, 2))
    with pytest.raises(TypeError, match="dates and durations"):
        daskglm.LinearRegression().fit(X, y)


@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy", "dask"])
def test_string_targets_for_a_poisson_regressor_are_a_clear_error(regression, as_dask):
    X, _ = regression
    y = np.array(["a", "b"] * 200)
    if as_dask:
        X, y = da.from_array(X, chunks=(100, -1)), da.from_array(y, chunks=100)
    with pytest.raises((TypeError, ValueError), match="numeric|real numbers"):
        daskglm.PoissonRegressor().fit(X, y)


@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy", "dask"])
def test_float32_in_float32_out(regression, classification, as_dask):
    X, y = regression
    Xc, yc = classification
    X, Xc = X.astype(np.float32), Xc.astype(np.float32)
    if as_dask:
        X, Xc = da.from_array(X, chunks=(100, -1)), da.from_array(Xc, chunks=(100, -1))
    model = daskglm.Ridge(alpha=1.0).fit(X, y)
    clf = daskglm.LogisticRegression().fit(Xc, yc)
    assert model.coef_.dtype == np.float32 and np.asarray(model.intercept_).dtype == np.float32
    assert clf.coef_.dtype == np.float32 and clf.intercept_.dtype == np.float32
    assert model.predict(X).dtype == np.float32
    assert clf.decision_function(Xc).dtype == np.float32
    reference = daskglm.Ridge(alpha=1.0).fit(np.asarray(X, dtype=np.float64), y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-5)


# parameters ---------------------------------------------------------------------------------
def test_logistic_penalty_follows_l1_ratio_as_installed_scikit_learn(classification):
    X, y = classification
    ours = daskglm.LogisticRegression(l1_ratio=1.0, C=0.05, tol=1e-10, max_iter=1000).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        reference = sk.LogisticRegression(l1_ratio=1.0, C=0.05, solver="saga", tol=1e-12,
                                          max_iter=100_000).fit(X, y)
    if daskglm.estimators.PENALTY_FROM_L1_RATIO:
        assert (ours.coef_ == 0).any()  # the lasso, as scikit-learn >= 1.8 fits it
    np.testing.assert_allclose(ours.coef_, reference.coef_, atol=1e-5)


def test_verbose_shows_a_progress_bar_and_logs_each_iteration(classification, capsys, caplog):
    X, y = classification
    with caplog.at_level(logging.INFO, logger="daskglm"):
        model = daskglm.LogisticRegression(solver="lbfgs", verbose=1).fit(X, y)
    bar = capsys.readouterr().err
    assert "LogisticRegression(lbfgs)" in bar and "objective=" in bar
    lines = [r for r in caplog.records if "iteration" in r.getMessage()]
    assert len(lines) == len(model.history_) >= 2
    # a converged fit ends full, showing its last iteration's figures
    last = bar.rstrip().split("\r")[-1]
    n = len(model.history_)
    assert "100%" in last and f"{n}/{n}" in last, last
    assert f"objective={model.history_[-1]['objective']:.6g}" in last
    daskglm.LogisticRegression(solver="lbfgs").fit(X, y)
    assert capsys.readouterr().err == ""  # quiet by default


def test_an_sgd_epoch_reports_the_share_of_it_done_after_each_round(monkeypatch):
    from daskglm import progress

    shares = []
    monkeypatch.setattr(progress, "report_part", shares.append)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 5))
    y = (X[:, 0] > 0).astype(float)
    # 1,250 steps an epoch, 100 a round: 13 rounds an epoch
    daskglm.SGDClassifier(max_iter=2, tol=None, random_state=0, sync_every=100).fit(X, y)
    assert len(shares) == 26
    np.testing.assert_allclose(shares[:13], np.minimum(np.arange(1, 14) * 100, 1250) / 1250)


def test_a_bar_shows_the_share_done_of_the_iteration_under_way(capsys):
    import time

    from daskglm import progress

    with progress.watch("SGDClassifier(sgd)", 3, verbose=1):
        time.sleep(0.15)  # past the bar's least interval between redraws
        progress.report_part(0.5)
        progress.report({"iteration": 1, "objective": 0.5, "grad_norm": float("nan"),
                         "rounds": 2, "seconds": 0.2})
    shown = capsys.readouterr().err.split("\r")
    assert any(re.search(r"\| 0\.50/3 ", line) for line in shown), shown
    assert "1/1" in shown[-1] and "100%" in shown[-1], shown[-1]


def test_an_sgd_bar_shows_no_gradient_it_does_not_have(classification, capsys):
    X, y = classification
    daskglm.SGDClassifier(max_iter=3, tol=None, random_state=0, verbose=1).fit(X, y)
    bar = capsys.readouterr().err
    assert "objective=" in bar and "nan" not in bar and "IProgress" not in bar


@pytest.mark.parametrize("solver", ["gd", "lbfgs", "newton", "proximal", "admm"])
def test_warm_start_continues_from_the_previous_coefficients(classification, solver):
    X, y = classification
    cold = daskglm.LogisticRegression(solver=solver, tol=1e-8, max_iter=500).fit(X, y)
    warm = daskglm.LogisticRegression(solver=solver, tol=1e-8, max_iter=500, warm_start=True)
    warm.fit(X, y)
    rounds_first = warm.comm_.rounds
    warm.fit(X, y)  # starts at the optimum
    if solver == "admm":
        # its duals start from zero again, so the residual test takes as many iterations,
        # but the first consensus point is the previous solution
        assert warm.history_[0]["objective"] <= cold.history_[-1]["objective"] + 1e-12
    else:
        assert warm.n_iter_ <= 1 < cold.n_iter_
        assert warm.comm_.rounds < rounds_first
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-6)


def test_ridge_under_a_huge_penalty_still_fits_the_intercept():
    X, y = make_regression(50, 100, noise=0, bias=10, random_state=42)
    for solver in ("normal", "newton", "gd", "lbfgs"):
        model = daskglm.Ridge(alpha=1e16, solver=solver, tol=1e-12).fit(X, y)
        assert model.intercept_ == pytest.approx(y.mean(), rel=1e-9), solver


# checks scikit-learn makes, on Dask input too ------------------------------------------------
def _frames(X, columns, npartitions=3):
    import dask.dataframe as ddf
    import pandas as pd

    return ddf.from_pandas(pd.DataFrame(X, columns=columns), npartitions=npartitions)


@pytest.mark.parametrize("make", [daskglm.LogisticRegression, daskglm.SGDClassifier,
                                  daskglm.Ridge], ids=["logistic", "sgd", "ridge"])
def test_predict_on_a_dask_frame_checks_the_feature_names(classification, make):
    X, y = classification
    model = make().fit(_frames(X, list("abcd")), da.from_array(y, chunks=100))
    assert list(model.feature_names_in_) == list("abcd")
    expected = model.predict(X)
    # the same names: the same predictions, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(model.predict(_frames(X, list("abcd"))).compute(),
                                      expected)
    # reordered columns would give other predictions: refused, as scikit-learn refuses
    with pytest.raises(ValueError, match="same order as they were in fit"):
        model.predict(_frames(X[:, [1, 0, 2, 3]], list("bacd")))
    with pytest.raises(ValueError, match="unseen at fit time"):
        model.predict(_frames(X, list("abcz")))
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        model.predict(da.from_array(X, chunks=100))


def test_predict_proba_on_a_dask_frame_checks_the_feature_names(classification):
    X, _ = classification
    y = np.digitize(X[:, 0], [-0.5, 0.5])  # three classes: the multinomial predictors
    model = daskglm.LogisticRegression().fit(_frames(X, list("abcd")), y)
    with pytest.raises(ValueError, match="same order as they were in fit"):
        model.predict_proba(_frames(X, list("dcba")))


def test_partial_fit_keeps_the_first_calls_feature_names(regression):
    import pandas as pd

    X, y = regression
    model = daskglm.SGDRegressor().partial_fit(pd.DataFrame(X, columns=list("abcd")), y)
    model.partial_fit(pd.DataFrame(X, columns=list("abcd")), y)
    with pytest.raises(ValueError, match="should match those that were passed during fit"):
        model.partial_fit(pd.DataFrame(X, columns=list("wxyz")), y)
    assert list(model.feature_names_in_) == list("abcd")
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        model.partial_fit(X, y)
    assert list(model.feature_names_in_) == list("abcd")


@pytest.mark.parametrize("make", [daskglm.LogisticRegression, daskglm.SGDClassifier,
                                  lambda: daskglm.LogisticRegressionCV(cv=2)],
                         ids=["logistic", "sgd", "logistic-cv"])
@pytest.mark.parametrize("values", ["continuous", "two-non-integers"])
def test_continuous_dask_labels_are_refused(classification, make, values):
    X, _ = classification
    target = X @ np.array([1.0, -1.0, 0.5, 0.2])
    if values == "two-non-integers":  # two labels, but not class names: still continuous
        target = np.where(target > 0, 0.5, 1.5)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        make().fit(da.from_array(X, chunks=100), da.from_array(target, chunks=100))


def test_partial_fit_refuses_continuous_labels(classification):
    X, _ = classification
    target = X[:, 0] * 1.5
    with pytest.raises(ValueError, match="Unknown label type"):
        daskglm.SGDClassifier().partial_fit(X, target, classes=np.unique(target))
    with pytest.raises(ValueError, match="Unknown label type"):
        daskglm.SGDClassifier().partial_fit(X, target, classes=[0, 1])


@pytest.mark.parametrize("make", [lambda: daskglm.LassoCV(cv=3),
                                  lambda: daskglm.ElasticNetCV(cv=3),
                                  lambda: daskglm.RidgeCV(cv=3)],
                         ids=["lasso-cv", "elastic-net-cv", "ridge-cv"])
def test_cv_on_dask_rows_of_unknown_sizes_equals_the_numpy_fit(regression, make):
    X, y = regression
    keep = X[:, 0] > -0.5
    mask = da.from_array(keep, chunks=100)
    X_masked = da.from_array(X, chunks=(100, -1))[mask]
    y_masked = da.from_array(y, chunks=100)[mask]
    assert np.isnan(X_masked.shape[0])
    masked = make().fit(X_masked, y_masked)
    reference = make().fit(X[keep], y[keep])
    np.testing.assert_allclose(masked.coef_, reference.coef_, rtol=1e-10, atol=1e-12)


def test_logistic_cv_on_dask_rows_of_unknown_sizes(classification):
    X, y = classification
    keep = X[:, 1] > -0.5
    mask = da.from_array(keep, chunks=100)
    model = daskglm.LogisticRegressionCV(cv=3).fit(da.from_array(X, chunks=(100, -1))[mask],
                                                   da.from_array(y, chunks=100)[mask])
    reference = daskglm.LogisticRegressionCV(cv=3).fit(X[keep], y[keep])
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("make, reference", [
    (daskglm.PoissonRegressor, sk.PoissonRegressor),
    (daskglm.GammaRegressor, sk.GammaRegressor),
    (lambda: daskglm.TweedieRegressor(power=1.5), lambda: sk.TweedieRegressor(power=1.5)),
], ids=["poisson", "gamma", "tweedie"])
def test_float32_fits_predict_float32(make, reference):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    y = (rng.poisson(np.exp(X @ np.array([0.3, -0.2, 0.1]))) + 0.5).astype(np.float32)
    model = make().fit(X, y)
    assert model.predict(X).dtype == reference().fit(X, y).predict(X).dtype == np.float32
    lazy = model.predict(da.from_array(X, chunks=50))
    assert lazy.dtype == lazy.compute().dtype == np.float32


@pytest.mark.parametrize("learning_rate", ["constant", "invscaling", "adaptive"])
def test_sgd_classifier_default_eta0_runs_every_schedule(classification, learning_rate):
    X, y = classification
    assert daskglm.SGDClassifier().eta0 == sk.SGDClassifier().eta0
    model = daskglm.SGDClassifier(loss="log_loss", learning_rate=learning_rate,
                                  random_state=0).fit(X, y)
    # noisy labels: the optimum's accuracy is 0.71; a schedule that runs gets near it
    best = sk.LogisticRegression().fit(X, y).score(X, y)
    assert model.score(X, y) > best - 0.1


@pytest.mark.parametrize("make, name", [
    (lambda: daskglm.Ridge(alpha="a"), "alpha"),
    (lambda: daskglm.LogisticRegression(tol="a"), "tol"),
    (lambda: daskglm.LogisticRegression(C="1"), "C"),
    (lambda: daskglm.PoissonRegressor(alpha="1"), "alpha"),
], ids=["ridge-alpha", "logistic-tol", "logistic-C", "poisson-alpha"])
def test_numbers_given_as_text_are_refused_by_name(classification, make, name):
    X, y = classification
    with pytest.raises(ValueError, match=f"{name} must be a number"):
        make().fit(X, y)


@pytest.mark.parametrize("l1_ratio", [1.5, -0.1, "a"])
def test_sgd_l1_ratio_is_checked_whatever_the_penalty(regression, l1_ratio):
    X, y = regression
    with pytest.raises(ValueError, match="'l1_ratio' parameter|l1_ratio must be a number"):
        daskglm.SGDRegressor(penalty="l2", l1_ratio=l1_ratio).fit(X, y)


@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy", "dask"])
def test_score_refuses_targets_outside_the_family(as_dask):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.abs(X[:, 0])
    model = daskglm.PoissonRegressor().fit(X, y)
    negative = da.from_array(-y, chunks=20) if as_dask else -y
    with pytest.raises(ValueError, match="non-negative targets"):
        model.score(X, negative)
    # numpy X with Dask y scores as numpy X with numpy y
    target = da.from_array(y, chunks=20) if as_dask else y
    assert model.score(X, target) == pytest.approx(model.score(X, y), rel=1e-12)


def test_predict_refuses_dask_input_without_rows(classification):
    X, y = classification
    model = daskglm.LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match="0 sample"):
        model.predict(da.zeros((0, X.shape[1]), chunks=(1, -1)))


@pytest.mark.parametrize("make", [daskglm.LogisticRegression, daskglm.SGDClassifier],
                         ids=["logistic", "sgd"])
@pytest.mark.parametrize("weight", [-1.0, float("nan"), "a"])
def test_bad_class_weight_values_are_named(classification, make, weight):
    X, y = classification
    with pytest.raises(ValueError, match="class_weight values must be finite numbers >= 0"):
        make(class_weight={0: weight}).fit(X, y)


def test_partial_fit_refused_for_other_columns_keeps_the_model_usable():
    import pandas as pd

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    y = X.to_numpy() @ np.array([1.0, 2.0, 3.0])
    model = daskglm.SGDRegressor(random_state=0).partial_fit(X, y)
    expected = model.predict(X)
    with pytest.raises(ValueError, match="feature names should match"):
        model.partial_fit(X[["a", "b"]], y)
    with pytest.raises(ValueError, match="expecting 3 features"):
        model.partial_fit(X.to_numpy()[:, :2], y)
    assert model.n_features_in_ == 3 and list(model.feature_names_in_) == ["a", "b", "c"]
    np.testing.assert_array_equal(model.predict(X), expected)
    model.partial_fit(X, y)


def test_sgd_numbers_given_as_text_are_refused_by_name(regression):
    X, y = regression
    with pytest.raises(ValueError, match="alpha must be a number"):
        daskglm.SGDRegressor(alpha="0.1").fit(X, y)


@pytest.mark.parametrize("where", ["in-process", "cluster"])
def test_chunks_that_compute_to_other_rows_than_declared_are_a_clear_error(where, request):
    """A Dask array whose chunk computes to fewer rows than its declared size (a wrong
    ``from_delayed`` shape, say) is refused, not fitted on rows paired wrongly."""
    import dask
    import dask.array as da

    if where == "cluster":
        request.getfixturevalue("client")
    X = da.concatenate([da.from_delayed(dask.delayed(np.ones)((30, 2)), shape=(40, 2),
                                        dtype=float)] * 2)
    y = da.zeros(80, chunks=40)
    with pytest.raises(ValueError, match="X has 30 rows but its y.*chunk sizes do not match"):
        daskglm.LinearRegression().fit(X, y)


@pytest.mark.parametrize("make", [lambda: daskglm.PoissonRegressor(alpha=0.1),
                                  lambda: daskglm.LinearRegression()],
                         ids=["deviance", "r2"])
def test_score_of_dask_targets_chunked_unlike_x_is_the_in_memory_score(make):
    """``y`` and the weights are aligned to ``X``'s row chunks (a parquet frame's columns
    can be cut differently), including for the deviance's blockwise pass."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 3))
    y = rng.poisson(np.exp(0.3 * X[:, 0])).astype(float)
    w = rng.uniform(0.5, 2.0, 100)
    model = make().fit(X, y, sample_weight=w)
    expected = model.score(X, y, sample_weight=w)
    got = model.score(da.from_array(X, chunks=((40, 25, 35), (3,))), da.from_array(y, chunks=45),
                      sample_weight=da.from_array(w, chunks=70))
    assert got == pytest.approx(expected, rel=1e-12)


def test_a_dask_dataframe_of_targets_fits_every_target():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.standard_normal((200, 3)), columns=list("abc"))
    Y = pd.DataFrame({"u": X.a - X.b, "v": 2 * X.c + rng.standard_normal(200)})
    expected = daskglm.LinearRegression().fit(X, Y)
    model = daskglm.LinearRegression().fit(dd.from_pandas(X, npartitions=3),
                                           dd.from_pandas(Y, npartitions=2))
    np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-10)
    assert model.coef_.shape == (2, 3)


@pytest.mark.parametrize("make", [lambda: daskglm.SGDRegressor(early_stopping=True,
                                                               random_state=0),
                                  lambda: daskglm.SGDClassifier(early_stopping=True,
                                                                random_state=0)],
                         ids=["regressor", "classifier"])
def test_early_stopping_takes_a_dask_dataframe(make):
    """The rows of a Dask DataFrame are split as those of the same Dask array, and its
    column names are the model's ``feature_names_in_``."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.standard_normal((600, 3)), columns=list("abc"))
    y = (frame.a + 0.1 * rng.standard_normal(600) > 0).astype(float).to_numpy()
    ddf = dd.from_pandas(frame, npartitions=3)
    model = make().fit(ddf, y)
    expected = make().fit(da.from_array(frame.to_numpy(), chunks=(200, -1)), y)
    np.testing.assert_array_equal(model.coef_, expected.coef_)
    assert list(model.feature_names_in_) == ["a", "b", "c"]
    assert model.predict(ddf).compute().shape == (600,)


@pytest.mark.parametrize("dtype", ["bool", "boolean", "Int64", "Float64"])
@pytest.mark.parametrize("missing", ["error", "mean"])
def test_nullable_and_boolean_columns_of_a_dask_dataframe_are_numbers(dtype, missing,
                                                                      tmp_path):
    """pandas' nullable ``Int64``, ``Float64`` and ``boolean`` columns, and booleans beside
    floats (whose values are objects to ``to_numpy``), read from parquet: numbers, as
    the in-memory frame's fit takes them; a missing value is NaN (an error, or the
    column's mean with ``missing="mean"``)."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    values = rng.integers(0, 2, 600) if dtype in ("bool", "boolean") else \
        rng.integers(0, 5, 600)
    frame = pd.DataFrame({"f": rng.standard_normal(600),
                          "v": pd.array(values.astype(bool) if dtype in ("bool", "boolean")
                                        else values, dtype=dtype)})
    y = frame.f * 2 + np.asarray(frame.v, dtype=float) + rng.standard_normal(600)
    dd.from_pandas(frame.assign(y=y), npartitions=3).to_parquet(tmp_path / "t")
    ddf = dd.read_parquet(tmp_path / "t")
    model = daskglm.LinearRegression(missing=missing).fit(ddf[["f", "v"]], ddf.y)
    expected = daskglm.LinearRegression().fit(frame[["f"]].assign(v=np.asarray(
        frame.v, dtype=float)), y)
    np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-10)
    if dtype != "bool":  # a missing value
        gappy = frame.assign(y=y)
        gappy["v"] = gappy.v.astype(object).where(np.arange(600) % 7 != 0, None).astype(dtype)
        dd.from_pandas(gappy, npartitions=3).to_parquet(tmp_path / "g")
        gdf = dd.read_parquet(tmp_path / "g")
        if missing == "error":
            with pytest.raises(ValueError, match="NaN"):
                daskglm.LinearRegression(missing=missing).fit(gdf[["f", "v"]], gdf.y)
        else:
            model = daskglm.LinearRegression(missing=missing).fit(gdf[["f", "v"]], gdf.y)
            mean = np.nanmean(np.asarray(gappy.v, dtype=float))
            filled = gappy[["f"]].assign(v=np.asarray(gappy.v.astype(float).fillna(mean)))
            np.testing.assert_allclose(
                model.coef_, daskglm.LinearRegression().fit(filled, y).coef_, rtol=1e-10)


@pytest.mark.parametrize("kind", ["numpy", "pandas", "dask-table"])
def test_a_missing_value_error_says_how_to_fill_it(kind):
    import dask.dataframe as dd
    import pandas as pd

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X[:, 0].copy()
    X[3, 1] = np.nan
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    data = {"numpy": X, "pandas": frame,
            "dask-table": dd.from_pandas(frame.assign(c=pd.Categorical(["u", "v"] * 30)),
                                         npartitions=2)}[kind]
    with pytest.raises(ValueError, match="Input X contains NaN") as caught:
        daskglm.LinearRegression().fit(data, y)
    assert "missing='mean'" in str(caught.value)
