"""Weights by kind (``fit(..., weights_kind=...)``): frequency weights give statsmodels'
``GLM(freq_weights=)``, analytic weights ``GLM(var_weights=)`` and ``WLS(weights=)``, for
the Gaussian, Poisson, Gamma and binomial families, on numpy, pandas and Dask input (of
several chunks, on a cluster), from the one inference round; also the inverse Gaussian
and the negative binomial."""

import warnings

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy.special import gammaln

import daskglm
from daskglm.accounting.bytemodel import payload_model
from daskglm.accounting.kinds import Kind
from daskglm.model.families import InverseGaussian, NegativeBinomial, Tweedie
from daskglm.model.log_gamma_sums import LOG_GAMMA_SLOTS, log_gamma_sums, sum_log_gamma
from daskglm.model.weight_kinds import kind_sums_size

#: Relative tolerance against statsmodels (both sides solve to ~1e-10 and invert the same
#: information matrix).
RTOL = 1e-6

_STATSMODELS_FAMILIES = {
    "gaussian": sm.families.Gaussian(),
    "poisson": sm.families.Poisson(),
    "gamma": sm.families.Gamma(sm.families.links.Log()),
    "binomial": sm.families.Binomial(),
}
_STATSMODELS_WEIGHTS = {"frequency": "freq_weights", "analytic": "var_weights"}

#: Fitted attributes and statsmodels' names for them.
_STATISTICS = [("params_", "params"), ("bse_", "bse"), ("dispersion_", "scale"),
               ("llf_", "llf"), ("deviance_", "deviance"), ("null_deviance_", "null_deviance"),
               ("pearson_chi2_", "pearson_chi2"), ("aic_", "aic"), ("bic_", "bic"),
               ("df_resid_", "df_resid")]


def _data(family, n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [1.0, 2.0, 0.5]
    eta = 0.3 + X @ np.array([0.2, -0.15, 0.3])
    weight = rng.uniform(0.2, 4.0, size=n)
    if family == "gaussian":
        y = eta + rng.normal(size=n)
    elif family == "poisson":
        y = rng.poisson(np.exp(eta)).astype(float)
    elif family == "gamma":
        y = rng.gamma(2.0, np.exp(eta) / 2.0)
    else:
        y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    return X, y, weight


def _glm(family, **kwargs):
    return daskglm.GLM(family=family, link="log" if family == "gamma" else None, penalty=None,
                       solver="newton", tol=1e-10, max_iter=100, inference=True, **kwargs)


def _reference(X, y, family, kind, weight):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = sm.GLM(y, sm.add_constant(X), family=_STATSMODELS_FAMILIES[family],
                       **{_STATSMODELS_WEIGHTS[kind]: weight})
        return model.fit(tol=1e-13, maxiter=200)


def _assert_like(model, expected, nobs):
    for ours, theirs in _STATISTICS:
        np.testing.assert_allclose(getattr(model, ours), getattr(expected, theirs), rtol=RTOL,
                                   err_msg=ours)
    np.testing.assert_allclose(model.cov_params(), expected.cov_params(), rtol=RTOL)
    assert model.nobs_ == pytest.approx(nobs, rel=RTOL)


@pytest.mark.parametrize("kind", ["frequency", "analytic"])
@pytest.mark.parametrize("family", ["gaussian", "poisson", "gamma", "binomial"])
def test_each_kind_like_statsmodels(family, kind):
    X, y, weight = _data(family)
    model = _glm(family).fit(X, y, sample_weight=weight, weights_kind=kind)
    expected = _reference(X, y, family, kind, weight)
    # nobs_: statsmodels' model.wnobs (its results.nobs counts rows also for freq_weights)
    _assert_like(model, expected, expected.model.wnobs)
    assert model.weights_kind_ == kind


def test_the_kinds_differ_as_the_issue_says():
    """Standard errors of frequency and analytic weights differ by
    sqrt((n - k) / (sum(w) - k)) for the Gaussian; the coefficients do not."""
    X, y, weight = _data("gaussian")
    frequency = _glm("gaussian").fit(X, y, sample_weight=weight)
    analytic = _glm("gaussian").fit(X, y, sample_weight=weight, weights_kind="analytic")
    n, k = len(y), X.shape[1] + 1
    np.testing.assert_allclose(analytic.params_, frequency.params_, rtol=1e-12)
    np.testing.assert_allclose(frequency.bse_ / analytic.bse_,
                               np.sqrt((n - k) / (weight.sum() - k)), rtol=1e-10)
    assert frequency.weights_kind_ == "frequency"  # the default, for inference


def test_analytic_weights_are_weighted_least_squares():
    X, y, weight = _data("gaussian")
    expected = sm.WLS(y, sm.add_constant(X), weights=weight).fit()
    for model in (daskglm.LinearRegression(inference=True),
                  _glm("gaussian")):
        model.fit(X, y, sample_weight=weight, weights_kind="analytic")
        for ours, theirs in [("params_", "params"), ("bse_", "bse"), ("dispersion_", "scale"),
                             ("llf_", "llf"), ("aic_", "aic"), ("bic_", "bic"),
                             ("df_resid_", "df_resid"), ("nobs_", "nobs")]:
            np.testing.assert_allclose(getattr(model, ours), getattr(expected, theirs),
                                       rtol=RTOL, err_msg=ours)


def test_logistic_regression_with_analytic_weights():
    X, y, weight = _data("binomial")
    model = daskglm.LogisticRegression(penalty=None, solver="newton", tol=1e-10,
                                       inference=True)
    model.fit(X, y, sample_weight=weight, weights_kind="analytic")
    expected = _reference(X, y, "binomial", "analytic", weight)
    _assert_like(model, expected, len(y))


def test_pandas_input_like_numpy():
    X, y, weight = _data("gamma")
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    model = _glm("gamma").fit(frame, pd.Series(y), sample_weight=pd.Series(weight),
                              weights_kind="analytic")
    _assert_like(model, _reference(X, y, "gamma", "analytic", weight), len(y))
    assert model.param_names_ == ["intercept", "a", "b", "c"]


@pytest.mark.parametrize("family", ["gaussian", "gamma", "poisson", "binomial"])
def test_dask_chunks_on_a_cluster_one_inference_round(client, family):
    X, y, weight = _data(family)
    for kind in ("analytic", "frequency"):
        expected = _reference(X, y, family, kind, weight)
        fits = []
        for rows in (50, 97):  # 5 and 3 chunks
            model = _glm(family).fit(da.from_array(X, chunks=(rows, -1)),
                                     da.from_array(y, chunks=rows),
                                     sample_weight=da.from_array(weight, chunks=rows),
                                     weights_kind=kind)
            kinds = [r.kind for r in model.comm_.records]
            assert kinds.count("inference") == 1 and kinds[-1] == "inference"
            _assert_like(model, expected, expected.model.wnobs)
            fits.append(model)
        for ours, _ in _STATISTICS:  # the chunking changes round-off only
            np.testing.assert_allclose(getattr(fits[0], ours), getattr(fits[1], ours),
                                       rtol=1e-9, err_msg=ours)


def test_rows_of_zero_analytic_weight_are_not_observations():
    """As R: a row of zero analytic weight counts in neither ``nobs_`` nor the
    log-likelihood (statsmodels would count it in nobs, and its Gaussian llf is -inf)."""
    X, y, weight = _data("gamma")
    weight[::7] = 0.0
    model = _glm("gamma").fit(X, y, sample_weight=weight, weights_kind="analytic")
    kept = weight > 0
    expected = _reference(X[kept], y[kept], "gamma", "analytic", weight[kept])
    _assert_like(model, expected, kept.sum())


def test_without_weights_the_kinds_agree():
    X, y, _ = _data("gamma")
    frequency = _glm("gamma").fit(X, y)
    analytic = _glm("gamma").fit(X, y, weights_kind="analytic")
    for ours, _ in _STATISTICS:
        np.testing.assert_allclose(getattr(analytic, ours), getattr(frequency, ours),
                                   rtol=1e-10, err_msg=ours)


def test_bad_kinds_are_refused_before_any_work():
    X, y, weight = _data("poisson")
    weight_before = weight.copy()
    with pytest.raises(ValueError, match="weights_kind must be one of"):
        _glm("poisson").fit(X, y, sample_weight=weight, weights_kind="survey")
    with pytest.raises(ValueError, match="needs the binomial family"):
        _glm("poisson").fit(X, y, sample_weight=weight, weights_kind="trials")
    binary = (y > 1).astype(float)
    with pytest.raises(ValueError, match="a classifier's targets are labels"):
        daskglm.LogisticRegression(inference=True).fit(X, binary, weights_kind="trials")
    with pytest.raises(ValueError, match="weights_kind must be one of"):
        daskglm.LinearRegression().fit(X, np.column_stack([y, y]), weights_kind=1)
    model = _glm("poisson")
    with pytest.raises(ValueError, match="weights_kind must be one of"):
        model.fit(da.from_array(X, chunks=(60, -1)), da.from_array(y, chunks=60),
                  weights_kind="Analytic")
    assert not hasattr(model, "coef_")  # refused before the fit
    np.testing.assert_array_equal(weight, weight_before)


@pytest.mark.parametrize("weight", [
    np.array([1.0, 1.0, 1.0]),
    np.array([0.3, 2.5, 17.0, 1e-3, 450.0]),
    np.random.default_rng(1).lognormal(0.0, 2.0, size=500),
    np.random.default_rng(2).integers(1, 40, size=500).astype(float),
], ids=["ones", "spread", "lognormal", "counts"])
def test_log_gamma_sums_are_exact_at_any_scale(weight):
    """The Gamma's ``sum log Gamma(w_i / scale)`` from sums over rows made before the
    scale is known: to round-off, for scales over 12 orders of magnitude."""
    halves = log_gamma_sums(weight[: len(weight) // 2]) + log_gamma_sums(weight[len(weight) // 2:])
    for t in (1e-6, 1e-3, 0.2, 1.0, 3.7, 150.0, 1e6):
        exact = gammaln(weight * t).sum()
        assert sum_log_gamma(halves, t) == pytest.approx(exact, rel=1e-11, abs=1e-9), t


@pytest.mark.parametrize("kind", ["frequency", "analytic"])
@pytest.mark.parametrize("family, reference", [
    (InverseGaussian("log"), sm.families.InverseGaussian(sm.families.links.Log())),
    (Tweedie(3.0, "log"), sm.families.InverseGaussian(sm.families.links.Log())),
    (NegativeBinomial(0.5), sm.families.NegativeBinomial(alpha=0.5)),
], ids=["inverse-gaussian", "tweedie-3", "negative-binomial"])
def test_the_other_families_like_statsmodels(family, reference, kind):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 2)) * 0.3
    weight = rng.uniform(0.3, 4.0, size=300)
    mu = np.exp(0.5 + X @ [0.3, -0.2])
    if isinstance(family, NegativeBinomial):
        y = rng.negative_binomial(2, 2 / (2 + mu)).astype(float)
    else:
        y = rng.wald(mu, 4.0)
    model = daskglm.GLM(family=family, penalty=None, solver="newton", tol=1e-10, max_iter=200,
                        inference=True).fit(X, y, sample_weight=weight, weights_kind=kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = sm.GLM(y, sm.add_constant(X), family=reference,
                          **{_STATSMODELS_WEIGHTS[kind]: weight}).fit(tol=1e-13, maxiter=200)
    _assert_like(model, expected, expected.model.wnobs)


def test_from_formula_takes_the_kind():
    X, y, weight = _data("gaussian")
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y, "w": weight})
    model = daskglm.GLM.from_formula("y ~ a + b + c", frame, sample_weight="w",
                                     weights_kind="analytic", penalty=None, inference=True)
    expected = sm.WLS(y, sm.add_constant(X), weights=weight).fit()
    np.testing.assert_allclose(model.bse_, expected.bse, rtol=RTOL)
    assert model.weights_kind_ == "analytic" and model.nobs_ == len(y)


@pytest.mark.parametrize("family, kind", [("gamma", "analytic"), ("gaussian", "analytic"),
                                          ("binomial", "trials"), ("poisson", "frequency")])
def test_the_inference_byte_model_counts_the_sums_of_the_kind(family, kind):
    """The inference round returns the kind's log-likelihood sums (a Gamma's analytic
    weights: 340 of them) besides the rest: the byte model counts them."""
    X, y, weight = _data(family)
    if kind == "trials":
        weight = np.round(weight) + 1.0
        y = np.round(y * weight) / weight
    model = _glm(family).fit(X, y, sample_weight=weight, weights_kind=kind)
    record = [r for r in model.comm_.records if r.kind == Kind.INFERENCE][0]
    extra = kind_sums_size(model._family().distribution, kind)
    assert extra == {"analytic": 2 + LOG_GAMMA_SLOTS if family == "gamma" else 2,
                     "trials": 2, "frequency": 0}[kind]
    down, up = payload_model(Kind.INFERENCE, n_params=4, partitions=record.partitions,
                             groups=record.groups, split_every=record.split_every,
                             kind_sums=extra)
    assert (record.bytes_sent, record.bytes_returned) == (down, up)


def test_measured_inference_bytes_follow_the_model_on_a_cluster(client):
    """Analytic weights of a Gamma fit on a cluster: the inference round's bytes, as
    Dask measures them, within 20% of the modelled ones, as the Hessian rounds' before
    it; without the kind's sums the model would miss most of the round's payload.  One
    partition per worker, so that each worker returns one partial (the tree's)."""
    X, y, weight = _data("gamma", n=2000)
    rows = 1000
    model = _glm("gamma").fit(da.from_array(X, chunks=(rows, -1)), da.from_array(y, chunks=rows),
                              sample_weight=da.from_array(weight, chunks=rows),
                              weights_kind="analytic")
    record = [r for r in model.comm_.records if r.kind == Kind.INFERENCE][0]
    extra = kind_sums_size(model._family().distribution, "analytic")
    down, up = payload_model(Kind.INFERENCE, n_params=4, partitions=record.partitions,
                             groups=record.groups, split_every=record.split_every,
                             kind_sums=extra)
    assert (record.bytes_sent, record.bytes_returned) == (down, up)
    without = sum(payload_model(Kind.INFERENCE, n_params=4, partitions=record.partitions,
                                groups=record.groups, split_every=record.split_every))
    assert without < 0.5 * (down + up)
    hessian = [r for r in model.comm_.records if r.kind == Kind.HESSIAN][-1]
    for measured in (record, hessian):
        assert measured.bytes_measured is not None
        ratio = measured.bytes_measured / measured.bytes_modelled
        assert 0.8 <= ratio <= 1.25, measured
