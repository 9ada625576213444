"""Fewest passes: the validation round shares the solver's first evaluation, and
``solver="auto"`` picks the method of least predicted time (accounting/choice.py)."""

import warnings

import numpy as np
import pytest
import sklearn.linear_model as skl

import daskglm
from daskglm.accounting.bytemodel import payload_model
from daskglm.accounting.choice import choose_method, predict_methods
from daskglm.accounting.kinds import Kind
from daskglm.compute.kernels import loss_grad
from daskglm.engine import make_engine
from daskglm.estimators.auto_choice import choose_solver as _choose_solver
from daskglm.estimators.base import _GLMBase
from daskglm.estimators.planning import _auto_options
from daskglm.model.families import Binomial, Gamma, Gaussian, Poisson, Tweedie
from daskglm.model.penalties import L1, L2, NoPenalty
from daskglm.model.problem import Problem
from daskglm.solvers.base import FirstEvaluation

from .conftest import make_data


def _fit(make, X, y, fused=True, **fit_kw):
    """``make().fit(X, y)``, with the first evaluation fused into validation or not."""
    estimator = make()
    if fused:
        return estimator.fit(X, y, **fit_kw)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_GLMBase, "_first_evaluation", lambda self, *a, **k: None)
        return estimator.fit(X, y, **fit_kw)


FUSED_CASES = {
    # name: (estimator, family of the data, kind of the fused round)
    "normal": (lambda: daskglm.LinearRegression(), "gaussian", Kind.VALIDATE_GRAM),
    "normal-ridge": (lambda: daskglm.Ridge(alpha=2.0, fit_intercept=False), "gaussian",
                     Kind.VALIDATE_GRAM),
    "lbfgs": (lambda: daskglm.LogisticRegression(solver="lbfgs", tol=1e-8), "binomial",
              Kind.VALIDATE_GRADIENT),
    "lbfgs-poisson": (lambda: daskglm.PoissonRegressor(solver="lbfgs", alpha=0.1, tol=1e-8),
                      "poisson", Kind.VALIDATE_GRADIENT),
    "newton": (lambda: daskglm.LogisticRegression(solver="newton", tol=1e-8), "binomial",
               Kind.VALIDATE_HESSIAN),
    "lbfgs-multinomial": (lambda: daskglm.LogisticRegression(solver="lbfgs", tol=1e-8),
                          "multiclass", Kind.VALIDATE_GRADIENT),
    "newton-multinomial": (lambda: daskglm.LogisticRegression(solver="newton", tol=1e-8),
                           "multiclass", Kind.VALIDATE_HESSIAN),
}


def _fused_case_data(family):
    if family == "multiclass":
        return _classes_data(3)
    return make_data(family, n=3000, d=5)[:2]


@pytest.mark.parametrize("case", list(FUSED_CASES))
def test_fused_round_saves_one_round_and_changes_nothing_else(case, client):
    make, family, kind = FUSED_CASES[case]
    X, y = _fused_case_data(family)
    fused, unfused = _fit(make, X, y), _fit(make, X, y, fused=False)
    kinds = [r.kind for r in fused.comm_.records]
    assert kinds[0] == kind and Kind.VALIDATE not in kinds
    assert [r.kind for r in unfused.comm_.records][0] == Kind.VALIDATE
    assert fused.comm_.rounds == unfused.comm_.rounds - 1
    np.testing.assert_array_equal(fused.coef_, unfused.coef_)  # bit for bit
    np.testing.assert_array_equal(fused.intercept_, unfused.intercept_)
    assert fused.n_iter_ == unfused.n_iter_ and fused.converged_ and unfused.converged_
    # every history entry counts one round fewer: the first evaluation ran in validation
    assert [h["rounds"] for h in fused.history_] == [h["rounds"] - 1 for h in unfused.history_]
    assert fused.history_[-1]["rounds"] <= fused.comm_.rounds


def test_fused_rounds_match_the_byte_model_on_a_cluster(client):
    for make, family, kind in FUSED_CASES.values():
        X, y = _fused_case_data(family)
        model = make().fit(X, y)
        record = model.comm_.records[0]
        assert record.kind == kind
        n_params = model.coef_.size + (np.size(model.intercept_) if model.fit_intercept else 0)
        # L-BFGS reads the validation round's sample of rows; Newton does not
        down, up = payload_model(kind, n_params=n_params, n_features=5,
                                 partitions=record.partitions, groups=record.groups,
                                 split_every=record.split_every, partials=record.partials,
                                 sample_rows=kind == Kind.VALIDATE_GRADIENT)
        if family == "multiclass":  # the multinomial kernel is also sent the class count
            down += 8 * record.groups
        assert (record.bytes_sent, record.bytes_returned) == (down, up)
        # a one-task round of a few kB: Dask's own messages (up to a few kB per round)
        # are of the payload's size, so the band is the payload's, plus 4 kB
        assert 0.5 * record.bytes_modelled <= record.bytes_measured \
            <= 2.0 * record.bytes_modelled + 4096, record


def test_fused_validation_keeps_the_column_moments():
    X, y, _ = make_data("gaussian", n=1000, d=4)
    first = FirstEvaluation(daskglm.compute.kernels.gram, (), Kind.VALIDATE_GRAM)
    with make_engine(X, y, family=Gaussian(), client=None, n_partitions=3,
                     first=first) as fused, \
            make_engine(X, y, family=Gaussian(), client=None, n_partitions=3) as plain:
        np.testing.assert_allclose(fused.column_moments.sums, plain.column_moments.sums,
                                   rtol=1e-12)
        np.testing.assert_allclose(fused.column_moments.squares,
                                   plain.column_moments.squares, rtol=1e-12)
        assert fused.column_moments.weight == plain.column_moments.weight == 1000
        assert fused.ledger.rounds == 1


def test_the_first_evaluation_is_handed_out_once_and_only_for_its_arguments():
    X, y, _ = make_data("binomial", n=500, d=3)
    params = np.zeros(4)
    first = FirstEvaluation(loss_grad, (params, Binomial(), True), Kind.VALIDATE_GRADIENT)
    with make_engine(X, y, family=Binomial(), client=None, first=first) as engine:
        assert engine.take_first_evaluation(loss_grad, np.ones(4), Binomial(), True) is None
        assert engine.take_first_evaluation(loss_grad, params, Binomial(), False) is None
        found = engine.take_first_evaluation(loss_grad, params.copy(), Binomial(), True)
        assert found is not None and found.grad.shape == (4,)
        assert engine.take_first_evaluation(loss_grad, params, Binomial(), True) is None


@pytest.mark.parametrize("make,family", [
    (lambda: daskglm.LinearRegression(), "gaussian"),
    (lambda: daskglm.LogisticRegression(solver="lbfgs"), "binomial"),
    (lambda: daskglm.LogisticRegression(solver="newton"), "binomial"),
])
def test_fused_validation_raises_the_same_errors(make, family):
    X, y, _ = make_data(family, n=200, d=3)
    bad_x = X.copy()
    bad_x[5, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN or infinity"):
        make().fit(daskglm_dask(bad_x), daskglm_dask(y))
    bad_x[5, 1] = np.inf
    with pytest.raises(ValueError, match="Input X contains NaN or infinity"):
        make().fit(daskglm_dask(bad_x), daskglm_dask(y))
    with pytest.raises(ValueError, match="sample_weight has negative values"):
        make().fit(daskglm_dask(X), daskglm_dask(y), sample_weight=daskglm_dask(-np.ones(200)))
    with pytest.raises(ValueError, match="The sample weights sum to zero"):
        make().fit(daskglm_dask(X), daskglm_dask(y), sample_weight=daskglm_dask(np.zeros(200)))
    if family == "binomial":
        with pytest.raises(ValueError, match="y contains NaN or infinity"):
            make().fit(daskglm_dask(X), daskglm_dask(np.where(np.arange(200) == 3, np.nan, y)))


def test_fused_validation_raises_on_targets_outside_the_support():
    X, y, _ = make_data("poisson", n=200, d=3)
    y = y.copy()
    y[0] = -1.0
    with pytest.raises(ValueError) as fused:
        daskglm.PoissonRegressor(solver="lbfgs").fit(daskglm_dask(X), daskglm_dask(y))
    with pytest.raises(ValueError) as unfused:
        _fit(lambda: daskglm.PoissonRegressor(solver="lbfgs"), daskglm_dask(X),
             daskglm_dask(y), fused=False)
    assert str(fused.value) == str(unfused.value)


def daskglm_dask(a):
    """``a`` as a Dask array of 2 row chunks (validated by the engine's round)."""
    import dask.array as da

    return da.from_array(a, chunks=(-(-a.shape[0] // 2),) + a.shape[1:])


def test_columns_of_extreme_scale_fall_back_to_the_two_round_path():
    X, y, _ = make_data("gaussian", n=500, d=3)
    X = X.copy()
    X[:, 1] *= 1e200
    fused = _fit(lambda: daskglm.LinearRegression(), X, y)
    unfused = _fit(lambda: daskglm.LinearRegression(), X, y, fused=False)
    kinds = [r.kind for r in fused.comm_.records]
    assert kinds == [Kind.VALIDATE_GRAM, Kind.MAXIMA, Kind.SCALE, Kind.VALIDATE, Kind.GRAM]
    np.testing.assert_array_equal(fused.coef_, unfused.coef_)


def test_warm_start_and_coef_init_are_fused_and_a_mean_start_is_not():
    X, y, _ = make_data("binomial", n=1000, d=4)
    est = daskglm.LogisticRegression(solver="lbfgs", warm_start=True).fit(X, y)
    est.fit(X, y)
    assert est.comm_.records[0].kind == Kind.VALIDATE_GRADIENT
    coef_init = np.full((1, 4), 0.1)
    fused = daskglm.LogisticRegression(solver="lbfgs", tol=1e-8).fit(X, y, coef_init=coef_init)
    unfused = _fit(lambda: daskglm.LogisticRegression(solver="lbfgs", tol=1e-8), X, y,
                   fused=False, coef_init=coef_init)
    assert fused.comm_.records[0].kind == Kind.VALIDATE_GRADIENT
    np.testing.assert_array_equal(fused.coef_, unfused.coef_)
    # Gamma starts its intercept at g(mean y), known only after validation
    Xg, yg = _gamma_data()
    gamma = daskglm.GammaRegressor(solver="lbfgs").fit(Xg, yg)
    assert [r.kind for r in gamma.comm_.records][:2] == [Kind.VALIDATE, Kind.GRADIENT]


@pytest.mark.parametrize("make", [lambda: daskglm.GammaRegressor(solver="lbfgs"),
                                  lambda: daskglm.TweedieRegressor(power=1.5, solver="lbfgs"),
                                  lambda: daskglm.PoissonRegressor(alpha=0, inference=True)])
def test_the_mean_target_comes_from_the_validation_round(make, monkeypatch):
    """The families that start at the mean target, and the null model of inference, take
    ``sum w y`` and ``sum w offset`` from the validation round: no ``target_mean`` round,
    and the same fit bit for bit as with that round (the same sums in the same tree)."""
    from daskglm.engine.validation import ValidationVerbs

    X, y = _gamma_data()
    X, y = daskglm_dask(X), daskglm_dask(y)
    offset = daskglm_dask(np.linspace(-0.2, 0.2, y.shape[0]))
    shared = make().fit(X, y, offset=offset)
    validate = ValidationVerbs.validate

    def without_sums(self, *args, **kwargs):
        summary = validate(self, *args, **kwargs)
        self.target_sums = None
        return summary

    monkeypatch.setattr(ValidationVerbs, "validate", without_sums)
    apart = make().fit(X, y, offset=offset)
    assert Kind.TARGET_MEAN not in [r.kind for r in shared.comm_.records]
    assert [r.kind for r in apart.comm_.records].count(Kind.TARGET_MEAN) == 1
    assert shared.comm_.rounds == apart.comm_.rounds - 1
    np.testing.assert_array_equal(shared.coef_, apart.coef_)
    np.testing.assert_array_equal(shared.intercept_, apart.intercept_)


def _classes_data(n_classes, n=3000, d=5):
    """Labels -1 and 3 (two classes), or 5, 7, 9, ... (more)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, d))
    scores = X[:, :n_classes] + rng.normal(size=(n, n_classes))
    if n_classes == 2:
        return X, np.where(scores[:, 0] > scores[:, 1], 3, -1)
    return X, 5 + 2 * np.argmax(scores, axis=1)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("options", [{}, {"fit_intercept": False},
                                     {"class_weight": "balanced"}])
def test_class_labels_on_dask_give_the_first_evaluation_from_their_class_sums(
        client, options, n_classes):
    """Labels found by the engine (Dask ``y``) are encoded after validation, so the first
    evaluation cannot run in that round; at zero coefficients it follows from the classes'
    column sums the round collects (the binomial and the multinomial model).  One round
    fewer; the same fit up to the round-off of summing by class (1e-9 on coefficients of
    order 1, at a tolerance the fits reach well above that round-off)."""
    X, y = _classes_data(n_classes)
    X, y = daskglm_dask(X), daskglm_dask(y)

    def make():
        return daskglm.LogisticRegression(solver="lbfgs", tol=1e-8, **options)

    by_class = make().fit(X, y)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_GLMBase, "_first_evaluation_from_classes", lambda *a: None)
        apart = make().fit(X, y)
    kinds = [r.kind for r in by_class.comm_.records]
    assert kinds[:2] == [Kind.VALIDATE, Kind.ENCODE]
    assert by_class.comm_.rounds == apart.comm_.rounds - 1
    assert kinds.count(Kind.GRADIENT) == \
        [r.kind for r in apart.comm_.records].count(Kind.GRADIENT) - 1
    np.testing.assert_allclose(by_class.coef_, apart.coef_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(by_class.intercept_, apart.intercept_, rtol=0, atol=1e-9)
    assert by_class.converged_ and apart.converged_
    assert [h["rounds"] for h in by_class.history_][-1] == \
        [h["rounds"] for h in apart.history_][-1] - 1


def _gamma_data(n=1000, d=4):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(n, d))
    mean = np.exp(0.3 * X @ rng.normal(size=d) / np.sqrt(d) + 0.5)
    return X, rng.gamma(2.0, mean / 2.0)


# solver="auto" ---------------------------------------------------------------------------
def _problem(family, penalty, d=5, intercept=True):
    return Problem(family, penalty, intercept, d)


def test_auto_picks_by_predicted_time_per_problem_type():
    assert _choose_solver(_problem(Gaussian(), NoPenalty()), 10**6) == "normal"
    assert _choose_solver(_problem(Gaussian(), L2(1.0), d=4000), 10**6) == "normal"  # exact
    # few rows: rounds cost their fixed overhead, and Newton needs fewest
    assert _choose_solver(_problem(Binomial(), L2(1.0)), 1000) == "newton"
    assert _choose_solver(_problem(Poisson(), L2(1.0), d=50), 1000) == "newton"
    # many rows: a Hessian round costs several gradient rounds
    assert _choose_solver(_problem(Binomial(), L2(1.0), d=50), 10**6, workers=2) == "lbfgs"
    assert _choose_solver(_problem(Binomial(), L2(1.0), d=1000), 1000) == "lbfgs"
    assert _choose_solver(_problem(Binomial(), NoPenalty()), 1000) == "lbfgs"
    assert _choose_solver(_problem(Tweedie(3.0), L2(1.0)), 1000) == "lbfgs"  # Fisher scoring
    # the Gamma's log link is not its canonical one, but the loss is convex in eta: the
    # exact Hessian, as with a canonical link
    assert _choose_solver(_problem(Gamma("log"), L2(1.0)), 1000) == "newton"
    # an L1 GLM: proximal Newton's few Hessian rounds against proximal gradient's many
    assert _choose_solver(_problem(Binomial(), L1(1.0)), 1000) == "newton"
    assert _choose_solver(_problem(Binomial(), L1(1.0), d=400), 10**5, workers=2) == "proximal"
    assert _choose_solver(_problem(Gaussian(), L1(1.0)), 10**6) == "proximal"
    wide = _problem(Gaussian(), L2(1.0), d=2**18)
    assert _choose_solver(wide, 10**5) == "lbfgs"
    assert _auto_options("lbfgs", wide, None) == {"sharded": True}


def test_auto_is_deterministic_and_explained():
    problem = _problem(Binomial(), L2(1.0), d=50)
    first = predict_methods(problem, 10**6, tol=1e-4, workers=2)
    assert first == predict_methods(problem, 10**6, tol=1e-4, workers=2)
    by_name = {c.method: c for c in first}
    assert by_name["normal"].rounds == 1
    assert by_name["newton"].rounds < by_name["lbfgs"].rounds
    chosen = choose_method(problem, 10**6, {"newton", "lbfgs"}, workers=2)
    assert chosen.seconds == min(by_name[m].seconds for m in ("newton", "lbfgs"))
    assert choose_method(problem, 10**6, set()) is None
    # more rows per worker make the d^2 Hessian dearer relative to a round's overhead
    assert (by_name["newton"].seconds / by_name["lbfgs"].seconds
            > predict_methods(problem, 100)[1].seconds / predict_methods(problem, 100)[2].seconds)


def test_estimators_report_the_method_auto_chose():
    Xg, yg, _ = make_data("gaussian", n=500, d=4)
    Xb, yb, _ = make_data("binomial", n=500, d=4)
    assert daskglm.LinearRegression().fit(Xg, yg).solver_ == "normal"
    assert daskglm.Lasso(alpha=0.01).fit(Xg, yg).solver_ == "proximal"
    assert daskglm.LogisticRegression().fit(Xb, yb).solver_ == "newton"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert daskglm.LogisticRegression(penalty=None).fit(Xb, yb).solver_ == "lbfgs"


SKLEARN_CASES = {
    "ridge": (lambda: daskglm.Ridge(alpha=3.0, tol=1e-12),
              lambda: skl.Ridge(alpha=3.0, solver="cholesky"), "gaussian"),
    "ols": (lambda: daskglm.LinearRegression(), lambda: skl.LinearRegression(), "gaussian"),
    # scikit-learn's Newton solver: its L-BFGS stops about 1e-7 short at any tol
    "logistic": (lambda: daskglm.LogisticRegression(C=0.5, tol=1e-10),
                 lambda: skl.LogisticRegression(C=0.5, tol=1e-12, max_iter=1000,
                                                solver="newton-cholesky"), "binomial"),
    "poisson": (lambda: daskglm.PoissonRegressor(alpha=0.1, tol=1e-10),
                lambda: skl.PoissonRegressor(alpha=0.1, tol=1e-12, max_iter=1000,
                                             solver="newton-cholesky"), "poisson"),
    "gamma": (lambda: daskglm.GammaRegressor(alpha=0.1, tol=1e-10),
              lambda: skl.GammaRegressor(alpha=0.1, tol=1e-12, max_iter=1000,
                                         solver="newton-cholesky"), "gamma"),
}


@pytest.mark.parametrize("case", list(SKLEARN_CASES))
def test_auto_fits_equal_scikit_learn(case):
    make, make_reference, family = SKLEARN_CASES[case]
    X, y = _gamma_data(2000, 5) if family == "gamma" else make_data(family, n=2000, d=5)[:2]
    ours, reference = make().fit(X, y), make_reference().fit(X, y)
    assert ours.converged_
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.intercept_, reference.intercept_, rtol=1e-8, atol=1e-10)


def test_auto_fits_the_multinomial_model_as_scikit_learn():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1500, 4))
    y = np.argmax(X @ rng.normal(size=(4, 3)) + rng.gumbel(size=(1500, 3)), axis=1)
    ours = daskglm.LogisticRegression(tol=1e-10).fit(X, y)
    reference = skl.LogisticRegression(tol=1e-12, max_iter=1000,
                                       solver="newton-cholesky").fit(X, y)
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ours.intercept_, reference.intercept_, rtol=1e-7, atol=1e-9)
