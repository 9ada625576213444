"""The table workflows of glum, H2O, Spark ML and statsmodels users, written as they would
write them against Dask DataFrames on a LocalCluster of two worker processes, each
against its reference on the same rows in memory.

Tolerances: the fits run to gradient entries of at most 1e-10 (1e-12 for statsmodels);
coefficients then agree to 1e-6 relative (1e-5 for hashed text, an ill-conditioned
problem), standard errors to 1e-5.
"""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import LogisticRegression as SkLogistic
from sklearn.pipeline import Pipeline

import daskglm


def _policies(n=6000, seed=0, missing=0.0):
    """A policy table: a category of 10 regions, a string plan, a numeric age and a
    density (``missing`` of them NaN), an exposure, claim counts and a binary lapse."""
    rng = np.random.default_rng(seed)
    regions = [f"r{i}" for i in range(10)]
    region = rng.choice(regions, n)
    plan = rng.choice(["basic", "plus", "gold"], n)
    age = rng.uniform(18, 80, n)
    density = rng.uniform(10, 5000, n)
    exposure = rng.uniform(0.2, 1.0, n)
    effect = dict(zip(regions, rng.normal(0, 0.3, 10)))
    eta = -2 + 0.01 * age + 0.1 * np.log(density) + np.vectorize(effect.get)(region) \
        + 0.3 * (plan == "gold")
    frame = pd.DataFrame({
        "region": pd.Categorical(region, categories=regions), "plan": plan, "age": age,
        "density": density, "exposure": exposure,
        "claims": rng.poisson(np.exp(eta) * exposure).astype(float),
        "lapse": (rng.uniform(size=n) < 1 / (1 + np.exp(1 - 0.5 * (eta + 2)))).astype(float),
    })
    if missing:
        frame.loc[rng.uniform(size=n) < missing, "density"] = np.nan
    return frame


def _dummies(frame, columns, drop_first=True):
    return pd.get_dummies(frame[columns], columns=[c for c in ("region", "plan")
                                                   if c in columns],
                          drop_first=drop_first, dtype=float)


def test_insurance_frequency_with_categories_and_exposure(client):
    """glum's tutorial shape: ``PoissonRegressor(alpha).fit(ddf[features], ddf.claims,
    exposure=ddf.exposure)``, as written, against statsmodels on dummies made by hand."""
    frame = _policies()
    ddf = dd.from_pandas(frame, npartitions=4)
    features = ["region", "plan", "age"]
    model = daskglm.PoissonRegressor(alpha=0.0, tol=1e-10).fit(
        ddf[features], ddf.claims, exposure=ddf.exposure)
    design = _dummies(frame, features)
    reference = sm.GLM(frame.claims, sm.add_constant(design), family=sm.families.Poisson(),
                       exposure=frame.exposure).fit(tol=1e-12)
    names = list(model.feature_names_out_)
    expected = reference.params[[f"{c.split('[')[0]}_{c.split('[')[1][:-1]}" if "[" in c
                                 else c for c in names]].to_numpy()
    np.testing.assert_allclose(model.coef_, expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(model.intercept_, reference.params["const"], rtol=1e-6)
    assert model.cache_ == "memory" and len(names) == 9 + 2 + 1


def test_an_h2o_glm_with_factors_missing_values_and_p_values(client):
    """H2O's ``GLM(family="binomial", inference=True)`` on a frame with factors and 5%
    missing densities: mean imputation (means computed on the cluster), a coefficient
    and a p-value per level, against statsmodels on the same filled dummies."""
    frame = _policies(missing=0.05)
    ddf = dd.from_pandas(frame, npartitions=4)
    features = ["region", "plan", "age", "density"]
    model = daskglm.GLM(family="binomial", penalty=None, solver="newton", tol=1e-10,
                        inference=True, missing="mean").fit(ddf[features], ddf.lapse)
    filled = frame.copy()
    filled["density"] = filled.density.fillna(frame.density.mean())
    design = sm.add_constant(_dummies(filled, features))
    reference = sm.GLM(frame.lapse, design, family=sm.families.Binomial()).fit(tol=1e-12)
    np.testing.assert_allclose(model.coef_, reference.params.to_numpy()[1:], rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(model.bse_, reference.bse.to_numpy(), rtol=1e-5)  # const first
    assert "region[r1]" in model.summary()


def test_a_formula_on_a_dask_frame(client):
    """statsmodels' and glum's formula: ``claims ~ C(region) + age + np.log(density)``."""
    pytest.importorskip("formulaic")
    frame = _policies()
    formula = "claims ~ C(region) + age + np.log(density)"
    model = daskglm.GLM.from_formula(formula, dd.from_pandas(frame, npartitions=4),
                                     family="poisson", alpha=0.0, solver="newton", tol=1e-10,
                                     exposure="exposure")
    reference = smf.glm(formula, frame, family=sm.families.Poisson(),
                        exposure=frame.exposure).fit(tol=1e-12)
    names = list(model.feature_names_out_)
    np.testing.assert_allclose(model.coef_, reference.params[names].to_numpy(), rtol=1e-6)


@pytest.mark.parametrize("with_exposure", [False, True], ids=["counts", "exposure"])
def test_a_poisson_path_with_cv_on_a_dask_frame_is_the_in_memory_one(client, with_exposure):
    """H2O's ``lambda_search`` / glum's path with CV (with the policies' exposure, as
    H2O's ``offset_column``): the same path and choice from the Dask frame's partitions
    as from the pandas frame's (scattered by the engine)."""
    frame = _policies(n=4000)
    features = ["region", "plan", "age"]

    def fit(X, y, exposure):
        return daskglm.GLMCV(family="poisson", alphas=6, cv=3, tol=1e-10).fit(
            X, y, exposure=exposure if with_exposure else None)

    ddf = dd.from_pandas(frame, npartitions=4)
    on_cluster = fit(ddf[features], ddf.claims, ddf.exposure)
    in_memory = fit(frame[features], frame.claims, frame.exposure)
    np.testing.assert_allclose(on_cluster.alphas_, in_memory.alphas_, rtol=1e-10)
    assert on_cluster.alpha_ == pytest.approx(in_memory.alpha_, rel=1e-10)
    np.testing.assert_allclose(on_cluster.coef_, in_memory.coef_, rtol=1e-6, atol=1e-9)


def test_spark_mls_text_pipeline_saves_and_loads(client, tmp_path):
    """Spark ML's tokenise -> hash -> logistic regression -> save -> load -> predict, on a
    Dask text column."""
    rng = np.random.default_rng(0)
    good, bad = ["great", "fine", "love"], ["awful", "broken", "hate"]
    labels = rng.integers(0, 2, 2000)
    texts = pd.Series([" ".join(rng.choice((good if k else bad) + ["the", "it"], size=6))
                       for k in labels], name="text")
    frame = dd.from_pandas(pd.DataFrame({"text": texts, "label": labels}), npartitions=4)
    pipeline = Pipeline([("hash", daskglm.HashingFeatures(n_features=2**10)),
                         ("clf", daskglm.LogisticRegression(C=10.0, tol=1e-10))])
    pipeline.fit(frame["text"], frame["label"])
    hashed = HashingVectorizer(n_features=2**10).transform(texts)
    reference = SkLogistic(C=10.0, tol=1e-12, max_iter=10_000,
                           solver="newton-cholesky").fit(hashed, labels)
    # hashed words make an ill-conditioned problem: 1e-5 relative at gradient tol 1e-10
    np.testing.assert_allclose(pipeline[-1].coef_, reference.coef_, rtol=1e-5, atol=1e-8)
    daskglm.save(pipeline[-1], tmp_path / "clf.npz")
    loaded = Pipeline([("hash", daskglm.HashingFeatures(n_features=2**10)),
                       ("clf", daskglm.load(tmp_path / "clf.npz"))])
    np.testing.assert_array_equal(np.asarray(loaded.predict(frame["text"])),
                                  np.asarray(pipeline.predict(frame["text"])))


@pytest.mark.parametrize("how", ["estimator", "formula", "numeric"])
def test_a_parquet_table_whose_reads_dask_fuses_is_fitted_on_all_its_rows(client, tmp_path,
                                                                           how):
    """A frame read from parquet: counting a partition's rows reads no column, and Dask
    fuses the files into fewer partitions for it than the frame computes to.  The rows
    are counted on the partitions that are encoded, so the fit is the pandas frame's."""
    if how == "formula":
        pytest.importorskip("formulaic")
    frame = _policies(missing=0.05)
    frame["region"] = frame.region.astype(str)  # levels unknown to the parquet reader
    dd.from_pandas(frame, npartitions=8).to_parquet(tmp_path / "policies")
    ddf = dd.read_parquet(tmp_path / "policies")
    features = ["region", "plan", "age", "density"]
    if how == "estimator":
        def fit(data):
            return daskglm.PoissonRegressor(alpha=0.0, tol=1e-10, missing="mean").fit(
                data[features], data.claims, exposure=data.exposure)
    elif how == "formula":
        frame, ddf = frame.dropna(), ddf.dropna()

        def fit(data):
            return daskglm.GLM.from_formula("claims ~ C(region) + plan + age", data,
                                            family="poisson", alpha=0.0, tol=1e-10,
                                            exposure="exposure")
    else:  # numbers only: Dask's to_dask_array(lengths=True) refuses this frame
        features = ["age", "exposure"]
        frame, ddf = frame.dropna(), ddf.dropna()

        def fit(data):
            return daskglm.PoissonRegressor(alpha=0.0, tol=1e-10).fit(
                data[features], data.claims, sample_weight=data.exposure)
    model, reference = fit(ddf), fit(frame)
    validation = next(r for r in model.comm_.records if str(r.kind).startswith("validate"))
    files = len((ddf if how == "formula" else ddf[features]).to_delayed())
    assert validation.partitions == files > 1  # every partition, as Dask computes them
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(model.predict(ddf).compute() if how == "formula" else
                               model.predict(ddf[features]).compute(),
                               reference.predict(frame if how == "formula" else
                                                 frame[features]), rtol=1e-6)
