"""Formulas on tables (:mod:`daskglm.estimators.formulas`, through formulaic), against
statsmodels' formula interface on the same rows."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

import daskglm

pytest.importorskip("formulaic")

FORMULA = "claims ~ C(region) + age + np.log(density)"


def _policies(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "region": rng.choice(["north", "south", "west"], n),
        "age": rng.uniform(18, 80, n),
        "density": rng.uniform(10, 5000, n),
    })
    eta = -2 + 0.01 * frame.age + 0.1 * np.log(frame.density) \
        + frame.region.map({"north": 0.0, "south": 0.3, "west": -0.2})
    frame["claims"] = rng.poisson(np.exp(eta)).astype(float)
    return frame


@pytest.mark.parametrize("as_dask", [False, True], ids=["pandas", "dask"])
def test_a_poisson_formula_fits_as_statsmodels_does(as_dask):
    frame = _policies()
    data = dd.from_pandas(frame, npartitions=4) if as_dask else frame
    model = daskglm.GLM.from_formula(FORMULA, data, family="poisson", alpha=0.0, tol=1e-8)
    reference = smf.glm(FORMULA, frame, family=sm.families.Poisson()).fit(tol=1e-12)
    names = list(model.feature_names_out_)
    assert names == ["C(region)[T.south]", "C(region)[T.west]", "age", "np.log(density)"]
    # both to their own gradient tolerance: the coefficients agree to 1e-6 relative
    np.testing.assert_allclose(model.intercept_, reference.params["Intercept"], rtol=1e-6)
    np.testing.assert_allclose(model.coef_, reference.params[names].to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(model.predict(data)), reference.predict(frame),
                               rtol=1e-6)
    assert model.formula_ == FORMULA


def test_a_penalised_formula_keeps_every_level_and_no_intercept_column():
    frame = _policies(n=1500)
    frame["claimed"] = (frame.claims > 0).astype(int)
    model = daskglm.LogisticRegression.from_formula(
        "claimed ~ C(region) + age", dd.from_pandas(frame, 3), C=1.0)
    assert list(model.feature_names_out_) == ["C(region)[north]", "C(region)[south]",
                                              "C(region)[west]", "age"]
    assert model.fit_intercept
    no_intercept = daskglm.GLM.from_formula("claims ~ age - 1", frame, family="poisson")
    assert not no_intercept.fit_intercept and list(no_intercept.feature_names_out_) == ["age"]


def test_formula_mistakes_are_said_plainly():
    frame = _policies(n=200)
    with pytest.raises(ValueError, match="not columns of the data"):
        daskglm.GLM.from_formula("claims ~ agee", frame, family="poisson")
    with pytest.raises(ValueError, match="one column on its left-hand side"):
        daskglm.GLM.from_formula("~ age", frame, family="poisson")
    with pytest.raises(ValueError, match="do not pass fit_intercept"):
        daskglm.GLM.from_formula("claims ~ age", frame, family="poisson", fit_intercept=False)


def test_a_formula_takes_the_exposure_by_its_column_name():
    frame = _policies(n=3000)
    frame["exposure"] = np.random.default_rng(5).uniform(0.2, 1.0, len(frame))
    model = daskglm.GLM.from_formula("claims ~ C(region) + age", dd.from_pandas(frame, 3),
                                     family="poisson", alpha=0.0, tol=1e-8, exposure="exposure")
    reference = smf.glm("claims ~ C(region) + age", frame, family=sm.families.Poisson(),
                        exposure=frame.exposure).fit(tol=1e-12)
    np.testing.assert_allclose(model.coef_, reference.params.to_numpy()[1:], rtol=1e-6)


@pytest.mark.parametrize("as_dask", [False, True], ids=["pandas", "dask"])
def test_a_formula_with_missing_mean_fills_its_variables_before_it_is_evaluated(as_dask):
    """``missing="mean"``: a numeric variable's gaps are its mean over every row (found in
    the pass that finds the levels), a category's gaps a level of their own, both before
    the formula is evaluated (``np.log(density)`` is the log of the filled column), at
    fit and at prediction: statsmodels on the table filled by hand (1e-6, both to their
    own tolerances)."""
    frame = _policies(n=3000)
    rng = np.random.default_rng(7)
    frame.loc[rng.uniform(size=len(frame)) < 0.05, "density"] = np.nan
    frame["region"] = frame.region.where(rng.uniform(size=len(frame)) >= 0.04)
    data = dd.from_pandas(frame, npartitions=4) if as_dask else frame
    model = daskglm.GLM.from_formula(FORMULA, data, family="poisson", alpha=0.0, tol=1e-8,
                                     missing="mean")
    filled = frame.assign(density=frame.density.fillna(frame.density.mean()),
                          region=frame.region.fillna("(missing)"))
    reference = smf.glm("claims ~ C(region, levels=['north', 'south', 'west', '(missing)'])"
                        " + age + np.log(density)", filled,
                        family=sm.families.Poisson()).fit(tol=1e-12)
    assert list(model.feature_names_out_) == [
        "C(region)[T.south]", "C(region)[T.west]", "C(region)[T.(missing)]", "age",
        "np.log(density)"]
    np.testing.assert_allclose(model.intercept_, reference.params.iloc[0], rtol=1e-6)
    np.testing.assert_allclose(model.coef_, reference.params.to_numpy()[1:], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(model.predict(data)), reference.predict(filled),
                               rtol=1e-6)
    assert model.get_params()["missing"] == "mean"
    assert model.formula_design_.means["density"] == pytest.approx(frame.density.mean(),
                                                                   rel=1e-12)
    with pytest.raises(ValueError, match="null values"):
        daskglm.GLM.from_formula(FORMULA, data, family="poisson", alpha=0.0)


def test_scale_and_center_learn_their_state_from_every_row_of_a_dask_table():
    """``scale(age)`` and ``center(np.log(density))`` on a Dask table sorted by age (its
    first partition holds the youngest quarter): their means and root mean squares are
    the whole table's, as formulaic learns them on the pandas table (1e-12), and so is the
    fit (1e-7, both to their own tolerance).  So are a spline's knots and bounds (the
    first partition's would not hold the other partitions' ages)."""
    formula = "claims ~ C(region) + scale(age) + center(np.log(density))"
    frame = _policies(n=4000).sort_values("age", ignore_index=True)
    in_memory = daskglm.GLM.from_formula(formula, frame, family="poisson", alpha=0.0,
                                         tol=1e-10)
    table = dd.from_pandas(frame, npartitions=4)
    model = daskglm.GLM.from_formula(formula, table, family="poisson", alpha=0.0, tol=1e-10)
    expected = in_memory.formula_design_.spec.transform_state
    got = model.formula_design_.spec.transform_state
    assert set(got) == {"scale(age)", "center(np.log(density))"}
    for term in got:
        for key in ("center", "scale"):
            if expected[term][key] is None:
                assert got[term][key] is None
            else:
                assert float(got[term][key]) == pytest.approx(float(expected[term][key]),
                                                              rel=1e-12)
    assert float(got["scale(age)"]["scale"]) == pytest.approx(frame.age.std(), rel=1e-12)
    np.testing.assert_allclose(model.coef_, in_memory.coef_, rtol=1e-7)
    np.testing.assert_allclose(np.asarray(model.predict(table)), in_memory.predict(frame),
                               rtol=1e-7)
    spline = "claims ~ bs(age, df=4) + poly(density, degree=2)"
    in_memory = daskglm.GLM.from_formula(spline, frame, family="poisson", alpha=0.0,
                                         tol=1e-10)
    model = daskglm.GLM.from_formula(spline, table, family="poisson", alpha=0.0, tol=1e-10)
    for term, state in in_memory.formula_design_.spec.transform_state.items():
        _assert_same_state(model.formula_design_.spec.transform_state[term], state)
    np.testing.assert_allclose(model.coef_, in_memory.coef_, rtol=1e-6, atol=1e-8)


def _assert_same_state(learnt, expected):
    if isinstance(expected, dict):
        assert set(learnt) == set(expected)
        for key in expected:
            _assert_same_state(learnt[key], expected[key])
    else:
        np.testing.assert_allclose(np.asarray(learnt, dtype=float),
                                   np.asarray(expected, dtype=float), rtol=1e-12)


def test_missing_mean_fills_a_variable_read_only_inside_a_stateful_transform():
    """``scale(density)`` alone reads ``density`` (formulaic leaves it out of the formula's
    variables): with ``missing="mean"`` its gaps are still filled with its mean, before
    the transform learns its state from every row."""
    frame = _policies(n=2000)
    frame.loc[frame.index[::11], "density"] = np.nan
    table = dd.from_pandas(frame, npartitions=3)
    model = daskglm.GLM.from_formula("claims ~ C(region) + scale(density)", table,
                                     family="poisson", alpha=0.0, missing="mean")
    mean = frame.density.mean()
    assert model.formula_design_.means == {"density": pytest.approx(mean, rel=1e-12)}
    state = model.formula_design_.spec.transform_state["scale(density)"]
    filled = frame.density.fillna(mean)
    assert float(state["center"]) == pytest.approx(filled.mean(), rel=1e-12)
    assert float(state["scale"]) == pytest.approx(filled.std(), rel=1e-12)
