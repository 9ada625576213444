"""Inference after a fit (``inference=True``): standard errors, p-values, covariances
(model-based, HC0, HC1), deviances, log-likelihood, AIC/BIC and dispersion equal to
statsmodels' ``GLM`` on its own data sets, from one inference round."""

import warnings

import dask.array as da
import numpy as np
import pytest
import statsmodels.api as sm

import daskglm
from daskglm.accounting.bytemodel import payload_model
from daskglm.model.families import Gamma, InverseGaussian, NegativeBinomial, Tweedie

#: Relative tolerance against statsmodels (the data sets' columns differ by up to 10^4 in
#: scale; both sides invert the information matrix of those columns).
RTOL = 1e-6


def _scotland():
    data = sm.datasets.scotland.load()
    return np.asarray(data.exog, dtype=float), np.asarray(data.endog, dtype=float)


def _spector():
    data = sm.datasets.spector.load()
    return np.asarray(data.exog, dtype=float), np.asarray(data.endog, dtype=float)


def _cpunish():
    data = sm.datasets.cpunish.load()
    X = np.asarray(data.exog, dtype=float)
    X[:, 3] = np.log(X[:, 3])
    return X, np.asarray(data.endog, dtype=float)


def _reference(X, y, family, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' DomainWarning for the inverse link
        model = sm.GLM(y, sm.add_constant(X), family=family, **kwargs)
        return {kind: model.fit(tol=1e-13, maxiter=200, cov_type=kind)
                for kind in ("nonrobust", "HC0")}


def _assert_like_statsmodels(model, references, n_rows):
    expected = references["nonrobust"]
    np.testing.assert_allclose(model.params_, expected.params, rtol=RTOL)
    np.testing.assert_allclose(model.bse_, expected.bse, rtol=RTOL)
    np.testing.assert_allclose(model.zvalues_, expected.tvalues, rtol=RTOL)
    np.testing.assert_allclose(model.pvalues_, expected.pvalues, rtol=1e-5, atol=1e-300)
    np.testing.assert_allclose(model.conf_int(), expected.conf_int(), rtol=RTOL)
    np.testing.assert_allclose(model.cov_params(), expected.cov_params(), rtol=RTOL)
    np.testing.assert_allclose(model.cov_params("HC0"), references["HC0"].cov_params(),
                               rtol=RTOL)
    # HC1 = HC0 n / (n - k); statsmodels' GLM labels HC1 but applies no such factor
    k = len(model.params_)
    np.testing.assert_allclose(model.cov_params("HC1"),
                               references["HC0"].cov_params() * n_rows / (n_rows - k), rtol=RTOL)
    for ours, theirs in [("deviance_", "deviance"), ("null_deviance_", "null_deviance"),
                         ("pearson_chi2_", "pearson_chi2"), ("dispersion_", "scale"),
                         ("llf_", "llf"), ("aic_", "aic"), ("bic_", "bic"),
                         ("df_resid_", "df_resid")]:
        assert getattr(model, ours) == pytest.approx(getattr(expected, theirs), rel=RTOL), ours


@pytest.mark.parametrize("family, reference", [
    (Gamma(), sm.families.Gamma()),
    (Gamma("log"), sm.families.Gamma(sm.families.links.Log())),
    (InverseGaussian(), sm.families.InverseGaussian()),
], ids=["gamma-inverse", "gamma-log", "inverse-gaussian"])
def test_scotland_like_statsmodels(family, reference):
    X, y = _scotland()
    model = daskglm.GLM(family=family, penalty=None, solver="newton", tol=1e-8, max_iter=200,
                        inference=True).fit(X, y)
    _assert_like_statsmodels(model, _reference(X, y, reference), len(y))


def test_spector_probit_and_logit_like_statsmodels():
    X, y = _spector()
    probit = daskglm.GLM(family="binomial", link="probit", penalty=None, solver="newton",
                         tol=1e-10, inference=True).fit(X, y)
    _assert_like_statsmodels(
        probit, _reference(X, y, sm.families.Binomial(sm.families.links.Probit())), len(y))
    logit = daskglm.LogisticRegression(penalty=None, solver="newton", tol=1e-10,
                                       inference=True).fit(X, y)
    _assert_like_statsmodels(logit, _reference(X, y, sm.families.Binomial()), len(y))


def test_spector_cloglog_like_statsmodels():
    X, y = _spector()
    model = daskglm.GLM(family="binomial", link="cloglog", penalty=None, solver="newton",
                        tol=1e-10, inference=True).fit(X, y)
    _assert_like_statsmodels(
        model, _reference(X, y, sm.families.Binomial(sm.families.links.CLogLog())), len(y))


def test_cpunish_poisson_with_weights_like_statsmodels_frequency_weights():
    X, y = _cpunish()
    w = np.arange(1, 18) % 3 + 1.0
    model = daskglm.PoissonRegressor(alpha=0, solver="newton", tol=1e-8, inference=True).fit(
        X, y, sample_weight=w)
    references = _reference(X, y, sm.families.Poisson(), freq_weights=w)
    expected = references["nonrobust"]
    np.testing.assert_allclose(model.bse_, expected.bse, rtol=RTOL)
    np.testing.assert_allclose(model.cov_params("HC0"), references["HC0"].cov_params(),
                               rtol=RTOL)
    for ours, theirs in [("deviance_", "deviance"), ("null_deviance_", "null_deviance"),
                         ("llf_", "llf"), ("aic_", "aic"), ("bic_", "bic")]:
        assert getattr(model, ours) == pytest.approx(getattr(expected, theirs), rel=RTOL), ours


def test_linear_regression_estimates_the_dispersion():
    data = sm.datasets.longley.load()
    X, y = np.asarray(data.exog, dtype=float), np.asarray(data.endog, dtype=float)
    model = daskglm.LinearRegression(inference=True).fit(X, y)
    references = _reference(X, y, sm.families.Gaussian())
    # the normal equations on Longley's collinear columns: 1e-6 is what float64 allows
    np.testing.assert_allclose(model.bse_, references["nonrobust"].bse, rtol=1e-5)
    assert model.llf_ == pytest.approx(references["nonrobust"].llf, rel=RTOL)
    assert model.dispersion_ == pytest.approx(references["nonrobust"].scale, rel=1e-5)


def test_negative_binomial_like_statsmodels():
    X, y = _cpunish()
    model = daskglm.GLM(family=NegativeBinomial(0.3), penalty=None, solver="newton", tol=1e-5,
                        inference=True).fit(X, y)
    _assert_like_statsmodels(
        model, _reference(X, y, sm.families.NegativeBinomial(alpha=0.3)), len(y))


def test_one_inference_round_on_a_cluster_equals_in_memory(client):
    X, y = _scotland()
    kwargs = dict(alpha=0, solver="newton", tol=1e-8, max_iter=200, inference=True)
    chunked = daskglm.GammaRegressor(**kwargs).fit(da.from_array(X, chunks=(8, -1)),
                                                   da.from_array(y, chunks=8))
    kinds = [r.kind for r in chunked.comm_.records]
    assert kinds.count("inference") == 1 and kinds[-1] == "inference"
    assert chunked.comm_.records[-1].partitions == 4
    in_memory = daskglm.GammaRegressor(**kwargs).fit(X, y)
    np.testing.assert_allclose(chunked.bse_, in_memory.bse_, rtol=1e-9)
    # the sandwich multiplies two inverses of an information matrix whose columns differ by
    # 10^4 in scale: round-off of the sums, which varies with the chunks, grows to ~1e-9
    np.testing.assert_allclose(chunked.cov_params("HC0"), in_memory.cov_params("HC0"),
                               rtol=1e-7)
    assert chunked.deviance_ == pytest.approx(in_memory.deviance_, rel=1e-12)
    _assert_like_statsmodels(
        chunked, _reference(X, y, sm.families.Gamma(sm.families.links.Log())), len(y))


def test_rescaled_columns_give_the_same_statistics():
    X, y = _cpunish()
    huge = X.copy()
    huge[:, 0] *= 2.0**600  # rescaled by the engine (no penalty), mapped back here
    small = daskglm.PoissonRegressor(alpha=0, solver="newton", tol=1e-8, inference=True)
    big = daskglm.PoissonRegressor(alpha=0, solver="newton", tol=1e-8, inference=True)
    small.fit(X, y)
    big.fit(huge, y)
    assert any(r.kind == "scale" for r in big.comm_.records)
    np.testing.assert_allclose(big.bse_[1] * 2.0**600, small.bse_[1], rtol=1e-9)
    np.testing.assert_allclose(np.delete(big.bse_, 1), np.delete(small.bse_, 1), rtol=1e-9)


def test_t_intervals_like_statsmodels_use_t():
    X, y = _scotland()
    model = daskglm.GLM(family="gamma", penalty=None, solver="newton", tol=1e-8,
                        inference=True).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = sm.GLM(y, sm.add_constant(X), family=sm.families.Gamma()).fit(
            tol=1e-13, use_t=True)
    np.testing.assert_allclose(model.conf_int(use_t=True), expected.conf_int(), rtol=RTOL)
    assert "P>|t|" in model.summary(use_t=True)


def test_summary_table():
    X, y = _spector()
    model = daskglm.GLM(family="binomial", link="probit", penalty=None, solver="newton",
                        tol=1e-10, inference=True).fit(X, y)
    table = model.summary()
    for text in ("coef", "std err", "P>|z|", "[0.025", "0.975]", "intercept", "x3",
                 "Deviance", "AIC"):
        assert text in table
    assert f"{model.bse_[0]:.4g}" in table


def test_without_inference_and_penalised():
    X, y = _spector()
    model = daskglm.LogisticRegression().fit(X, y)
    assert not any(r.kind == "inference" for r in model.comm_.records)
    with pytest.raises(ValueError, match="inference=True"):
        model.summary()
    penalised = daskglm.LogisticRegression(C=1.0, inference=True)
    with pytest.raises(ValueError, match="unpenalised"):
        penalised.fit(X, y)
    assert not hasattr(penalised, "comm_")
    with pytest.raises(ValueError, match="unpenalised"):
        daskglm.GammaRegressor(alpha=0.1, inference=True).fit(X, y + 1)
    with pytest.raises(ValueError, match="unpenalised"):
        daskglm.GLM("binomial", penalty="elasticnet", alpha=0.1, inference=True).fit(X, y)
    fitted = daskglm.LogisticRegression(penalty=None, inference=True).fit(X, y)
    with pytest.raises(ValueError, match="kind"):
        fitted.cov_params("HC3")
    fitted.set_params(inference=False).fit(X, y)
    assert not hasattr(fitted, "bse_")  # statistics of the earlier fit do not survive


@pytest.mark.parametrize("family", ["gamma", "binomial", Tweedie(1.5)], ids=str)
def test_the_byte_model_is_what_the_engine_counts(family):
    X, y = _spector() if family == "binomial" else _scotland()
    model = daskglm.GLM(family=family, penalty=None, solver="newton", tol=1e-6,
                        inference=True).fit(X, y, offset=np.zeros(len(y)))
    kinds = {"validate", "validate_hessian", "inference", "null_model"}
    records = [r for r in model.comm_.records if r.kind in kinds]
    found = [r.kind for r in model.comm_.records]
    assert {"inference", "null_model"} <= set(found)
    assert "target_mean" not in found  # the mean target: summed in the validation round
    for record in records:
        # Newton's method reads no sample of rows (the validation round takes none)
        down, up = payload_model(record.kind, n_params=X.shape[1] + 1,
                                 n_features=X.shape[1], partitions=record.partitions,
                                 split_every=record.split_every or 8, groups=record.groups,
                                 sample_rows=False)
        assert (record.bytes_sent, record.bytes_returned) == (down, up), record.kind


def test_without_an_intercept_like_statsmodels():
    X, y = _cpunish()
    model = daskglm.PoissonRegressor(alpha=0, fit_intercept=False, solver="newton", tol=1e-8,
                                     inference=True).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = sm.GLM(y, X, family=sm.families.Poisson()).fit(tol=1e-13)
    assert model.param_names_ == [f"x{i}" for i in range(1, 7)]
    np.testing.assert_allclose(model.bse_, expected.bse, rtol=RTOL)
    for ours, theirs in [("null_deviance_", "null_deviance"), ("aic_", "aic"), ("bic_", "bic")]:
        assert getattr(model, ours) == pytest.approx(getattr(expected, theirs), rel=RTOL), ours
