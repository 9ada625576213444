"""Missing values by choice (``missing=``): refused by default; with ``"mean"``, numeric
columns filled with their means at fit (kept for prediction) and categorical columns given
a level of their own."""

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import daskglm
from daskglm.accounting.kinds import Kind
from tests.conftest import make_data


def _with_gaps(X, rng, share=0.05):
    gappy = X.copy()
    gappy[rng.uniform(size=X.shape) < share] = np.nan
    return gappy


@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy", "dask"])
def test_mean_imputation_fits_the_filled_data_and_fills_prediction_rows_alike(as_dask):
    rng = np.random.default_rng(0)
    X, y, _ = make_data("binomial", n=2000)
    gappy = _with_gaps(X, rng)
    means = np.nanmean(gappy, axis=0)
    filled = np.where(np.isnan(gappy), means, gappy)
    data = da.from_array(gappy, chunks=(500, -1)) if as_dask else gappy
    model = daskglm.LogisticRegression(C=1.0, tol=1e-10, missing="mean").fit(data, y)
    reference = daskglm.LogisticRegression(C=1.0, tol=1e-10).fit(filled, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.column_means_, means, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(model.predict_proba(data)),
                               reference.predict_proba(filled), rtol=1e-9)
    assert np.isnan(gappy).sum() > 0  # the input was not filled in place
    if as_dask:
        assert model.comm_.count(Kind.DRIVER_PASS) == 1


def test_missing_values_are_refused_by_default_and_an_unknown_choice_too():
    rng = np.random.default_rng(1)
    X, y, _ = make_data("gaussian", n=300)
    with pytest.raises(ValueError, match="NaN"):
        daskglm.Ridge().fit(_with_gaps(X, rng), y)
    with pytest.raises(ValueError, match="missing must be 'error' or 'mean'"):
        daskglm.Ridge(missing="median").fit(X, y)


def test_a_table_fills_numbers_with_means_and_gives_categories_a_missing_level():
    rng = np.random.default_rng(2)
    n = 3000
    frame = pd.DataFrame({"age": rng.uniform(18, 80, n),
                          "plan": rng.choice(["basic", "gold"], n).astype(object)})
    y = rng.poisson(np.exp(0.01 * frame.age - 0.3 + 0.4 * (frame.plan == "gold"))).astype(float)
    frame.loc[rng.uniform(size=n) < 0.05, "age"] = np.nan
    frame.loc[rng.uniform(size=n) < 0.05, "plan"] = None
    model = daskglm.PoissonRegressor(alpha=0.0, tol=1e-8, missing="mean").fit(
        dd.from_pandas(frame, npartitions=3), y)
    assert list(model.feature_names_out_) == ["age", "plan[gold]", "plan[(missing)]"]
    # the levels, the mean, the gaps and the partitions' rows: found in the one read of
    # the table (a partition per thread, then the others), kept for the fit
    assert model.comm_.count(Kind.DRIVER_PASS) == 2
    age = frame.age.fillna(frame.age.mean())
    design = np.column_stack([age, frame.plan == "gold", frame.plan.isna()]).astype(float)
    reference = sm.GLM(y, sm.add_constant(design), family=sm.families.Poisson()).fit(tol=1e-12)
    np.testing.assert_allclose(model.coef_, reference.params[1:], rtol=1e-7)
    np.testing.assert_allclose(model.predict(frame), reference.predict(sm.add_constant(design)),
                               rtol=1e-7)
    with pytest.raises(ValueError, match="missing='mean'"):
        daskglm.PoissonRegressor(alpha=0.0).fit(frame.assign(age=frame.age.fillna(0)), y)


def test_a_model_with_imputation_saves_and_loads(tmp_path):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"x": rng.normal(size=500), "c": rng.choice(["a", "b"], 500)})
    frame.loc[::7, "x"] = np.nan
    frame.loc[::11, "c"] = None
    y = rng.normal(size=500)
    model = daskglm.Ridge(alpha=1.0, missing="mean").fit(frame, y)
    daskglm.save(model, tmp_path / "m.npz")
    loaded = daskglm.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))
    X = rng.normal(size=(300, 3))
    X[::5, 1] = np.nan
    arrays = daskglm.Ridge(missing="mean").fit(X, rng.normal(size=300))
    daskglm.save(arrays, tmp_path / "a.npz")
    np.testing.assert_array_equal(daskglm.load(tmp_path / "a.npz").predict(X), arrays.predict(X))
