"""HC2, HC3 and cluster-robust covariances (one-way and two-way) after ``inference=True``,
equal to statsmodels' ``fit(cov_type=...)``, from one more round whose result does not
depend on how the rows are chunked; bad ``groups`` rejected before any work."""

import warnings

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import daskglm
from daskglm.accounting.bytemodel import payload_model
from daskglm.accounting.kinds import Kind

#: Relative tolerance against statsmodels: both sides solve the same likelihood
#: equations (ours to tol=1e-10, statsmodels' IRLS to 1e-13) and invert the same matrices.
RTOL = 1e-6


def _data(family, n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    eta = 0.3 + X @ np.array([0.5, -0.4, 0.2])
    if family == "gaussian":
        y = eta + rng.normal(size=n) * (1.0 + np.abs(X[:, 0]))
    elif family == "binomial":
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    else:
        y = rng.poisson(np.exp(eta)).astype(float)
    groups = np.column_stack([rng.integers(0, 25, n), rng.integers(0, 9, n)])
    return X, y, groups


def _estimator(family, **params):
    common = dict(inference=True, tol=1e-10, max_iter=500, **params)
    if family == "gaussian":
        return daskglm.LinearRegression(**common)
    if family == "binomial":
        return daskglm.LogisticRegression(penalty=None, **common)
    return daskglm.PoissonRegressor(alpha=0.0, **common)


_SM_FAMILIES = {"gaussian": sm.families.Gaussian(), "binomial": sm.families.Binomial(),
                "poisson": sm.families.Poisson()}


def _glm(family, X, y):
    return sm.GLM(y, sm.add_constant(X), family=_SM_FAMILIES[family])


def _leverage_reference(family, X, y, power):
    """HC2 (power 1) or HC3 (power 2) from statsmodels' own pieces: its GLM's per-row
    scores, Hessian and hat-matrix diagonal.  (Its ``GLM.fit(cov_type="HC2")`` returns
    HC0: the GLM results have no leverage-corrected covariance; its OLS has.)"""
    result = _glm(family, X, y).fit(tol=1e-13, maxiter=200)
    scores = result.model.score_obs(result.params)
    bread = np.linalg.inv(-result.model.hessian(result.params))
    leverage = result.get_hat_matrix_diag()
    meat = (scores / (1.0 - leverage)[:, None] ** power).T @ scores
    return bread @ meat @ bread


def test_statsmodels_glm_hc2_is_its_hc0_and_the_reference_is_ols():
    """Why HC2/HC3 are compared with statsmodels' pieces for GLMs: its GLM gives HC0 for
    them, while the reference formula is its OLS's HC2 and HC3 for the Gaussian."""
    X, y, _ = _data("poisson")
    fits = {kind: _glm("poisson", X, y).fit(cov_type=kind) for kind in ("HC0", "HC3")}
    np.testing.assert_allclose(fits["HC3"].cov_params(), fits["HC0"].cov_params(), rtol=1e-12)
    X, y, _ = _data("gaussian")
    for power, kind in ((1, "HC2"), (2, "HC3")):
        ols = sm.OLS(y, sm.add_constant(X)).fit(cov_type=kind)
        np.testing.assert_allclose(_leverage_reference("gaussian", X, y, power),
                                   ols.cov_params(), rtol=1e-10)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
@pytest.mark.parametrize("kind, power", [("HC2", 1), ("HC3", 2)])
def test_hc2_hc3_like_statsmodels(family, kind, power):
    X, y, _ = _data(family)
    model = _estimator(family, cov_type=kind).fit(X, y)
    expected = _leverage_reference(family, X, y, power)
    np.testing.assert_allclose(model.cov_params(), expected, rtol=RTOL)
    np.testing.assert_allclose(model.bse_, np.sqrt(np.diag(expected)), rtol=RTOL)
    # the other kinds stay available; the rounds: one robust round after inference
    assert model.cov_params("model").shape == expected.shape
    assert model.comm_.count(Kind.ROBUST) == 1
    if family == "gaussian":
        ols = sm.OLS(y, sm.add_constant(X)).fit(cov_type=kind)
        np.testing.assert_allclose(model.cov_params(kind), ols.cov_params(), rtol=RTOL)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
@pytest.mark.parametrize("two_way", [False, True], ids=["one-way", "two-way"])
def test_cluster_like_statsmodels(family, two_way):
    X, y, groups = _data(family)
    groups = groups if two_way else groups[:, 0]
    model = _estimator(family, cov_type="cluster").fit(X, y, groups=groups)
    expected = _glm(family, X, y).fit(tol=1e-13, maxiter=200, cov_type="cluster",
                                      cov_kwds={"groups": groups})
    np.testing.assert_allclose(model.cov_params(), expected.cov_params(), rtol=RTOL)
    np.testing.assert_allclose(model.bse_, expected.bse, rtol=RTOL)
    np.testing.assert_allclose(model.pvalues_, expected.pvalues, rtol=1e-5)
    np.testing.assert_allclose(model.conf_int(), expected.conf_int(), rtol=RTOL)
    with_t = _glm(family, X, y).fit(tol=1e-13, maxiter=200, cov_type="cluster", use_t=True,
                                    cov_kwds={"groups": groups})
    np.testing.assert_allclose(model.conf_int(use_t=True), with_t.conf_int(), rtol=RTOL)
    assert model.comm_.count(Kind.ROBUST) == 1
    assert "Covariance: cluster" in model.summary()


def test_cluster_without_corrections_like_statsmodels():
    X, y, groups = _data("poisson")
    kwds = {"use_correction": False, "df_correction": False}
    model = _estimator("poisson", cov_type="cluster", cov_kwds=kwds).fit(X, y,
                                                                         groups=groups[:, 0])
    expected = _glm("poisson", X, y).fit(tol=1e-13, cov_type="cluster", use_t=True,
                                         cov_kwds={"groups": groups[:, 0], **kwds})
    np.testing.assert_allclose(model.cov_params(), expected.cov_params(), rtol=RTOL)
    np.testing.assert_allclose(model.conf_int(use_t=True), expected.conf_int(), rtol=RTOL)


def test_grunfeld_two_way_by_firm_and_year():
    """statsmodels' bundled Grunfeld panel: OLS of investment, clustered by firm (names),
    by year, and by both, from pandas input."""
    data = sm.datasets.grunfeld.load_pandas().data
    X, y = data[["value", "capital"]], data["invest"]
    ols = sm.OLS(y.to_numpy(), sm.add_constant(X.to_numpy()))
    for groups in (data["firm"], data["year"], data[["firm", "year"]]):
        model = daskglm.LinearRegression(inference=True, cov_type="cluster").fit(
            X, y, groups=groups)
        codes = np.column_stack([pd.factorize(data[c])[0] for c in np.atleast_1d(
            groups.name if groups.ndim == 1 else groups.columns)]).squeeze()
        expected = ols.fit(cov_type="cluster", cov_kwds={"groups": codes})
        np.testing.assert_allclose(model.cov_params(), expected.cov_params(), rtol=RTOL)
        assert model.param_names_ == ["intercept", "value", "capital"]
    both = daskglm.LinearRegression.from_formula(
        "invest ~ value + capital", data, groups=["firm", "year"], inference=True,
        cov_type="cluster")
    np.testing.assert_allclose(both.cov_params(), model.cov_params(), rtol=1e-12)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_dask_inputs_do_not_change_the_result(family):
    """Dask X, y and groups in several chunks (groups chunked otherwise than X), a Dask
    Series of string ids and numpy input: the same covariances."""
    X, y, groups = _data(family)
    names = np.array([f"firm-{code}" for code in groups[:, 0]], dtype=object)
    reference = _estimator(family, cov_type="HC3").fit(X, y, groups=groups)
    dask_groups = [
        da.from_array(groups, chunks=(150, 2)),
        (dd.from_pandas(pd.Series(names), npartitions=3), da.from_array(groups[:, 1],
                                                                         chunks=70)),
    ]
    for chunks, dask_group in zip((100, 37), dask_groups):
        Xd, yd = da.from_array(X, chunks=(chunks, 3)), da.from_array(y, chunks=chunks)
        model = _estimator(family, cov_type="HC3").fit(Xd, yd, groups=dask_group)
        for kind in ("HC2", "HC3", "cluster", "model", "HC0"):
            # the chunking changes the order of additions (and so where the solver stops)
            np.testing.assert_allclose(model.cov_params(kind), reference.cov_params(kind),
                                       rtol=1e-8, atol=1e-12, err_msg=kind)


def test_on_a_cluster_and_with_an_offset(client):
    """The distributed engine (several partitions, the codes sent per partition) and a
    Poisson fit with an exposure, against statsmodels."""
    X, y, groups = _data("poisson", n=600)
    exposure = np.random.default_rng(1).uniform(0.5, 2.0, size=len(y))
    Xd, yd = da.from_array(X, chunks=(110, 3)), da.from_array(y, chunks=110)
    model = _estimator("poisson", cov_type="cluster").fit(Xd, yd, exposure=exposure,
                                                          groups=groups[:, 0])
    glm = sm.GLM(y, sm.add_constant(X), family=sm.families.Poisson(), exposure=exposure)
    expected = glm.fit(tol=1e-13, cov_type="cluster", cov_kwds={"groups": groups[:, 0]})
    np.testing.assert_allclose(model.cov_params(), expected.cov_params(), rtol=RTOL)
    hc3 = _estimator("poisson", cov_type="HC3").fit(Xd, yd, exposure=exposure)
    result = glm.fit(tol=1e-13)
    scores = result.model.score_obs(result.params)
    bread = np.linalg.inv(-result.model.hessian(result.params))
    room = 1.0 - result.get_hat_matrix_diag()
    np.testing.assert_allclose(hc3.cov_params(), bread @ (scores / room[:, None] ** 2).T
                               @ scores @ bread, rtol=RTOL)


def _dask_ids(groups, kind):
    """Cluster ids as a Dask Series of names (one-way) or a frame of names and years, or
    as a Dask array of codes, chunked otherwise than the rows."""
    names = np.array([f"firm-{code}" for code in groups[:, 0]], dtype=object)
    if kind == "array":
        return da.from_array(groups, chunks=(130, 2))
    frame = pd.DataFrame({"firm": names, "year": 1990 + groups[:, 1]})
    return dd.from_pandas(frame, npartitions=3)


def _driver_factorisation_refused(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the cluster ids were factorised on the driver")

    for module in (daskglm.estimators.robust, daskglm.fitting.robust):
        monkeypatch.setattr(module, "cluster_codes", refuse)


def _assert_ids_stayed_on_the_workers(model, n_params):
    """The robust round sent the parameters alone (no id per row) and the ids' round
    brought back two counts per partition (rows, missing ids)."""
    ids = [r for r in model.comm_.records if r.kind == Kind.COMPUTE_STATE]
    robust = [r for r in model.comm_.records if r.kind == Kind.ROBUST]
    assert len(ids) == len(robust) == 1
    assert ids[0].bytes_sent == 0 and ids[0].bytes_returned == 16 * ids[0].partitions
    assert robust[0].bytes_sent == 8 * (n_params + 1) * robust[0].groups


@pytest.mark.parametrize("kind", ["array", "series"])
@pytest.mark.parametrize("two_way", [False, True], ids=["one-way", "two-way"])
def test_dask_ids_stay_on_the_workers_like_statsmodels(kind, two_way, monkeypatch):
    """Dask ids (a Series of names and a frame of names and years, or an array of
    codes) on several partitions chunked otherwise than the rows: each partition sums its
    scores per id, the tree merges the sums by id; statsmodels' clusters, and the numpy
    ids' covariances to round-off."""
    X, y, groups = _data("poisson")
    ids = _dask_ids(groups, kind)
    if not two_way:
        ids = ids[:, 0] if kind == "array" else ids["firm"]
    codes = groups if two_way else groups[:, 0]
    Xd, yd = da.from_array(X, chunks=(90, 3)), da.from_array(y, chunks=90)
    in_memory = _estimator("poisson", cov_type="cluster").fit(Xd, yd, groups=codes)
    _driver_factorisation_refused(monkeypatch)
    model = _estimator("poisson", cov_type="cluster").fit(Xd, yd, groups=ids)
    expected = _glm("poisson", X, y).fit(tol=1e-13, maxiter=200, cov_type="cluster",
                                         cov_kwds={"groups": codes})
    np.testing.assert_allclose(model.cov_params(), expected.cov_params(), rtol=RTOL)
    np.testing.assert_allclose(model.cov_params(), in_memory.cov_params(), rtol=1e-12)
    np.testing.assert_allclose(model.conf_int(use_t=True), in_memory.conf_int(use_t=True),
                               rtol=1e-12)
    _assert_ids_stayed_on_the_workers(model, n_params=4)


def test_dask_ids_on_a_cluster(client, monkeypatch):
    """Two-way Dask ids on a cluster: computed on the workers beside the partitions;
    partitions read again in every round (``cache="none"``) keep no state, so their ids
    are factorised on the driver, as ids in memory are."""
    X, y, groups = _data("gaussian")
    Xd, yd = da.from_array(X, chunks=(110, 3)), da.from_array(y, chunks=110)
    expected = _glm("gaussian", X, y).fit(cov_type="cluster", cov_kwds={"groups": groups})
    streamed = _estimator("gaussian", cov_type="cluster", cache="none").fit(
        Xd, yd, groups=_dask_ids(groups, "array"))
    assert streamed.comm_.count(Kind.COMPUTE_STATE) == 0
    np.testing.assert_allclose(streamed.cov_params(), expected.cov_params(), rtol=RTOL)
    _driver_factorisation_refused(monkeypatch)
    model = _estimator("gaussian", cov_type="cluster").fit(Xd, yd,
                                                           groups=_dask_ids(groups, "series"))
    np.testing.assert_allclose(model.cov_params(), expected.cov_params(), rtol=RTOL)
    np.testing.assert_allclose(model.cov_params(), streamed.cov_params(), rtol=1e-10)
    _assert_ids_stayed_on_the_workers(model, n_params=4)


@pytest.mark.parametrize("ids", [
    dd.from_pandas(pd.Series([None] + ["a"] * 399), npartitions=3),
    da.from_array(np.r_[np.nan, np.arange(399.0)], chunks=150),
], ids=["series", "array"])
def test_missing_dask_ids_are_found_before_the_robust_round(ids):
    X, y, _ = _data("poisson")
    model = _estimator("poisson", cov_type="cluster")
    with pytest.raises(ValueError, match="missing ids"):
        model.fit(da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100), groups=ids)


def test_integer_weights_are_repeated_rows():
    """Row weights count as repeated rows (as the HC0 meat takes them): HC3 of a
    weighted fit is statsmodels' OLS HC3 of the rows repeated."""
    X, y, _ = _data("gaussian", n=120)
    weight = np.random.default_rng(2).integers(1, 4, size=len(y))
    model = daskglm.LinearRegression(inference=True, cov_type="HC3").fit(
        X, y, sample_weight=weight.astype(float))
    rows = np.repeat(np.arange(len(y)), weight)
    # each repeated row's leverage is that of one copy, as in the weighted fit
    expected = sm.OLS(y[rows], sm.add_constant(X[rows])).fit(cov_type="HC3")
    np.testing.assert_allclose(model.cov_params(), expected.cov_params(), rtol=RTOL)


def test_nonrobust_fit_pays_no_extra_round_and_explains_missing_kinds():
    X, y, groups = _data("binomial")
    model = _estimator("binomial").fit(X, y)
    assert model.comm_.count(Kind.ROBUST) == 0
    with pytest.raises(ValueError, match="fit with cov_type='HC2'"):
        model.cov_params("HC2")
    with pytest.raises(ValueError, match="fit with groups="):
        model.summary(kind="cluster")
    np.testing.assert_array_equal(model.cov_params("nonrobust"), model.cov_params("model"))
    robust = _estimator("binomial", cov_type="HC0").fit(X, y)
    np.testing.assert_allclose(robust.bse_, np.sqrt(np.diag(model.cov_params("HC0"))),
                               rtol=1e-12)


@pytest.mark.parametrize("groups, message", [
    (np.arange(399), "groups has 399 rows; X has 400"),
    (np.r_[np.nan, np.arange(399.0)], "missing ids"),
    (pd.Series([None] + ["a"] * 399), "missing ids"),
    (np.zeros((400, 3)), "one or two clusterings"),
    (da.from_array(np.arange(401), chunks=100), "groups has 401 rows; X has 400"),
    (dd.from_pandas(pd.Series(np.arange(399)), npartitions=2), "groups has 399 rows"),
])
def test_bad_groups_rejected_before_any_work(groups, message):
    X, y, _ = _data("poisson")
    model = _estimator("poisson", cov_type="cluster")
    with pytest.raises(ValueError, match=message):
        model.fit(X, y, groups=groups)
    assert not hasattr(model, "comm_")


@pytest.mark.parametrize("params, fit_groups, message", [
    (dict(alpha=1.0, inference=True, cov_type="cluster"), True, "unpenalised"),
    (dict(alpha=1.0), True, "need inference=True"),
    (dict(alpha=0.0, inference=True, cov_type="cluster"), False, "needs the clusters"),
    (dict(alpha=0.0, cov_type="HC3"), False, "needs inference=True"),
    (dict(alpha=0.0, inference=True, cov_type="HC4"), False, "cov_type must be one of"),
    (dict(alpha=0.0, inference=True, cov_kwds={"groups": 1}), False, "cov_kwds must be"),
])
def test_bad_options_rejected_before_any_work(params, fit_groups, message):
    X, y, groups = _data("poisson")
    model = daskglm.PoissonRegressor(**params)
    with pytest.raises(ValueError, match=message):
        model.fit(X, y, groups=groups[:, 0] if fit_groups else None)
    assert not hasattr(model, "comm_")


def test_user_groups_are_not_modified_and_the_round_bytes_are_modelled():
    X, y, groups = _data("gaussian")
    frame = pd.DataFrame(groups, columns=["a", "b"])
    copy = frame.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = daskglm.LinearRegression(inference=True, cov_type="HC2").fit(X, y)
        daskglm.LinearRegression(inference=True, cov_type="cluster").fit(X, y, groups=frame)
    pd.testing.assert_frame_equal(frame, copy)
    record = [r for r in model.comm_.records if r.kind == Kind.ROBUST][0]
    down, up = payload_model(Kind.ROBUST, n_params=4, partitions=record.partitions)
    assert (record.bytes_sent, record.bytes_returned) == (down, up)


@pytest.mark.parametrize("cov_type", ["HC0", "HC1", "HC2", "HC3"])
def test_analytic_weights_match_wls(cov_type):
    """Analytic weights: a row of weight w is one observation whose score is w times the
    unit score and whose leverage carries w, as statsmodels' ``WLS(weights=w)`` (to
    1e-6 relative; before, the meat weighed each row by w, not w^2, 30% off)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    w = rng.uniform(0.5, 3.0, 400)
    y = X @ [1.0, 2.0, 3.0] + rng.normal(size=400) / np.sqrt(w)
    reference = sm.WLS(y, sm.add_constant(X), weights=w).fit(cov_type=cov_type)
    model = daskglm.LinearRegression(inference=True, cov_type=cov_type).fit(
        X, y, sample_weight=w, weights_kind="analytic")
    np.testing.assert_allclose(model.bse_, reference.bse, rtol=1e-6)


@pytest.mark.parametrize("cov_type", ["HC0", "cluster"])
def test_analytic_weights_match_glm_var_weights(cov_type):
    """A Poisson GLM with ``var_weights``: HC0 and the cluster covariance to 1e-6."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 3))
    y = rng.poisson(np.exp(0.3 * X[:, 0] + 0.2))
    w = rng.uniform(0.5, 3.0, 500)
    groups = rng.integers(0, 30, 500)
    kwds = {"cov_kwds": {"groups": groups}} if cov_type == "cluster" else {}
    reference = sm.GLM(y, sm.add_constant(X), family=sm.families.Poisson(),
                       var_weights=w).fit(cov_type=cov_type, **kwds)
    extra = {"groups": groups} if cov_type == "cluster" else {}
    model = daskglm.PoissonRegressor(alpha=0.0, inference=True, cov_type=cov_type,
                                     tol=1e-10).fit(X, y, sample_weight=w,
                                                    weights_kind="analytic", **extra)
    np.testing.assert_allclose(model.bse_, reference.bse, rtol=1e-6)


def test_a_model_file_keeps_the_robust_covariances(tmp_path):
    """Saved and loaded, a cluster-robust fit reports the same standard errors, default
    kind and t degrees of freedom (``G - 1``)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 2))
    y = X @ [1.0, -1.0] + rng.normal(size=300)
    groups = rng.integers(0, 12, 300)
    model = daskglm.LinearRegression(inference=True, cov_type="cluster").fit(X, y,
                                                                            groups=groups)
    daskglm.save(model, tmp_path / "model")
    loaded = daskglm.load(tmp_path / "model")
    np.testing.assert_array_equal(loaded.cov_params(), model.cov_params("cluster"))
    np.testing.assert_array_equal(loaded.conf_int(use_t=True), model.conf_int(use_t=True))
    assert loaded.summary(use_t=True) == model.summary(use_t=True)
