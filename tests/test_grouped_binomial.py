"""Grouped binomial data: proportions with the numbers of trials as weights, and the
two-column target (successes, failures) of R's ``cbind``, against statsmodels (its
``star98`` data set, a grouped binomial) and R's documented budworm fit (Venables and
Ripley, *Modern Applied Statistics with S*, section 7.2), on numpy, pandas and Dask input."""

import warnings

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import daskglm

#: Relative tolerance against statsmodels.
RTOL = 1e-6

_STATISTICS = [("params_", "params"), ("bse_", "bse"), ("llf_", "llf"), ("aic_", "aic"),
               ("bic_", "bic"), ("deviance_", "deviance"), ("null_deviance_", "null_deviance"),
               ("pearson_chi2_", "pearson_chi2"), ("df_resid_", "df_resid")]


def _star98():
    data = sm.datasets.star98.load_pandas()
    return data.exog.to_numpy(float), data.endog.to_numpy(float)  # (NABOVE, NBELOW)


def _budworm():
    """MASS's budworm data: deaths of 20 moths per dose and sex; columns sexM, ldose and
    their product."""
    ldose = np.tile(np.arange(6.0), 2)
    dead = np.array([1, 4, 9, 13, 18, 20, 0, 2, 6, 10, 12, 16], dtype=float)
    male = np.repeat([1.0, 0.0], 6)
    return np.column_stack([male, ldose, male * ldose]), np.column_stack([dead, 20.0 - dead])


def _glm():
    return daskglm.GLM(family="binomial", penalty=None, solver="newton", tol=1e-10,
                       max_iter=100, inference=True)


def _reference(X, endog, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm.GLM(endog, sm.add_constant(X), family=sm.families.Binomial(),
                      **kwargs).fit(tol=1e-13)


def _assert_like(model, expected):
    for ours, theirs in _STATISTICS:
        np.testing.assert_allclose(getattr(model, ours), getattr(expected, theirs), rtol=RTOL,
                                   err_msg=ours)
    np.testing.assert_allclose(model.cov_params(), expected.cov_params(), rtol=RTOL)


def test_star98_two_columns_like_statsmodels_and_its_documentation():
    X, counts = _star98()
    counts_before = counts.copy()
    model = _glm().fit(X, counts)
    _assert_like(model, _reference(X, counts))
    np.testing.assert_array_equal(counts, counts_before)  # the input is not modified
    assert model.weights_kind_ == "trials" and model.nobs_ == 303 and model.df_resid_ == 282
    # statsmodels' documented star98 fit (its GLM example), to the printed digits
    assert model.llf_ == pytest.approx(-2998.6, abs=0.05)
    assert model.deviance_ == pytest.approx(4078.8, abs=0.05)
    assert model.pearson_chi2_ == pytest.approx(4.05e3, abs=5)
    assert model.params_[0] == pytest.approx(2.9589, abs=5e-5)
    assert model.bse_[0] == pytest.approx(1.547, abs=5e-4)


def test_star98_as_pandas_and_dask_frames():
    X, counts = _star98()
    expected = _reference(X, counts)
    data = sm.datasets.star98.load_pandas()
    _assert_like(_glm().fit(data.exog, data.endog), expected)
    frame = dd.from_pandas(data.exog, npartitions=4)
    targets = dd.from_pandas(data.endog, npartitions=4)
    model = _glm().fit(frame, targets)
    _assert_like(model, expected)
    assert model.param_names_[1:] == list(data.exog.columns)


def test_star98_on_dask_chunks_on_a_cluster(client):
    X, counts = _star98()
    expected = _reference(X, counts)
    fits = []
    for rows in (40, 101):  # 8 and 3 chunks
        model = _glm().fit(da.from_array(X, chunks=(rows, -1)),
                           da.from_array(counts, chunks=(rows, 1)))
        kinds = [r.kind for r in model.comm_.records]
        assert kinds.count("inference") == 1
        _assert_like(model, expected)
        fits.append(model)
    for ours, _ in _STATISTICS:
        np.testing.assert_allclose(getattr(fits[0], ours), getattr(fits[1], ours), rtol=1e-9,
                                   err_msg=ours)


def test_budworm_like_r():
    """R: ``glm(cbind(numdead, numalive) ~ sex * ldose, family = binomial)``; MASS prints
    the coefficients and standard errors to 4 decimals, deviance 4.9937 on 8 degrees of
    freedom, AIC 43.104."""
    X, counts = _budworm()
    model = _glm().fit(X, counts)
    np.testing.assert_allclose(model.params_, [-2.9935, 0.1750, 0.9060, 0.3529], atol=5e-5)
    np.testing.assert_allclose(model.bse_, [0.5527, 0.7783, 0.1671, 0.2700], atol=5e-5)
    assert model.deviance_ == pytest.approx(4.9937, abs=5e-5)
    assert model.df_resid_ == 8
    assert model.aic_ == pytest.approx(43.104, abs=5e-4)
    _assert_like(model, _reference(X, counts))


@pytest.mark.parametrize("kind, weights", [("analytic", "var_weights"),
                                           ("frequency", "freq_weights")])
def test_proportions_with_trials_as_weights_like_statsmodels(kind, weights):
    """Proportions with ``sample_weight=trials`` are statsmodels' ``GLM(prop,
    var_weights=trials)`` (or ``freq_weights``), whose log-likelihood is not R's: it
    takes each row for one trial of a fractional outcome."""
    X, counts = _star98()
    trials = counts.sum(axis=1)
    proportions = counts[:, 0] / trials
    model = _glm().fit(X, proportions, sample_weight=trials, weights_kind=kind)
    _assert_like(model, _reference(X, proportions, **{weights: trials}))
    grouped = _glm().fit(X, counts)
    np.testing.assert_allclose(model.params_, grouped.params_, rtol=1e-10)
    np.testing.assert_allclose(model.bse_, grouped.bse_, rtol=1e-10)


def test_proportions_with_trials_kind_equal_the_two_columns():
    X, counts = _budworm()
    trials = counts.sum(axis=1)
    proportions = da.from_array(counts[:, 0] / trials, chunks=5)
    model = _glm().fit(da.from_array(X, chunks=(5, -1)), proportions,
                       sample_weight=da.from_array(trials, chunks=5), weights_kind="trials")
    grouped = _glm().fit(X, counts)
    for ours, _ in _STATISTICS:
        np.testing.assert_allclose(getattr(model, ours), getattr(grouped, ours), rtol=1e-9,
                                   err_msg=ours)


def test_score_of_proportions_is_the_deviance_explained():
    X, counts = _budworm()
    trials = counts.sum(axis=1)
    model = _glm().fit(X, counts)
    score = model.score(X, counts[:, 0] / trials, sample_weight=trials)
    assert score == pytest.approx(1.0 - model.deviance_ / model.null_deviance_, rel=1e-10)


def test_logistic_regression_stays_a_classifier():
    X, counts = _budworm()
    with pytest.raises(ValueError, match="continuous"):
        daskglm.LogisticRegression().fit(X, counts[:, 0] / 20.0)


@pytest.mark.parametrize("dask_input", [False, True], ids=["numpy", "dask"])
@pytest.mark.parametrize("change, message", [
    (lambda c: c * np.array([0.5, 1.0]), "whole numbers"),
    (lambda c: c - 2.0, "non-negative whole numbers"),
    (lambda c: np.where(np.arange(12)[:, None] == 6, 0.0, c), "has no trials"),
    (lambda c: np.where(c == 4.0, np.nan, c), "NaN or infinity"),
], ids=["fractional", "negative", "zero-trials", "nan"])
def test_bad_counts_are_clear_errors(change, message, dask_input):
    X, counts = _budworm()
    counts = change(counts)
    if dask_input:
        X, counts = da.from_array(X, chunks=(4, -1)), da.from_array(counts, chunks=(4, 2))
    model = _glm()
    with pytest.raises(ValueError, match=message):
        model.fit(X, counts)
    assert not hasattr(model, "coef_")


@pytest.mark.parametrize("dask_input", [False, True], ids=["numpy", "dask"])
def test_proportions_outside_the_unit_interval_are_refused(dask_input):
    X, counts = _budworm()
    y = counts[:, 0] / 10.0  # up to 2
    if dask_input:
        X, y = da.from_array(X, chunks=(4, -1)), da.from_array(y, chunks=4)
    with pytest.raises(ValueError, match=r"targets in \[0, 1\]"):
        _glm().fit(X, y, sample_weight=np.full(12, 10.0))


def test_two_columns_take_no_sample_weight_and_other_families_no_two_columns():
    X, counts = _budworm()
    with pytest.raises(ValueError, match="pass sample_weight with a target of proportions"):
        _glm().fit(X, counts, sample_weight=np.ones(12))
    with pytest.raises(ValueError):
        daskglm.GLM(family="poisson").fit(X, counts)
    with pytest.raises(TypeError, match="must hold counts"):
        _glm().fit(X, pd.DataFrame({"s": ["a"] * 12, "f": ["b"] * 12}))
