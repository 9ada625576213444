"""Model files (:mod:`daskglm.model_files`): arrays and JSON, loaded without a cluster,
predicting bit for bit as the saved model."""

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import KFold

import daskglm
from tests.conftest import make_data


def _round_trip(model, tmp_path):
    path = tmp_path / "model.npz"
    daskglm.save(model, path)
    return daskglm.load(path)


def test_a_classifier_with_string_labels_predicts_the_same_after_loading(tmp_path):
    X, y, _ = make_data("binomial", n=1000)
    labels = np.where(y > 0, "spam", "ham")
    model = daskglm.LogisticRegression(C=0.3).fit(X, labels)
    loaded = _round_trip(model, tmp_path)
    assert type(loaded) is daskglm.LogisticRegression
    assert loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.classes_, model.classes_)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.comm_summary_["rounds"] == model.comm_.rounds
    assert loaded.converged_ == model.converged_ and loaded.solver_ == model.solver_


def test_a_table_with_categories_and_inference_round_trips(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.uniform(18, 80, 800),
                          "region": pd.Categorical(rng.choice(["n", "s", "w"], 800)),
                          "plan": rng.choice(["basic", "gold"], 800)})
    y = rng.poisson(np.exp(0.01 * frame.age - 0.5)).astype(float)
    model = daskglm.PoissonRegressor(alpha=0.0, inference=True).fit(
        dd.from_pandas(frame, npartitions=2), y)
    loaded = _round_trip(model, tmp_path)
    np.testing.assert_array_equal(loaded.feature_names_out_, model.feature_names_out_)
    np.testing.assert_array_equal(loaded.bse_, model.bse_)
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))
    Xd = dd.from_pandas(frame, npartitions=3)
    np.testing.assert_array_equal(np.asarray(loaded.predict(Xd)), np.asarray(model.predict(Xd)))


def test_a_formula_model_round_trips_with_its_levels_means_and_transforms(tmp_path):
    """A formula's design (levels, a missing level, means, and the state of ``scale``,
    ``bs`` and ``poly`` learnt from every row) is saved as JSON: formulaic rebuilds the
    same spec, and the loaded model's predictions on pandas and Dask tables are the
    saved model's, bit for bit.  Such a file is format version 2; others stay 1."""
    pytest.importorskip("formulaic")
    import json

    rng = np.random.default_rng(3)
    n = 1200
    frame = pd.DataFrame({"age": rng.uniform(18, 80, n),
                          "region": rng.choice(["n", "s", "w"], n),
                          "density": rng.uniform(10, 500, n)})
    frame["claims"] = rng.poisson(np.exp(0.01 * frame.age - 1)).astype(float)
    frame.loc[frame.index[::19], "density"] = np.nan
    frame["region"] = frame.region.where(np.arange(n) % 23 != 0)
    formula = ("claims ~ C(region) + scale(age) + bs(age, df=4) + poly(density, degree=2)"
               " + np.log(density)")
    table = dd.from_pandas(frame, npartitions=3)
    model = daskglm.GLM.from_formula(formula, table, family="poisson", alpha=0.0,
                                     missing="mean")
    loaded = _round_trip(model, tmp_path)
    assert loaded.formula_ == formula and loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.feature_names_out_, model.feature_names_out_)
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))
    np.testing.assert_array_equal(np.asarray(loaded.predict(table)),
                                  np.asarray(model.predict(table)))
    with np.load(tmp_path / "model.npz") as archive:
        assert json.loads(bytes(archive["__meta__"]))["format_version"] == 2
    plain = daskglm.PoissonRegressor().fit(frame[["age"]], frame.claims)
    daskglm.save(plain, tmp_path / "plain.npz")
    with np.load(tmp_path / "plain.npz") as archive:
        assert json.loads(bytes(archive["__meta__"]))["format_version"] == 1


def test_a_float32_regression_keeps_its_dtype(tmp_path):
    X, y, _ = make_data("gaussian", n=500)
    Xd = da.from_array(X.astype(np.float32), chunks=(250, -1))
    model = daskglm.Ridge(alpha=1.0).fit(Xd, y)
    loaded = _round_trip(model, tmp_path)
    prediction = loaded.predict(Xd).compute()
    assert prediction.dtype == np.float32
    np.testing.assert_array_equal(prediction, model.predict(Xd).compute())


def test_what_cannot_be_saved_or_loaded_is_refused(tmp_path):
    X, y, _ = make_data("gaussian", n=300)
    with pytest.raises(ValueError, match="cv=KFold"):
        daskglm.save(daskglm.LassoCV(cv=KFold(3)).fit(X, y), tmp_path / "cv.npz")
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="not a daskglm model file"):
        daskglm.load(tmp_path / "other.npz")
    with pytest.raises(Exception, match="not fitted"):
        daskglm.save(daskglm.Ridge(), tmp_path / "unfitted.npz")


def test_typed_solver_options_are_saved_as_such(tmp_path):
    from daskglm.solvers.options import LBFGSOptions

    X, y, _ = make_data("binomial", n=400)
    model = daskglm.LogisticRegression(solver="lbfgs",
                                       solver_options=LBFGSOptions(memory=4)).fit(X, y)
    loaded = _round_trip(model, tmp_path)
    assert loaded.solver_options == LBFGSOptions(memory=4)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_a_model_saved_without_the_suffix_loads_from_the_same_path(tmp_path):
    """``save(model, "model")`` writes ``model.npz`` (as numpy does); ``load("model")``
    reads it back."""
    X, y, _ = make_data("poisson", n=500)
    model = daskglm.PoissonRegressor(alpha=0.1).fit(X, y)
    daskglm.save(model, tmp_path / "model")
    assert (tmp_path / "model.npz").exists()
    np.testing.assert_array_equal(daskglm.load(tmp_path / "model").predict(X), model.predict(X))
    daskglm.save(model, str(tmp_path / "other"))
    np.testing.assert_array_equal(daskglm.load(str(tmp_path / "other")).coef_, model.coef_)
