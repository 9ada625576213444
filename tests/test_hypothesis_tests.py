"""Wald tests, per-term Wald tests, likelihood-ratio tests and analysis of deviance after
``inference=True``, equal to statsmodels' on its data sets and on generated data, for
numpy, pandas and Dask inputs and formula fits."""

import warnings

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats

import daskglm
from daskglm.model.families import Gamma, Tweedie

#: Relative tolerance against statsmodels (both sides fit to 1e-10 or better; the
#: statistics are quadratic forms in the parameters and their covariance).
RTOL = 1e-6

#: The fair data set's formula: two categorical variables of 6 and 4 levels.
FAIR_FORMULA = "affairs ~ rate_marriage + age + C(occupation) + C(religious)"

CONSTRAINTS = ["x1 = x2", "x1 + 2*x2 = 3, x3 = 0", "x2 - x3/2 = 0.1"]


def _fit(X, y, family="poisson", **kwargs):
    return daskglm.GLM(family=family, penalty=None, solver="newton", tol=1e-8, max_iter=200,
                       inference=True,
                       **kwargs).fit(X, y)


def _reference(X, y, family, **fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm.GLM(y, sm.add_constant(np.asarray(X)), family=family).fit(tol=1e-13,
                                                                            **fit)


def _cpunish():
    data = sm.datasets.cpunish.load()
    X = np.asarray(data.exog, dtype=float)
    X[:, 3] = np.log(X[:, 3])
    return X, np.asarray(data.endog, dtype=float)


def _scotland():
    data = sm.datasets.scotland.load()
    return np.asarray(data.exog, dtype=float), np.asarray(data.endog, dtype=float)


def _generated(n=3000, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * [1.0, 2.0, 0.5, 3.0]
    eta = 0.2 + X @ [0.3, 0.3, -0.4, 0.05]
    return X, rng.poisson(np.exp(eta)).astype(float)


def _inputs(X, y):
    """The same rows as numpy, pandas (columns x1, ...) and Dask arrays of 3 chunks."""
    frame = pd.DataFrame(X, columns=[f"x{i + 1}" for i in range(X.shape[1])])
    chunk = -(-len(y) // 3)
    return {"numpy": (X, y), "pandas": (frame, pd.Series(y)),
            "dask": (da.from_array(X, chunks=(chunk, -1)), da.from_array(y, chunks=chunk))}


def _assert_same_test(ours, theirs, use_f):
    assert ours.statistic == pytest.approx(float(np.squeeze(theirs.statistic)), rel=RTOL)
    assert ours.pvalue == pytest.approx(float(np.squeeze(theirs.pvalue)), rel=RTOL)
    if use_f:
        assert ours.distribution == "F"
        assert ours.df == theirs.df_num
        assert ours.df_denom == pytest.approx(theirs.df_denom, rel=1e-12)
    else:
        assert ours.distribution == "chi2" and ours.df_denom is None
        assert ours.df == theirs.df_denom  # statsmodels keeps chi2's df there


@pytest.mark.parametrize("layout", ["numpy", "pandas", "dask"])
@pytest.mark.parametrize("data, family, reference", [
    (_cpunish, "poisson", sm.families.Poisson()),
    (_generated, "poisson", sm.families.Poisson()),
    (_scotland, Gamma(), sm.families.Gamma()),
], ids=["cpunish-poisson", "generated-poisson", "scotland-gamma"])
def test_wald_test_of_strings_and_matrices_like_statsmodels(layout, data, family, reference):
    X, y = data()
    model = _fit(*_inputs(X, y)[layout], family=family)
    k = X.shape[1] + 1
    R = np.zeros((2, k))
    R[0, 1], R[0, 2], R[1, 3] = 1.0, -1.0, 1.0
    for kind, cov_type in [("model", "nonrobust"), ("HC0", "HC0")]:
        for use_f in (False, True):
            expected = _reference(X, y, reference, cov_type=cov_type, use_t=use_f)
            for constraints in CONSTRAINTS + [R, (R, [0.5, -1.0]), (R[0], 2.0)]:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)
                    theirs = expected.wald_test(constraints, scalar=True)
                ours = model.wald_test(constraints, kind=kind, use_f=use_f)
                _assert_same_test(ours, theirs, use_f)


def test_wald_test_of_a_list_of_strings_and_of_named_parameters():
    X, y = _cpunish()
    frame = pd.DataFrame(X, columns=["income", "poverty", "black", "log_vc", "south", "degree"])
    model = _fit(frame, y)
    joined = model.wald_test("income = poverty, south = 0")
    listed = model.wald_test(["income = poverty", "south = 0"])
    theirs = _reference(X, y, sm.families.Poisson()).wald_test("x1 = x2, x5 = 0", scalar=True)
    _assert_same_test(joined, theirs, False)
    assert listed == joined
    intercept = model.wald_test("intercept = 1")
    assert intercept.statistic == pytest.approx(
        (model.params_[0] - 1) ** 2 / model.cov_params()[0, 0], rel=1e-12)


def test_wald_test_of_dependent_constraints_warns_and_counts_the_rank():
    X, y = _cpunish()
    model = _fit(X, y)
    expected = _reference(X, y, sm.families.Poisson())
    with pytest.warns(UserWarning, match="rank 1"):
        ours = model.wald_test("x1 = x2, 2*x1 = 2*x2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = expected.wald_test("x1 = x2, 2*x1 = 2*x2", scalar=True)
    assert ours.df == 1
    _assert_same_test(ours, theirs, False)


def _fair():
    return sm.datasets.fair.load_pandas().data


def _fair_reference(formula, **fit):
    return smf.glm(formula, _fair(), family=sm.families.Poisson()).fit(tol=1e-13, **fit)


def _assert_terms_like_statsmodels(ours, theirs, use_f, rename=None):
    rename = {"intercept": "Intercept", **(rename or {})}
    theirs = theirs.rename(index={v: k for k, v in rename.items()})
    assert sorted(ours.index) == sorted(theirs.index)
    theirs = theirs.loc[ours.index]
    np.testing.assert_allclose(ours["statistic"], theirs["statistic"], rtol=RTOL)
    np.testing.assert_allclose(ours["pvalue"], theirs["pvalue"], rtol=RTOL)
    np.testing.assert_array_equal(ours["df_constraint"], theirs["df_constraint"])
    assert ("df_denom" in ours) == use_f
    if use_f:
        np.testing.assert_allclose(ours["df_denom"], theirs["df_denom"], rtol=1e-12)


@pytest.mark.parametrize("layout", ["pandas", "dask"])
@pytest.mark.parametrize("use_f", [False, True])
def test_wald_test_terms_of_a_formula_with_categoricals_like_statsmodels(layout, use_f):
    data = _fair()
    if layout == "dask":
        data = dd.from_pandas(data, npartitions=3)
    model = daskglm.GLM.from_formula(FAIR_FORMULA, data, family="poisson", penalty=None,
                                     tol=1e-10, inference=True)
    for kind, cov_type in [("model", "nonrobust"), ("HC0", "HC0")]:
        ours = model.wald_test_terms(kind=kind, use_f=use_f)
        theirs = _fair_reference(FAIR_FORMULA, cov_type=cov_type, use_t=use_f)
        theirs = theirs.wald_test_terms(skip_single=False, scalar=True).table
        _assert_terms_like_statsmodels(ours, theirs, use_f, {"Intercept": "Intercept"})
        assert list(ours.loc[["C(occupation)", "C(religious)"], "df_constraint"]) == [5, 3]
    skipped = model.wald_test_terms(skip_single=True)
    assert list(skipped.index) == ["C(occupation)", "C(religious)"]


def test_wald_test_terms_groups_the_columns_of_a_spline_and_an_interaction():
    data = _fair()
    model = daskglm.GLM.from_formula(
        "affairs ~ bs(age, df=4) + C(religious):rate_marriage", data, family="poisson",
        penalty=None, tol=1e-10, inference=True)
    terms = model.wald_test_terms()
    assert terms.loc["bs(age, df=4)", "df_constraint"] == 4
    assert terms.loc["C(religious):rate_marriage", "df_constraint"] == 4
    spline = [i for i, n in enumerate(model.param_names_) if n.startswith("bs(age")]
    R = np.eye(len(model.params_))[spline]
    assert terms.loc["bs(age, df=4)", "statistic"] == pytest.approx(
        model.wald_test(R).statistic, rel=1e-12)


def test_wald_test_terms_of_a_table_with_categorical_columns_groups_each_column():
    data = _fair()
    table = data[["rate_marriage", "age", "occupation", "religious"]].astype(
        {"occupation": "category", "religious": "category"})
    model = _fit(table, data["affairs"])
    theirs = _fair_reference(FAIR_FORMULA).wald_test_terms(skip_single=False,
                                                           scalar=True).table
    _assert_terms_like_statsmodels(model.wald_test_terms(), theirs, False,
                                   {"occupation": "C(occupation)",
                                    "religious": "C(religious)"})


@pytest.mark.parametrize("layout", ["numpy", "dask"])
def test_wald_test_terms_of_an_array_fit_tests_each_parameter(layout):
    X, y = _cpunish()
    model = _fit(*_inputs(X, y)[layout])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        theirs = _reference(X, y, sm.families.Poisson()).wald_test_terms(
            skip_single=False, scalar=True).table
    ours = model.wald_test_terms()
    assert list(ours.index) == model.param_names_
    np.testing.assert_allclose(ours["statistic"], theirs["statistic"], rtol=RTOL)
    np.testing.assert_allclose(ours["statistic"], model.zvalues_ ** 2, rtol=1e-10)
    np.testing.assert_allclose(ours["pvalue"], theirs["pvalue"], rtol=RTOL)


def test_a_formula_fit_names_its_parameters_by_the_formula():
    model = daskglm.GLM.from_formula(FAIR_FORMULA, _fair(), family="poisson", penalty=None,
                                     inference=True)
    assert model.param_names_ == ["Intercept"] + list(model.feature_names_out_)
    assert "C(occupation)[T.2.0]" in model.param_names_
    assert model.wald_test("C(occupation)[T.2.0] = C(occupation)[T.3.0]").df == 1


def _ols_pair(seed=5, n=400):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = 1.0 + X @ [0.5, -0.2, 0.1, 0.0] + rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("layout", ["numpy", "dask"])
def test_lr_test_of_gaussian_fits_is_statsmodels_compare_lr_test_of_ols(layout):
    X, y = _ols_pair()
    full_inputs, restricted_inputs = _inputs(X, y)[layout], _inputs(X[:, :2], y)[layout]
    full = _fit(*full_inputs, family="gaussian")
    restricted = _fit(*restricted_inputs, family="gaussian")
    ols_full = sm.OLS(y, sm.add_constant(X)).fit()
    ols_restricted = sm.OLS(y, sm.add_constant(X[:, :2])).fit()
    expected = ols_full.compare_lr_test(ols_restricted)
    ours = full.compare_lr_test(restricted)
    assert ours == daskglm.lr_test(restricted, full)
    assert ours.statistic == pytest.approx(expected[0], rel=RTOL)
    assert ours.pvalue == pytest.approx(expected[1], rel=RTOL)
    assert ours.df_diff == expected[2] == 2


@pytest.mark.parametrize("data, family, reference, keep", [
    (_cpunish, "poisson", sm.families.Poisson(), [0, 3, 4]),
    (_generated, "poisson", sm.families.Poisson(), [0, 1]),
    (_scotland, Gamma(), sm.families.Gamma(), [0, 1, 2, 5]),
], ids=["cpunish-poisson", "generated-poisson", "scotland-gamma"])
def test_lr_test_like_statsmodels_log_likelihoods(data, family, reference, keep):
    """statsmodels' GLM results have no ``compare_lr_test``: the statistic is OLS's,
    ``-2 (llf_r - llf_f)``, of their ``llf`` (each at its own dispersion)."""
    X, y = data()
    full = _fit(X, y, family=family)
    restricted = _fit(X[:, keep], y, family=family)
    theirs_full, theirs_restricted = _reference(X, y, reference), _reference(X[:, keep], y,
                                                                             reference)
    statistic = -2.0 * (theirs_restricted.llf - theirs_full.llf)
    df_diff = theirs_restricted.df_resid - theirs_full.df_resid
    ours = daskglm.lr_test(restricted, full)
    assert ours.statistic == pytest.approx(statistic, rel=RTOL)
    assert ours.pvalue == pytest.approx(stats.chi2.sf(statistic, df_diff),
                                        rel=RTOL)
    assert ours.df_diff == df_diff == X.shape[1] - len(keep)


def test_lr_test_refuses_models_that_are_not_comparable():
    X, y = _cpunish()
    full = _fit(X, y)
    with pytest.raises(ValueError, match="different rows"):
        daskglm.lr_test(_fit(X[:-1, :2], y[:-1]), full)
    with pytest.raises(ValueError, match="different families"):
        daskglm.lr_test(_fit(X[:, :2], y, family="gaussian"), full)
    with pytest.raises(ValueError, match="without inference"):
        daskglm.lr_test(daskglm.GLM(family="poisson", penalty=None).fit(X[:, :2], y), full)
    with pytest.raises(ValueError, match="more parameters"):
        full.compare_lr_test(_fit(X, y))
    with pytest.raises(TypeError, match="daskglm estimators"):
        full.compare_lr_test(_reference(X, y, sm.families.Poisson()))
    tweedie = [_fit(X[:, :k], y + 0.5, family=Tweedie(power=1.5)) for k in (2, 4)]
    with pytest.raises(ValueError, match="no log-likelihood"):
        daskglm.lr_test(*tweedie)


def test_anova_f_test_of_gaussian_fits_is_statsmodels_anova_lm():
    X, y = _ols_pair()
    models = [_fit(X[:, :k], y, family="gaussian") for k in (1, 2, 4)]
    ols = [sm.OLS(y, sm.add_constant(X[:, :k])).fit() for k in (1, 2, 4)]
    expected = sm.stats.anova_lm(*ols)
    table = daskglm.anova(*models, test="F")
    np.testing.assert_allclose(table["df_resid"], expected["df_resid"], rtol=1e-12)
    np.testing.assert_allclose(table["deviance"], expected["ssr"], rtol=RTOL)
    np.testing.assert_allclose(table["df_diff"][1:], expected["df_diff"][1:], rtol=1e-12)
    np.testing.assert_allclose(table["deviance_diff"][1:], expected["ss_diff"][1:], rtol=RTOL)
    np.testing.assert_allclose(table["statistic"][1:], expected["F"][1:], rtol=RTOL)
    # the F denominator's df is the largest model's (R's); statsmodels takes each row's
    # own df_resid, the same on the last row
    assert table["pvalue"][2] == pytest.approx(expected["Pr(>F)"][2], rel=RTOL)
    assert table["pvalue"][1] == pytest.approx(
        stats.f.sf(expected["F"][1], 1, expected["df_resid"][2]), rel=RTOL)
    assert np.isnan(table["statistic"][0])


def test_anova_chisq_of_poisson_fits_is_the_likelihood_ratio_test():
    X, y = _cpunish()
    restricted, full = _fit(X[:, [0, 3]], y), _fit(X, y)
    table = daskglm.anova(restricted, full)
    lr = daskglm.lr_test(restricted, full)
    assert table["statistic"][1] == pytest.approx(lr.statistic, rel=1e-9)
    assert table["pvalue"][1] == pytest.approx(lr.pvalue, rel=1e-6)
    assert list(table.columns) == ["df_resid", "deviance", "df_diff", "deviance_diff",
                                   "statistic", "pvalue"]
    assert list(daskglm.anova(restricted, full, test=None).columns) == [
        "df_resid", "deviance", "df_diff", "deviance_diff"]
    with pytest.raises(ValueError, match="two models or more"):
        daskglm.anova(full)
    with pytest.raises(ValueError, match="test must be"):
        daskglm.anova(restricted, full, test="LR")


def test_tests_refuse_bad_input_before_any_work():
    X, y = _cpunish()
    plain = daskglm.GLM(family="poisson", penalty=None).fit(X, y)
    for call in (lambda: plain.wald_test("x1 = 0"), plain.wald_test_terms):
        with pytest.raises(ValueError, match="inference=True"):
            call()
    model = _fit(X, y)
    R = np.eye(len(model.params_))[:2]
    R_before = R.copy()
    with pytest.raises(ValueError, match="shape"):
        model.wald_test(R[:, :-1])
    with pytest.raises(ValueError, match="one value per constraint"):
        model.wald_test((R, [1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Cannot read the constraints"):
        model.wald_test("x1 = nothing")
    with pytest.raises(ValueError, match="NaN"):
        model.wald_test((R, [np.nan, 0.0]))
    with pytest.raises(ValueError, match="kind must be one of"):
        model.wald_test(R, kind="HC9")
    with pytest.raises(ValueError, match="use_f"):
        model.wald_test_terms(use_f="yes")
    np.testing.assert_array_equal(R, R_before)
