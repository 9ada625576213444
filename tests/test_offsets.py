"""Offsets and exposure: equal to statsmodels' ``offset``/``exposure``, carried with the rows
of Dask chunks (on a real LocalCluster), and checked before any work."""

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
import statsmodels.api as sm

import daskglm


def _exposure_data(n=600, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 3))
    exposure = r.uniform(0.5, 3.0, n)
    eta = X @ np.array([0.3, -0.2, 0.1]) + 0.2 + np.log(exposure)
    return X, exposure, np.exp(eta), r


def _params(model):
    return np.r_[model.intercept_, model.coef_]


@pytest.mark.parametrize("solver", ["lbfgs", "newton", "gd", "proximal"])
def test_poisson_exposure_equals_statsmodels(solver):
    X, exposure, mu, r = _exposure_data()
    y = r.poisson(mu).astype(float)
    expected = sm.GLM(y, sm.add_constant(X), family=sm.families.Poisson(),
                      exposure=exposure).fit(tol=1e-13)
    model = daskglm.PoissonRegressor(alpha=0, solver=solver, tol=1e-10).fit(
        X, y, exposure=exposure)
    np.testing.assert_allclose(_params(model), expected.params, rtol=1e-6)
    by_offset = daskglm.PoissonRegressor(alpha=0, solver=solver, tol=1e-10).fit(
        X, y, offset=np.log(exposure))
    np.testing.assert_allclose(by_offset.coef_, model.coef_, rtol=1e-12)
    np.testing.assert_allclose(
        model.predict(X, exposure=exposure),
        expected.predict(sm.add_constant(X), exposure=exposure), rtol=1e-6)


def test_gamma_offset_equals_statsmodels():
    X, exposure, mu, r = _exposure_data(seed=1)
    y = r.gamma(2.0, mu / 2.0)
    offset = np.log(exposure)
    expected = sm.GLM(y, sm.add_constant(X), family=sm.families.Gamma(sm.families.links.Log()),
                      offset=offset).fit(tol=1e-13)
    model = daskglm.GammaRegressor(alpha=0, tol=1e-10, inference=True).fit(X, y, offset=offset)
    np.testing.assert_allclose(_params(model), expected.params, rtol=1e-6)
    np.testing.assert_allclose(model.bse_, expected.bse, rtol=1e-6)
    for ours, theirs in [("null_deviance_", "null_deviance"), ("dispersion_", "scale"),
                         ("llf_", "llf")]:
        assert getattr(model, ours) == pytest.approx(getattr(expected, theirs), rel=1e-6), ours
    np.testing.assert_allclose(model.predict(X, offset=offset),
                               expected.predict(sm.add_constant(X), offset=offset), rtol=1e-6)


def test_gaussian_offset_with_identity_link():
    r = np.random.default_rng(2)
    X = r.normal(size=(300, 2))
    offset = r.normal(size=300)
    y = X @ np.array([1.0, -1.0]) + 0.5 + offset + r.normal(size=300)
    model = daskglm.LinearRegression(tol=1e-10).fit(X, y, offset=offset)
    assert model.solver_ == "newton"  # the normal equations take no offset; one Newton step
    expected = np.linalg.lstsq(np.c_[np.ones(300), X], y - offset, rcond=None)[0]
    np.testing.assert_allclose(_params(model), expected, rtol=1e-6)


def test_dask_offset_chunked_unlike_x_on_a_cluster(client):
    X, exposure, mu, r = _exposure_data(n=1500, seed=3)
    y = r.poisson(mu).astype(float)
    offset = np.log(exposure)
    in_memory = daskglm.PoissonRegressor(alpha=0.01, solver="newton", tol=1e-10).fit(
        X, y, offset=offset)
    chunked = daskglm.PoissonRegressor(alpha=0.01, solver="newton", tol=1e-10).fit(
        da.from_array(X, chunks=(400, -1)), da.from_array(y, chunks=250),
        offset=da.from_array(offset, chunks=700))
    assert chunked.comm_.records[0].partitions == 4
    np.testing.assert_allclose(chunked.coef_, in_memory.coef_, rtol=1e-9)


def test_lazy_prediction_with_a_dask_exposure():
    X, exposure, mu, r = _exposure_data(n=400, seed=9)
    y = r.poisson(mu).astype(float)
    model = daskglm.PoissonRegressor(alpha=0.01).fit(X, y, exposure=exposure)
    lazy = model.predict(da.from_array(X, chunks=(100, -1)),
                         exposure=da.from_array(exposure, chunks=100))
    np.testing.assert_allclose(lazy.compute(), model.predict(X, exposure=exposure), rtol=1e-12)
    with pytest.raises(ValueError, match="offset.shape"):
        model.predict(X, offset=np.zeros(3))


def test_offset_is_not_modified():
    X, exposure, mu, r = _exposure_data(n=100, seed=4)
    y = r.poisson(mu).astype(float)
    offset = np.log(exposure)
    before = offset.copy()
    daskglm.PoissonRegressor().fit(X, y, offset=offset)
    np.testing.assert_array_equal(offset, before)


def test_bad_offsets_are_refused_before_any_work():
    X, exposure, mu, r = _exposure_data(n=100, seed=5)
    y = r.poisson(mu).astype(float)
    cases = [
        ({"offset": np.zeros(99)}, "offset.shape"),
        ({"offset": np.r_[np.nan, np.zeros(99)]}, "offset contains NaN"),
        ({"exposure": np.r_[0.0, np.ones(99)]}, "exposure must be strictly positive"),
        ({"offset": np.zeros(100), "exposure": np.ones(100)}, "not both"),
    ]
    for kwargs, message in cases:
        model = daskglm.PoissonRegressor()
        with pytest.raises(ValueError, match=message):
            model.fit(X, y, **kwargs)
        assert not hasattr(model, "comm_")
    with pytest.raises(ValueError, match="log link"):
        daskglm.LinearRegression().fit(X, y, exposure=np.ones(100))
    with pytest.raises(ValueError, match="does not handle an offset"):
        daskglm.LinearRegression(solver="normal").fit(X, y, offset=np.zeros(100))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        daskglm.PoissonRegressor().fit(X, y, offset=da.zeros(99, chunks=50))


def test_nan_in_a_dask_offset_stops_the_validation_round():
    X, exposure, mu, r = _exposure_data(n=100, seed=6)
    y = r.poisson(mu).astype(float)
    offset = np.log(exposure)
    offset[70] = np.nan
    with pytest.raises(ValueError, match="offset contains NaN"):
        daskglm.PoissonRegressor().fit(da.from_array(X, chunks=(50, -1)), y,
                                       offset=da.from_array(offset, chunks=50))


def test_inference_with_exposure_like_statsmodels():
    X, exposure, mu, r = _exposure_data(n=300, seed=7)
    y = r.poisson(mu).astype(float)
    expected = sm.GLM(y, sm.add_constant(X), family=sm.families.Poisson(),
                      exposure=exposure).fit(tol=1e-13)
    model = daskglm.PoissonRegressor(alpha=0, solver="newton", tol=1e-8, inference=True).fit(
        X, y, exposure=exposure)
    np.testing.assert_allclose(model.bse_, expected.bse, rtol=1e-6)
    for ours, theirs in [("deviance_", "deviance"), ("null_deviance_", "null_deviance"),
                         ("llf_", "llf"), ("aic_", "aic"), ("bic_", "bic")]:
        assert getattr(model, ours) == pytest.approx(getattr(expected, theirs), rel=1e-6), ours
    kinds = [r.kind for r in model.comm_.records]
    assert kinds.count("inference") == 1 and 0 < kinds.count("null_model") <= 10


def test_sparse_and_streamed_partitions_carry_the_offset():
    r = np.random.default_rng(8)
    X = sp.random(400, 5, density=0.4, random_state=1, format="csr")
    exposure = r.uniform(0.5, 2.0, 400)
    y = r.poisson(exposure * np.exp(X @ np.array([0.3, -0.2, 0.1, 0.0, 0.4]) + 0.1))
    y = y.astype(float)
    expected = sm.GLM(y, sm.add_constant(X.toarray()), family=sm.families.Poisson(),
                      exposure=exposure).fit(tol=1e-13)
    kwargs = dict(alpha=0, solver="newton", tol=1e-8, inference=True)
    sparse = daskglm.PoissonRegressor(**kwargs).fit(X, y, exposure=exposure)
    streamed = daskglm.PoissonRegressor(cache="none", **kwargs).fit(
        da.from_array(X.toarray(), chunks=(100, -1)), y, exposure=exposure)
    assert streamed.cache_ == "none"
    for model in (sparse, streamed):
        np.testing.assert_allclose(model.bse_, expected.bse, rtol=1e-6)
        assert model.null_deviance_ == pytest.approx(expected.null_deviance, rel=1e-6)


def test_score_with_an_exposure_is_the_deviance_explained():
    X, exposure, mu, r = _exposure_data(n=300, seed=10)
    y = r.poisson(mu).astype(float)
    model = daskglm.PoissonRegressor(alpha=0.01).fit(X, y, exposure=exposure)
    fitted = model.predict(X, exposure=exposure)
    poisson = daskglm.Poisson()
    expected = 1 - poisson.deviance(y, fitted) / poisson.deviance(y, np.full(300, y.mean()))
    assert model.score(X, y, exposure=exposure) == pytest.approx(expected, rel=1e-12)
