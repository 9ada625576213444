"""scikit-learn compatibility, input handling and distribution of the estimators."""

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import daskglm
import daskglm.engine.build as engine_module
from tests.conftest import make_data

ESTIMATORS = [
    daskglm.LinearRegression(),
    daskglm.Ridge(alpha=2.0),
    daskglm.LogisticRegression(),
    daskglm.PoissonRegressor(alpha=0.1),
    daskglm.GLM("poisson", alpha=0.01),
]
FAMILY_OF = {
    "LinearRegression": "gaussian",
    "Ridge": "gaussian",
    "LogisticRegression": "binomial",
    "PoissonRegressor": "poisson",
    "GLM": "poisson",
}


def _name(est):
    return type(est).__name__


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_check_estimator(estimator):
    # Every check passes; only check_array_api_input is skipped by scikit-learn itself
    # (it needs SCIPY_ARRAY_API set at import time).
    results = check_estimator(estimator, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert failed == []


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_numpy_and_dask_input_give_the_same_model(estimator):
    X, y, w = make_data(FAMILY_OF[_name(estimator)], weights=True)
    est = clone(estimator).set_params(tol=1e-10, max_iter=1000)
    from_numpy = clone(est).fit(X, y, sample_weight=w)
    chunks = (300, 900, 11, 789)
    from_dask = clone(est).fit(
        da.from_array(X, chunks=(chunks, -1)),
        da.from_array(y, chunks=chunks),
        sample_weight=da.from_array(w, chunks=chunks),
    )
    np.testing.assert_allclose(from_dask.coef_, from_numpy.coef_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(from_dask.intercept_, from_numpy.intercept_, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("solver", ["lbfgs", "gd"])
def test_local_engine_and_two_process_cluster_agree(client, solver):
    X, y, w = make_data("binomial", weights=True)
    Xd = da.from_array(X, chunks=(700, -1))
    yd, wd = da.from_array(y, chunks=700), da.from_array(w, chunks=700)
    model = daskglm.LogisticRegression(C=0.3, solver=solver, tol=1e-10, max_iter=1000)
    on_cluster = clone(model).fit(Xd, yd, sample_weight=wd)
    assert any(r.kind == "gradient" for r in on_cluster.comm_.records)
    assert engine_module.active_client() is client
    local = clone(model)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine_module, "active_client", lambda: None)
        local.fit(Xd, yd, sample_weight=wd)
    # same kernels and tree; SIMD round-off differs with buffer alignment, and gd amplifies it
    np.testing.assert_allclose(on_cluster.coef_, local.coef_, rtol=1e-7)


def test_predictions_follow_the_input_type():
    X, y, _ = make_data("binomial")
    model = daskglm.LogisticRegression().fit(X, y)
    Xd = da.from_array(X, chunks=(500, 3))
    lazy = model.predict_proba(Xd)
    assert isinstance(lazy, da.Array) and lazy.chunks[0] == Xd.chunks[0]
    np.testing.assert_allclose(lazy.compute(), model.predict_proba(X), rtol=1e-14)
    assert isinstance(model.predict(Xd), da.Array)
    np.testing.assert_array_equal(model.predict(Xd).compute(), model.predict(X))
    assert model.predict_proba(X).shape == (len(y), 2)
    assert model.score(Xd, da.from_array(y, chunks=500)) == pytest.approx(model.score(X, y))


def test_scores_match_scikit_learn():
    from sklearn.metrics import d2_tweedie_score, r2_score

    for family, cls in [("gaussian", daskglm.Ridge), ("poisson", daskglm.PoissonRegressor)]:
        X, y, w = make_data(family, weights=True)
        model = cls().fit(X, y)
        expected = (
            r2_score(y, model.predict(X), sample_weight=w)
            if family == "gaussian"
            else d2_tweedie_score(y, model.predict(X), sample_weight=w, power=1)
        )
        assert model.score(X, y, sample_weight=w) == pytest.approx(expected, rel=1e-10)
        Xd, yd = da.from_array(X, chunks=(600, -1)), da.from_array(y, chunks=600)
        wd = da.from_array(w, chunks=600)
        assert model.score(Xd, yd, sample_weight=wd) == pytest.approx(expected, rel=1e-10)


def test_string_labels_and_fitted_shapes():
    X, y, _ = make_data("binomial")
    labels = np.where(y == 1, "spam", "ham")
    model = daskglm.LogisticRegression().fit(X, labels)
    assert list(model.classes_) == ["ham", "spam"]
    assert model.coef_.shape == (1, X.shape[1]) and model.intercept_.shape == (1,)
    assert set(model.predict(X)) <= {"ham", "spam"}
    regressor = daskglm.Ridge().fit(X, y)
    assert regressor.coef_.shape == (X.shape[1],) and isinstance(regressor.intercept_, float)


def test_set_params_takes_effect_after_construction():
    X, y, _ = make_data("gaussian")
    model = daskglm.Ridge(alpha=1.0)
    small = model.fit(X, y).coef_.copy()
    large = model.set_params(alpha=1e5).fit(X, y).coef_
    assert np.abs(large).sum() < 0.5 * np.abs(small).sum()
    assert model.get_params()["alpha"] == 1e5


def test_dask_dataframe_input_keeps_feature_names():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y, _ = make_data("gaussian")
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    ddf = dd.from_pandas(frame, npartitions=3)
    dy = dd.from_pandas(pd.Series(y), npartitions=3)
    model = daskglm.LinearRegression().fit(ddf, dy)
    reference = daskglm.LinearRegression().fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-10)
    assert list(model.feature_names_in_) == list(frame.columns)


def test_convergence_warning_and_attributes():
    X, y, _ = make_data("binomial")
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        model = daskglm.LogisticRegression(solver="gd", max_iter=2, tol=1e-12).fit(X, y)
    assert not model.converged_ and model.n_iter_ == 2 and len(model.history_) == 2


def test_inputs_are_never_modified():
    X, y, w = make_data("binomial", weights=True)
    copies = [a.copy() for a in (X, y, w)]
    daskglm.LogisticRegression().fit(X, y, sample_weight=w)
    for original, copy in zip((X, y, w), copies):
        np.testing.assert_array_equal(original, copy)


def _bad_inputs():
    X, y, w = make_data("binomial", n=50, weights=True)
    nan_X = X.copy()
    nan_X[3, 2] = np.nan
    return [
        ("lengths", X, y[:-1], None, ValueError, "inconsistent numbers of samples"),
        ("nan-X", nan_X, y, None, ValueError, "NaN"),
        ("inf-y", X, np.where(np.arange(50) == 4, np.inf, y), None, ValueError, "Unknown label|NaN|infinity"),
        ("nan-weight", X, y, np.where(np.arange(50) == 4, np.nan, w), ValueError, "NaN"),
        ("negative-weight", X, y, -w, ValueError, "[Nn]egative"),
        ("one-label", X, np.zeros(50), None, ValueError, "class"),
        ("y-2-columns", X, np.column_stack([y, y]), None, ValueError, "1d array|binary|multilabel"),
        ("zero-rows", X[:0], y[:0], None, ValueError, "0 sample"),
        ("text-X", np.full((50, 2), "a"), y, None, ValueError, "convert|float|numeric"),
    ]


@pytest.mark.parametrize(
    "X, y, w, error, message",
    [case[1:] for case in _bad_inputs()],
    ids=[case[0] for case in _bad_inputs()],
)
@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy", "dask"])
def test_bad_input_is_rejected_before_any_work(X, y, w, error, message, as_dask):
    if as_dask:
        if X.dtype.kind not in "fiub" or len(X) == 0:
            pytest.skip("dask rejects these through the same numpy checks")
        X = da.from_array(X, chunks=(20,) + X.shape[1:])
        y = da.from_array(y, chunks=(20,) + np.shape(y)[1:])
        w = None if w is None else da.from_array(w, chunks=20)
    model = daskglm.LogisticRegression()
    with pytest.raises(error, match=message):
        model.fit(X, y, sample_weight=w)
    assert not hasattr(model, "coef_")


def test_poisson_rejects_negative_targets_on_dask_input():
    X, y, _ = make_data("poisson")
    y = y.copy()
    y[10] = -1
    with pytest.raises(ValueError, match="non-negative"):
        daskglm.PoissonRegressor().fit(da.from_array(X, chunks=(500, -1)), da.from_array(y, chunks=500))


def test_bad_parameters_are_rejected():
    X, y, _ = make_data("binomial", n=50)
    with pytest.raises(ValueError, match="Unknown solver"):
        daskglm.LogisticRegression(solver="magic").fit(X, y)
    with pytest.raises(ValueError, match="C must be"):
        daskglm.LogisticRegression(C=-1).fit(X, y)
    with pytest.raises(ValueError, match="Unknown option"):
        daskglm.LogisticRegression(solver_options={"memroy": 3}).fit(X, y)
    with pytest.raises(ValueError, match="max_iter"):
        daskglm.LogisticRegression(max_iter=-1).fit(X, y)


def test_grid_search_over_a_pipeline_on_a_cluster(client):
    X, y, _ = make_data("binomial", n=600)
    pipeline = Pipeline([("scale", StandardScaler()), ("model", daskglm.LogisticRegression())])
    search = GridSearchCV(pipeline, {"model__C": [0.01, 1.0], "model__solver": ["lbfgs", "gd"]}, cv=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        search.fit(X, y)
    assert len(search.cv_results_["mean_test_score"]) == 4
    assert search.best_score_ > 0.6
    fitted = search.best_estimator_.named_steps["model"]
    assert fitted.comm_.rounds > 1 and fitted.converged_


@pytest.mark.parametrize("where", ["in-process", "cluster"])
def test_dask_labels_are_found_and_encoded_in_the_validation_round(where, request):
    if where == "cluster":
        request.getfixturevalue("client")
    X, y, _ = make_data("binomial")
    labels = np.where(y == 1, 3, -1)
    expected = daskglm.LogisticRegression(tol=1e-10).fit(X, labels)
    model = daskglm.LogisticRegression(tol=1e-10).fit(
        da.from_array(X, chunks=(600, -1)), da.from_array(labels, chunks=600)
    )
    assert list(model.classes_) == [-1, 3] and model.classes_.dtype == labels.dtype
    np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-8)
    kinds = [r.kind for r in model.comm_.records]
    assert kinds[:2] == ["validate", "encode"] and "encode" not in kinds[2:]
    zero_one = daskglm.LogisticRegression().fit(
        da.from_array(X, chunks=(600, -1)), da.from_array(y, chunks=600)
    )
    assert "encode" not in [r.kind for r in zero_one.comm_.records]  # already 0/1


def _hashed_rows(n, d, per_row, seed):
    """CSR rows of ``per_row`` entries at random columns, duplicates left unsummed and
    column indices unsorted (as a reader may hand them over)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    columns = rng.integers(0, d, size=(n, per_row))
    columns[:, 1] = columns[:, 0]  # a duplicate in every row
    values = rng.normal(size=(n, per_row))
    X = sp.csr_matrix((values.ravel(), columns.ravel(),
                       np.arange(0, n * per_row + 1, per_row)), shape=(n, d))
    assert not X.has_canonical_format
    return X


@pytest.mark.parametrize("kind", ["csr", "dense", "dask-csr", "dask-dense"])
def test_predict_proba_equals_scikit_learn_with_the_same_coefficients(kind):
    """scikit-learn's ``predict_proba`` with the same ``coef_``, ``intercept_`` and
    ``classes_`` is the reference; they agree to 1e-12 (absolute, on probabilities)."""
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression as Reference

    n, d = 3001, 5000
    rng = np.random.default_rng(7)
    coef, intercept = rng.normal(scale=0.5, size=(1, d)), np.array([-0.4])
    X = _hashed_rows(n, d, 12, seed=8)
    reference = Reference()
    ours = daskglm.LogisticRegression()
    for model in (reference, ours):
        model.coef_, model.intercept_ = coef, intercept
        model.classes_, model.n_features_in_ = np.array([0, 1]), d
    expected = reference.predict_proba(X)
    expected_decision = reference.decision_function(X)
    if kind.endswith("dense"):
        X = X.toarray()
    if kind.startswith("dask"):
        meta = sp.csr_matrix((0, d)) if kind == "dask-csr" else None
        X = da.from_array(X, chunks=(700, d), asarray=False, meta=meta)
    got, decision = ours.predict_proba(X), ours.decision_function(X)
    if kind.startswith("dask"):
        assert isinstance(got, da.Array) and got.chunks == (X.chunks[0], (2,))
        assert got.dtype == expected.dtype
        got, decision = got.compute(), decision.compute()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(decision, expected_decision, rtol=0, atol=1e-12)
