"""What users of dask-glm's and dask-ml's estimators call, on daskglm's: ``get_deviance``."""

import dask.array as da
import numpy as np
import pytest
from sklearn.metrics import mean_gamma_deviance, mean_poisson_deviance, mean_tweedie_deviance

import daskglm


def _counts(n=600, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    mean = np.exp(0.3 * X @ rng.standard_normal(d) + 0.5)
    return X, mean, rng


@pytest.mark.parametrize("dask_input", [False, True])
def test_poisson_get_deviance_is_the_summed_unit_deviance(dask_input):
    X, mean, rng = _counts()
    y = rng.poisson(mean).astype(float)
    weight = rng.uniform(0.5, 2.0, size=len(y))
    model = daskglm.PoissonRegressor(alpha=1e-3).fit(X, y)
    mu = model.predict(X)
    expected = mean_poisson_deviance(y, mu) * len(y)
    weighted = mean_poisson_deviance(y, mu, sample_weight=weight) * weight.sum()
    if dask_input:
        X, y, weight = (da.from_array(a, chunks=150) for a in (X, y, weight))
    value = model.get_deviance(X, y)
    assert isinstance(value, float)
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    np.testing.assert_allclose(model.get_deviance(X, y, sample_weight=weight), weighted,
                               rtol=1e-12)


def test_gamma_and_tweedie_get_deviance_match_scikit_learn():
    X, mean, rng = _counts(seed=1)
    y = rng.gamma(2.0, mean / 2.0)
    gamma = daskglm.GammaRegressor(alpha=1e-3).fit(X, y)
    np.testing.assert_allclose(gamma.get_deviance(X, y),
                               mean_gamma_deviance(y, gamma.predict(X)) * len(y), rtol=1e-12)
    tweedie = daskglm.TweedieRegressor(power=1.5, alpha=1e-3).fit(X, y)
    np.testing.assert_allclose(
        tweedie.get_deviance(X, y),
        mean_tweedie_deviance(y, tweedie.predict(X), power=1.5) * len(y), rtol=1e-12)


def test_get_deviance_rejects_inconsistent_lengths():
    X, mean, rng = _counts()
    model = daskglm.PoissonRegressor().fit(X, rng.poisson(mean))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        model.get_deviance(X, np.ones(len(X) - 1))
