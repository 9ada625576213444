"""A formula's names everywhere (``param_names_``, ``summary()``, ``coef_table_``,
``feature_names_in_``, model files), as statsmodels' formula interface names them, and
columns named in backticks (R's `` `Solar.R` ``), on pandas and Dask tables."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

import daskglm

pytest.importorskip("formulaic")

from tests.test_formulas import FORMULA
from tests.test_formulas import _policies as _policies_of


def _policies(n=3000, seed=0):
    return _policies_of(n, seed)


def _air(n=400, seed=1):
    """A table named as R's airquality: dots and a space in its column names."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "Solar.R": rng.uniform(7, 334, n),
        "Wind": rng.uniform(2, 20, n),
        "my col": rng.uniform(1, 3, n),
        "Month": rng.choice([5, 6, 7, 8], n),
    })
    frame["Ozone.ppb"] = 60 + 0.1 * frame["Solar.R"] - 3 * frame.Wind \
        + 4 * frame["my col"] + 2 * (frame.Month == 7) + rng.normal(0, 5, n)
    return frame


def _as(frame, kind):
    return dd.from_pandas(frame, npartitions=4) if kind == "dask" else frame


@pytest.mark.parametrize("kind", ["pandas", "dask"])
def test_inference_names_its_parameters_as_statsmodels_formula_api(kind):
    frame = _policies()
    model = daskglm.GLM.from_formula(FORMULA, _as(frame, kind), family="poisson", alpha=0.0,
                                     tol=1e-8, inference=True)
    reference = smf.glm(FORMULA, frame, family=sm.families.Poisson()).fit(tol=1e-12)
    names = reference.model.exog_names
    assert model.param_names_ == names
    assert list(model.coef_table_.index) == names
    assert [line.split()[0] for line in model.summary().splitlines()[-len(names) - 1:-1]] \
        == names
    # the coefficients to 1e-6 relative, as each fit stops at its own gradient tolerance
    np.testing.assert_allclose(model.coef_table_["coef"], reference.params[names], rtol=1e-6)
    np.testing.assert_allclose(model.coef_table_["std_err"], reference.bse[names], rtol=1e-6)
    assert list(model.feature_names_in_) == ["region", "age", "density"]
    assert model.n_features_in_ == 3
    assert list(model.feature_names_out_) == names[1:]


@pytest.mark.parametrize("kind", ["pandas", "dask"])
def test_backticked_columns_are_read_by_their_whole_name(kind):
    frame = _air()
    formula = "`Ozone.ppb` ~ `Solar.R` + Wind + `my col` + C(Month)"
    model = daskglm.LinearRegression.from_formula(formula, _as(frame, kind), inference=True)
    renamed = frame.rename(columns={"Solar.R": "Solar_R", "my col": "my_col",
                                    "Ozone.ppb": "Ozone_ppb"})
    reference = smf.ols("Ozone_ppb ~ Solar_R + Wind + my_col + C(Month)", renamed).fit()
    assert model.param_names_ == ["Intercept", "Solar.R", "Wind", "my col", "C(Month)[T.6]",
                                  "C(Month)[T.7]", "C(Month)[T.8]"]
    assert list(model.feature_names_in_) == ["Solar.R", "Wind", "my col", "Month"]
    as_statsmodels = [name.replace(".", "_").replace(" ", "_") if "[" not in name else name
                      for name in model.param_names_]
    # least squares from the normal equations: agreement to rounding
    np.testing.assert_allclose(model.coef_table_["coef"], reference.params[as_statsmodels],
                               rtol=1e-9)
    np.testing.assert_allclose(np.asarray(model.predict(_as(frame, kind))),
                               reference.fittedvalues, rtol=1e-9)


def test_q_names_a_column_as_statsmodels_does():
    frame = _air()
    formula = "Q('Ozone.ppb') ~ Q('Solar.R') + Wind"
    model = daskglm.LinearRegression.from_formula(
        "`Ozone.ppb` ~ Q('Solar.R') + Wind", _as(frame, "dask"), inference=True)
    reference = smf.ols(formula, frame).fit()
    assert model.param_names_ == reference.model.exog_names
    np.testing.assert_allclose(model.coef_table_["coef"], reference.params, rtol=1e-9)
    np.testing.assert_allclose(model.coef_table_["std_err"], reference.bse, rtol=1e-9)


def test_a_transform_of_a_backticked_column_learns_from_every_row_of_a_dask_table():
    frame = _air()
    formula = "`Ozone.ppb` ~ scale(`Solar.R`) + np.log(`my col`)"
    in_memory = daskglm.LinearRegression.from_formula(formula, frame)
    partitioned = daskglm.LinearRegression.from_formula(formula, _as(frame, "dask"))
    state = partitioned.formula_design_.spec.transform_state
    (key,) = state
    assert float(state[key]["center"]) == pytest.approx(frame["Solar.R"].mean(), rel=1e-12)
    assert float(state[key]["scale"]) == pytest.approx(frame["Solar.R"].std(), rel=1e-12)
    np.testing.assert_allclose(partitioned.coef_, in_memory.coef_, rtol=1e-9)
    assert list(partitioned.feature_names_out_) == ["scale(`Solar.R`)", "np.log(`my col`)"]


def test_model_files_keep_a_formulas_names(tmp_path):
    frame = _air()
    model = daskglm.LinearRegression.from_formula(
        "`Ozone.ppb` ~ `Solar.R` + `my col` + C(Month)", _as(frame, "dask"), inference=True)
    daskglm.save(model, tmp_path / "model.npz")
    loaded = daskglm.load(tmp_path / "model.npz")
    assert loaded.param_names_ == model.param_names_
    np.testing.assert_array_equal(loaded.feature_names_in_, model.feature_names_in_)
    assert loaded.summary() == model.summary()
    assert list(loaded.coef_table_.index) == list(model.coef_table_.index)
    np.testing.assert_array_equal(loaded.predict(frame), np.asarray(model.predict(frame)))
    # without an intercept: formulaic reads its own text of the terms as having one
    through_origin = daskglm.LinearRegression.from_formula("`Ozone.ppb` ~ `my col` - 1", frame)
    daskglm.save(through_origin, tmp_path / "origin.npz")
    np.testing.assert_array_equal(daskglm.load(tmp_path / "origin.npz").predict(frame),
                                  through_origin.predict(frame))


def test_formula_models_take_tables_and_targets_that_are_columns():
    frame = _air(n=100)
    model = daskglm.LinearRegression.from_formula("`Ozone.ppb` ~ Wind", frame)
    with pytest.raises(ValueError, match=r"fitted from a formula; predict takes a table"):
        model.predict(frame[["Wind"]].to_numpy())
    with pytest.raises(ValueError, match="left-hand side must be one column"):
        daskglm.LinearRegression.from_formula("np.log(`Ozone.ppb`) ~ Wind", frame)
    with pytest.raises(ValueError, match=r"\['Solar\.X'\], which are not columns"):
        daskglm.LinearRegression.from_formula("`Ozone.ppb` ~ `Solar.X`", frame)
