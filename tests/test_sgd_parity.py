"""scikit-learn parity of the SGD estimators: early stopping on held-out rows, the
``"adaptive"`` learning rate, regression losses in the classifier, overflow-safe steps and
scikit-learn's error messages."""

import numpy as np
import pytest
from sklearn import linear_model as sk
from sklearn.datasets import load_iris
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
from sklearn.preprocessing import StandardScaler

from daskglm import SGDClassifier, SGDRegressor
from daskglm.accounting.bytemodel import payload_model
from daskglm.accounting.kinds import Kind
from daskglm.optim.schedules import AdaptiveScale, make_step_rule

IRIS_X, IRIS_Y = load_iris(return_X_y=True)
X_STD = StandardScaler().fit_transform(IRIS_X)


# early stopping ---------------------------------------------------------------------------
@pytest.mark.parametrize("klass, splitter", [(SGDClassifier, StratifiedShuffleSplit),
                                             (SGDRegressor, ShuffleSplit)])
def test_early_stopping_trains_on_scikit_learns_split_only(klass, splitter):
    # scikit-learn's test_validation_set_not_used_for_training: the held-out rows are
    # scikit-learn's split, and the fit on the others is the fit of those rows alone
    kwargs = dict(learning_rate="constant", eta0=0.01, tol=None, max_iter=10)
    held = klass(early_stopping=True, validation_fraction=0.4,
                 random_state=np.random.RandomState(42), **kwargs).fit(X_STD, IRIS_Y)
    train, _ = next(splitter(test_size=0.4, random_state=42).split(X_STD, IRIS_Y))
    train = np.sort(train)
    alone = klass(random_state=np.random.RandomState(42), **kwargs).fit(X_STD[train], IRIS_Y[train])
    assert held.n_iter_ == alone.n_iter_ == 10
    np.testing.assert_array_equal(held.coef_, alone.coef_)


@pytest.mark.parametrize("klass", [SGDClassifier, SGDRegressor])
def test_early_stopping_scores_the_held_out_rows_each_epoch(klass):
    X, y = X_STD[IRIS_Y > 0], IRIS_Y[IRIS_Y > 0]
    model = klass(early_stopping=True, tol=1e-3, max_iter=1000, random_state=0).fit(X, y)
    assert model.converged_ and model.n_iter_ < 1000
    # one validation_score round per epoch, recorded in the fit's ledger
    assert model.comm_.count(Kind.VALIDATION_SCORE) == model.n_iter_
    scores = [entry["validation_score"] for entry in model.history_]
    # scikit-learn's rule: stop after n_iter_no_change epochs in a row whose score is
    # below the best so far plus tol, and not before
    best, bad, stops = -np.inf, 0, []
    for score in scores:
        bad = bad + 1 if score < best + 1e-3 else 0
        best = max(best, score)
        stops.append(bad >= 5)
    assert stops[-1] and not any(stops[:-1])
    # the last score is the estimator's own score of the held-out rows
    _, held = next((StratifiedShuffleSplit if klass is SGDClassifier else ShuffleSplit)(
        test_size=0.1, random_state=0).split(X, y))
    assert scores[-1] == pytest.approx(model.score(X[held], y[held]), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("klass", [SGDClassifier, SGDRegressor])
def test_n_iter_no_change_with_early_stopping_is_monotone(klass):
    n_iters = [klass(early_stopping=True, n_iter_no_change=k, tol=1e-4, max_iter=1000,
                     random_state=0).fit(X_STD, IRIS_Y).n_iter_ for k in (2, 3, 10)]
    assert n_iters == sorted(n_iters)


@pytest.mark.parametrize("klass", [SGDClassifier, SGDRegressor, sk.SGDClassifier,
                                   sk.SGDRegressor])
def test_early_stopping_errors_as_scikit_learn(klass):
    X, y = X_STD[:8], np.array([0, 1] * 4)
    with pytest.raises(ValueError):  # an empty training set
        klass(early_stopping=True, validation_fraction=0.99).fit(X, y)
    with pytest.raises(ValueError, match="early_stopping should be False with partial_fit"):
        kwargs = {"classes": [0, 1]} if "Classifier" in klass.__name__ else {}
        klass(early_stopping=True).partial_fit(X, y, **kwargs)
    y = np.array([0, 1] * 20)
    _, held = next(StratifiedShuffleSplit(test_size=0.5, random_state=0).split(y, y)
                   if "Classifier" in klass.__name__
                   else ShuffleSplit(test_size=0.5, random_state=0).split(y))
    weight = np.ones(40)
    weight[held] = 0.0
    with pytest.raises(ValueError, match="validation set are all zero"):
        klass(early_stopping=True, validation_fraction=0.5, random_state=0).fit(
            X_STD[:40], y, sample_weight=weight)


def test_validation_score_round_matches_the_byte_model():
    model = SGDRegressor(early_stopping=True, random_state=0).fit(X_STD, IRIS_Y)
    records = [r for r in model.comm_.records if r.kind == Kind.VALIDATION_SCORE]
    assert records
    for record in records:
        down, up = payload_model(Kind.VALIDATION_SCORE, n_params=5, n_features=4,
                                 partitions=record.partitions, groups=record.groups,
                                 split_every=record.split_every)
        assert (record.bytes_sent, record.bytes_returned) == (down, up)


def test_early_stopping_on_dask_arrays_on_a_cluster(client):
    # the held-out rows are cut from the Dask arrays lazily and scored where they live;
    # every round, the validation_score ones included, matches the byte model
    import dask.array as da

    X = da.from_array(X_STD, chunks=(50, 4))
    y = da.from_array(IRIS_Y.astype(float), chunks=50)
    # eta0=0.05: 17 epochs to the stop instead of 78 (each epoch two rounds on the cluster)
    model = SGDRegressor(early_stopping=True, random_state=0, tol=1e-3, eta0=0.05).fit(X, y)
    assert model.converged_
    records = [r for r in model.comm_.records if r.kind == Kind.VALIDATION_SCORE]
    assert len(records) == model.n_iter_
    for record in records:
        down, up = payload_model(Kind.VALIDATION_SCORE, n_params=5, n_features=4,
                                 partitions=record.partitions, groups=record.groups,
                                 split_every=record.split_every)
        assert (record.bytes_sent, record.bytes_returned) == (down, up)
    # the same split as NumPy input: the last score is the model's R^2 on those rows
    _, held = next(ShuffleSplit(test_size=0.1, random_state=0).split(X_STD))
    assert model.history_[-1]["validation_score"] == pytest.approx(
        model.score(X_STD[held], IRIS_Y[held]), rel=1e-12)
    with pytest.raises(NotImplementedError, match="Dask class labels"):
        SGDClassifier(early_stopping=True).fit(X, y)


# learning_rate="adaptive" -------------------------------------------------------------------
def test_adaptive_rule_divides_by_five_until_spent():
    rule = make_step_rule("adaptive", eta0=0.01)
    assert isinstance(rule, AdaptiveScale)
    state = rule.init(np.zeros(3))
    assert rule.update(None, state, 7)[0] == 0.01
    rates = []
    while state is not None:
        rates.append(float(state))
        state = rule.on_plateau(state)
    np.testing.assert_allclose(rates, 0.01 / 5.0 ** np.arange(len(rates)))
    assert rates[-1] <= 1e-6 < rates[-2]


@pytest.mark.parametrize("klass", [SGDClassifier, SGDRegressor])
def test_adaptive_runs_longer_than_constant(klass):
    # scikit-learn's test_adaptive_longer_than_constant
    y = IRIS_Y if klass is SGDRegressor else IRIS_Y == 1
    adaptive = klass(learning_rate="adaptive", eta0=0.01, tol=1e-3, max_iter=100,
                     random_state=0).fit(X_STD, y)
    constant = klass(learning_rate="constant", eta0=0.01, tol=1e-3, max_iter=100,
                     random_state=0).fit(X_STD, y)
    assert adaptive.n_iter_ > constant.n_iter_
    # the rate was divided at least once: the last epochs ran below eta0
    assert adaptive.history_[-1]["step"] < 0.01


def test_adaptive_without_tol_is_constant():
    kwargs = dict(eta0=0.01, tol=None, max_iter=5, random_state=0)
    adaptive = SGDRegressor(learning_rate="adaptive", **kwargs).fit(X_STD, IRIS_Y)
    constant = SGDRegressor(learning_rate="constant", **kwargs).fit(X_STD, IRIS_Y)
    np.testing.assert_array_equal(adaptive.coef_, constant.coef_)


# regression losses in the classifier ----------------------------------------------------------
# 30,000 steps of one row each: squared_error runs by default; every loss's pointwise values
# are checked against scikit-learn's below
@pytest.mark.parametrize("loss", [
    "squared_error",
    pytest.param("huber", marks=pytest.mark.slow),
    pytest.param("epsilon_insensitive", marks=pytest.mark.slow),
    pytest.param("squared_epsilon_insensitive", marks=pytest.mark.slow),
])
def test_classifier_regression_losses_regress_the_signs(loss):
    y = IRIS_Y == 1
    kwargs = dict(loss=loss, alpha=0.01, learning_rate="constant", eta0=0.001,
                  max_iter=200, tol=None, random_state=0)
    model = SGDClassifier(batch_size=1, **kwargs).fit(X_STD, y)
    reference = sk.SGDClassifier(**kwargs).fit(X_STD, y)
    assert not hasattr(model, "predict_proba")
    # the same objective: the solutions agree to SGD's noise at this rate
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=0.05)
    assert model.score(X_STD, y) == pytest.approx(reference.score(X_STD, y), abs=0.03)


# overflow-safe steps ----------------------------------------------------------------------
@pytest.mark.parametrize("penalty", ["l2", "l1", "elasticnet"])
def test_large_regularization_shrinks_to_zero(penalty):
    model = SGDClassifier(alpha=1e5, learning_rate="constant", eta0=0.1, penalty=penalty,
                          tol=None, max_iter=6, random_state=0)
    with np.errstate(all="raise"):
        model.fit(IRIS_X, IRIS_Y)
    np.testing.assert_array_almost_equal(model.coef_, np.zeros_like(model.coef_))


def test_large_gradient_stays_finite():
    model = SGDClassifier(loss="squared_hinge", max_iter=10, penalty="elasticnet",
                          l1_ratio=0.3, alpha=0.01, eta0=0.001, random_state=0, tol=None)
    with np.errstate(all="raise"):
        model.fit(IRIS_X, IRIS_Y)
    assert np.isfinite(model.coef_).all()


# scikit-learn's messages ----------------------------------------------------------------------
@pytest.mark.parametrize("klass", [SGDClassifier, SGDRegressor])
def test_elasticnet_without_l1_ratio_message(klass):
    with pytest.raises(ValueError, match="l1_ratio must be set when penalty is 'elasticnet'"):
        klass(penalty="elasticnet", l1_ratio=None).fit(X_STD, IRIS_Y)


def test_balanced_class_weight_with_partial_fit_message():
    for klass in (SGDClassifier, sk.SGDClassifier):
        with pytest.raises(ValueError, match="class_weight 'balanced' is not supported for "
                                             "partial_fit. In order to use 'balanced' weights"):
            klass(class_weight="balanced").partial_fit(X_STD, IRIS_Y, classes=[0, 1, 2])


@pytest.mark.parametrize("name, theirs", [
    ("squared_error", None), ("huber", None),
    ("epsilon_insensitive", ("EpsilonInsensitive", 0.3)),
    ("squared_epsilon_insensitive", ("SquaredEpsilonInsensitive", 0.3)),
])
def test_classifier_regression_losses_are_scikit_learns_on_signs(name, theirs):
    from sklearn.linear_model import _sgd_fast

    from daskglm.compute.sgd_losses import CLASSIFICATION_LOSSES

    loss = CLASSIFICATION_LOSSES[name](0.3)
    rng = np.random.default_rng(0)
    eta = rng.normal(scale=2.0, size=100)
    y = (rng.uniform(size=100) < 0.5).astype(float)
    signs = 2 * y - 1
    r = eta - signs
    if name == "squared_error":  # scikit-learn's half squared error, written out
        expected, slope = 0.5 * r**2, r
    elif name == "huber":  # scikit-learn's CyHuberLoss with delta 0.3, written out
        expected = np.where(np.abs(r) <= 0.3, 0.5 * r**2, 0.3 * (np.abs(r) - 0.15))
        slope = np.clip(r, -0.3, 0.3)
    else:
        reference = getattr(_sgd_fast, theirs[0])(*theirs[1:])
        expected = [reference.py_loss(p, s) for p, s in zip(eta, signs)]
        slope = [reference.py_dloss(p, s) for p, s in zip(eta, signs)]
    np.testing.assert_allclose(loss.pointwise_loss(y, eta), expected, rtol=1e-14)
    np.testing.assert_allclose(loss.pointwise_dloss(y, eta), slope, rtol=1e-14)
