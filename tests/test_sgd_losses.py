"""SGD losses beyond the GLM families, one-vs-rest, class weights and starting points.

The losses are checked pointwise against scikit-learn's own (``_sgd_fast``) and their
derivatives against finite differences.  SGD is stochastic, so the estimators are compared
with scikit-learn's on the objective reached (``mean loss + alpha * ||coef||^2 / 2``, both
evaluated by the same function) after the same number of epochs with ``batch_size=1``
(scikit-learn's SGD): ours at most ``OBJECTIVE_GAP`` (relative; classifiers with averaged
iterates on both sides, as the last iterate of plain SGD with the "optimal" rate is too
noisy to compare: 10-90 % apart over seeds) plus ``OBJECTIVE_FLOOR`` (absolute, for
objectives near zero) above scikit-learn's, ``REGRESSION_GAP`` for the regressors (plain
SGD), and accuracy (or R^2) at most ``SCORE_GAP`` below.  Identities that hold by construction (class
weights are sample weights; a cluster and this process draw the same rows) are checked
exactly.
"""

import inspect
import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn import linear_model as sk
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.class_weight import compute_class_weight

import daskglm
import daskglm.engine.build as engine_module
from daskglm.compute.sgd_losses import CLASSIFICATION_LOSSES, REGRESSION_LOSSES, OnSigns
from daskglm.model.families import Binomial, Gaussian

#: The classifier's own losses (the regression losses on -1/+1 signs, ``OnSigns``, are
#: tested in test_sgd_parity.py).
MARGIN_LOSSES = [name for name, make in CLASSIFICATION_LOSSES.items()
                 if not isinstance(make(0.1), OnSigns)]


OBJECTIVE_GAP = 0.1
REGRESSION_GAP = 0.01
OBJECTIVE_FLOOR = 0.005
SCORE_GAP = 0.03
ALPHA = 1e-3


def _classification(n=400, d=5, seed=0, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if n_classes == 2:
        eta = X @ rng.normal(size=d) + 0.3
        return X, (rng.uniform(size=n) < 1 / (1 + np.exp(-2 * eta))).astype(float)
    centres = rng.normal(scale=1.0, size=(n_classes, d))
    labels = rng.integers(n_classes, size=n)
    return X + centres[labels], labels


def _regression(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X @ rng.normal(size=d) + 0.3 + 0.5 * rng.standard_t(3, size=n)


def _objective(loss, X, y, coef, intercept):
    coef = np.ravel(coef)
    eta = X @ coef + np.ravel(intercept)[0]
    return loss.loss(y, eta) / len(y) + 0.5 * ALPHA * coef @ coef


def _no_worse(reached, reference, gap=OBJECTIVE_GAP):
    return reached <= reference * (1 + gap) + OBJECTIVE_FLOOR


def _loss_of(name):
    if name in MARGIN_LOSSES:
        return CLASSIFICATION_LOSSES[name](0.1)
    if name in REGRESSION_LOSSES:
        return REGRESSION_LOSSES[name](0.1)
    return Binomial() if name == "log_loss" else Gaussian()


# the losses themselves --------------------------------------------------------------------
@pytest.mark.parametrize("name", [*MARGIN_LOSSES, *REGRESSION_LOSSES])
def test_losses_equal_scikit_learns_and_their_derivatives_are_exact(name):
    from sklearn.linear_model import _sgd_fast

    loss = _loss_of(name)
    rng = np.random.default_rng(1)
    eta = rng.normal(scale=2.0, size=200)
    y = (rng.uniform(size=200) < 0.5).astype(float) if loss.classification else rng.normal(size=200)
    theirs = {"hinge": ("Hinge", 1.0), "perceptron": ("Hinge", 0.0),
              "squared_hinge": ("SquaredHinge", 1.0), "modified_huber": ("ModifiedHuber",),
              "epsilon_insensitive": ("EpsilonInsensitive", 0.1),
              "squared_epsilon_insensitive": ("SquaredEpsilonInsensitive", 0.1)}.get(name)
    if theirs is not None:
        reference = getattr(_sgd_fast, theirs[0])(*theirs[1:])
        target = 2 * y - 1 if loss.classification else y
        np.testing.assert_allclose(loss.pointwise_loss(y, eta),
                                   [reference.py_loss(p, t) for p, t in zip(eta, target)],
                                   rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(loss.pointwise_dloss(y, eta),
                                   [reference.py_dloss(p, t) for p, t in zip(eta, target)],
                                   rtol=1e-14, atol=1e-15)
    else:  # Huber: scikit-learn's CyHuberLoss, written out
        r = eta - y
        expected = np.where(np.abs(r) <= 0.1, 0.5 * r**2, 0.1 * (np.abs(r) - 0.05))
        np.testing.assert_allclose(loss.pointwise_loss(y, eta), expected, rtol=1e-14)
    step = 1e-6
    numeric = (loss.pointwise_loss(y, eta + step) - loss.pointwise_loss(y, eta - step)) / (2 * step)
    kinks = np.min(np.abs(np.subtract.outer(eta, [-1.0, 0.0, 1.0]) * np.where(
        loss.classification, 2 * y - 1, 1.0)[:, None]), axis=1) < 1e-3
    smooth = ~kinks & (np.abs(np.abs(eta - y) - 0.1) > 1e-3)
    np.testing.assert_allclose(loss.pointwise_dloss(y, eta)[smooth], numeric[smooth], atol=1e-6)
    weight = rng.uniform(0.5, 2.0, size=200)
    total, grad = loss.loss_and_dloss(y, eta, weight)
    assert total == pytest.approx(weight @ loss.pointwise_loss(y, eta), rel=1e-14)
    np.testing.assert_allclose(grad, weight * loss.pointwise_dloss(y, eta), rtol=1e-15)


# against scikit-learn's SGD -----------------------------------------------------------------
@pytest.mark.parametrize("name", ["log_loss", *MARGIN_LOSSES])
def test_classifier_losses_reach_scikit_learns_objective(name):
    X, y = _classification()
    # squared hinge diverges with the "optimal" rate at this alpha (scikit-learn's too)
    rate = {"learning_rate": "constant", "eta0": 0.01} if name == "squared_hinge" else {}
    params = {"loss": name, "alpha": ALPHA, "max_iter": 10, "tol": None, "average": True,
              **rate}
    ours = daskglm.SGDClassifier(batch_size=1, random_state=0, **params).fit(X, y)
    theirs = sk.SGDClassifier(random_state=0, **params).fit(X, y)
    assert ours.coef_.shape == theirs.coef_.shape == (1, X.shape[1])
    loss = _loss_of(name)
    reached = _objective(loss, X, y, ours.coef_, ours.intercept_)
    reference = _objective(loss, X, y, theirs.coef_, theirs.intercept_)
    if name != "perceptron":  # its objective is minimised (to 0) by coef = 0
        assert _no_worse(reached, reference)
    assert ours.score(X, y) >= theirs.score(X, y) - SCORE_GAP


@pytest.mark.parametrize("name", ["squared_error", *REGRESSION_LOSSES])
def test_regressor_losses_reach_scikit_learns_objective(name):
    X, y = _regression()
    params = {"loss": name, "alpha": ALPHA, "max_iter": 10, "tol": None}
    ours = daskglm.SGDRegressor(batch_size=1, random_state=0, **params).fit(X, y)
    theirs = sk.SGDRegressor(random_state=0, **params).fit(X, y)
    loss = _loss_of(name)
    reached = _objective(loss, X, y, ours.coef_, ours.intercept_)
    reference = _objective(loss, X, y, theirs.coef_, theirs.intercept_)
    assert _no_worse(reached, reference, REGRESSION_GAP)
    assert ours.score(X, y) >= theirs.score(X, y) - SCORE_GAP


@pytest.mark.parametrize("name", ["hinge", "log_loss"])
def test_one_vs_rest_as_scikit_learn(name):
    X, y = _classification(n_classes=3)
    labels = np.array(["a", "b", "c"])[y]
    params = {"loss": name, "alpha": ALPHA, "max_iter": 6, "tol": None, "average": True}
    ours = daskglm.SGDClassifier(batch_size=1, random_state=0, **params).fit(X, labels)
    theirs = sk.SGDClassifier(random_state=0, **params).fit(X, labels)
    assert list(ours.classes_) == ["a", "b", "c"]
    assert ours.coef_.shape == (3, X.shape[1]) and ours.intercept_.shape == (3,)
    assert ours.decision_function(X).shape == (len(y), 3)
    assert ours.score(X, labels) >= theirs.score(X, labels) - SCORE_GAP
    loss = _loss_of(name)
    for k, label in enumerate(ours.classes_):
        target = (labels == label).astype(float)
        reached = _objective(loss, X, target, ours.coef_[k], ours.intercept_[k])
        reference = _objective(loss, X, target, theirs.coef_[k], theirs.intercept_[k])
        assert _no_worse(reached, reference)
    # one binary fit per class, one after the other, all in the ledger
    assert ours.comm_.count("validate") == 3
    if name == "log_loss":
        proba = ours.predict_proba(X)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        np.testing.assert_array_equal(ours.classes_[proba.argmax(axis=1)], ours.predict(X))
    else:
        assert not hasattr(ours, "predict_proba")


def test_probabilities_exist_for_log_loss_and_modified_huber_only():
    X, y = _classification()
    for name in ("hinge", "squared_hinge", "perceptron"):
        model = daskglm.SGDClassifier(loss=name, max_iter=2, tol=None).fit(X, y)
        assert not hasattr(model, "predict_proba")
        with pytest.raises(AttributeError, match="predict_proba"):
            model.predict_proba(X)
    model = daskglm.SGDClassifier(loss="modified_huber", max_iter=5, tol=None,
                                  random_state=0).fit(X, y)
    scores = model.decision_function(X)
    expected = (np.clip(scores, -1, 1) + 1) / 2
    np.testing.assert_allclose(model.predict_proba(X), np.column_stack([1 - expected, expected]))


def test_default_loss_is_scikit_learns_hinge_without_probabilities():
    X, y = _classification()
    ours, theirs = daskglm.SGDClassifier(), sk.SGDClassifier()
    assert ours.loss == theirs.loss == "hinge"
    for fitted in (False, True):
        if fitted:
            ours.fit(X, y)
            theirs.fit(X, y)
        for method in ("predict_proba", "predict_log_proba"):
            assert hasattr(ours, method) is hasattr(theirs, method) is False
            with pytest.raises(AttributeError) as our_error:
                getattr(ours, method)(X)
            with pytest.raises(AttributeError) as their_error:
                getattr(theirs, method)(X)
            assert str(our_error.value) == str(their_error.value)


# class weights, starting points -------------------------------------------------------------
@pytest.mark.parametrize("class_weight", ["balanced", {0.0: 3.0}])
def test_class_weights_are_sample_weights(class_weight):
    X, y = _classification()
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=len(y))
    params = {"loss": "hinge", "max_iter": 5, "tol": None, "random_state": 0}
    weighted = daskglm.SGDClassifier(class_weight=class_weight, **params)
    weighted.fit(X, y, sample_weight=w)
    per_class = compute_class_weight(class_weight, classes=np.array([0.0, 1.0]), y=y)
    explicit = daskglm.SGDClassifier(**params).fit(X, y, sample_weight=w * per_class[y.astype(int)])
    np.testing.assert_array_equal(weighted.coef_, explicit.coef_)
    assert not np.array_equal(daskglm.SGDClassifier(**params).fit(X, y).coef_, weighted.coef_)


def test_class_weight_and_one_vs_rest_on_a_cluster_equal_this_process(client):
    X, y = _classification(n=900, n_classes=3)
    Xd, yd = da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300)
    model = daskglm.SGDClassifier(loss="modified_huber", class_weight="balanced", max_iter=2,
                                  tol=None, batch_size=150, random_state=0, sync_every=None)
    on_cluster = clone(model).fit(Xd, yd)
    assert engine_module.active_client() is client
    local = clone(model)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine_module, "active_client", lambda: None)
        local.fit(Xd, yd)
    np.testing.assert_allclose(on_cluster.coef_, local.coef_, rtol=1e-12)
    assert on_cluster.coef_.shape == (3, 5)
    assert isinstance(on_cluster.predict(Xd), da.Array)
    np.testing.assert_array_equal(on_cluster.predict(Xd).compute(), on_cluster.predict(X))
    np.testing.assert_allclose(on_cluster.predict_proba(Xd).compute(), on_cluster.predict_proba(X))


def test_coef_init_and_intercept_init_start_the_run():
    X, y = _classification()
    start = np.array([0.5, -1.0, 2.0, 0.0, 1.0])
    # a rate so small that the coefficients stay where they started
    model = daskglm.SGDClassifier(learning_rate="constant", eta0=1e-12, max_iter=1, tol=None)
    model.fit(X, y, coef_init=start, intercept_init=[0.7])
    np.testing.assert_allclose(model.coef_.ravel(), start, atol=1e-9)
    np.testing.assert_allclose(model.intercept_, [0.7], atol=1e-9)
    regressor = daskglm.SGDRegressor(learning_rate="constant", eta0=1e-12, max_iter=1, tol=None)
    regressor.fit(*_regression(), coef_init=start)
    np.testing.assert_allclose(regressor.coef_, start, atol=1e-9)
    X3, y3 = _classification(n_classes=3)
    starts = np.arange(15.0).reshape(3, 5)
    multi = clone(model).fit(X3, y3, coef_init=starts, intercept_init=[1.0, 2.0, 3.0])
    np.testing.assert_allclose(multi.coef_, starts, atol=1e-9)
    np.testing.assert_allclose(multi.intercept_, [1.0, 2.0, 3.0], atol=1e-9)
    with pytest.raises(ValueError, match="coef_init does not match"):
        clone(model).fit(X, y, coef_init=np.zeros(4))
    with pytest.raises(ValueError, match="coef_init does not match"):
        clone(model).fit(X3, y3, coef_init=np.zeros(5))
    with pytest.raises(ValueError, match="intercept_init does not match"):
        clone(model).fit(X, y, intercept_init=[0.0, 1.0])


@pytest.mark.parametrize("ours, theirs", [(daskglm.SGDClassifier, sk.SGDClassifier),
                                          (daskglm.SGDRegressor, sk.SGDRegressor)],
                         ids=["SGDClassifier", "SGDRegressor"])
def test_fit_signature_is_scikit_learns(ours, theirs):
    def parameters(cls):
        return [(p.name, p.default) for p in inspect.signature(cls.fit).parameters.values()]

    assert parameters(ours) == parameters(theirs)


def test_one_vs_rest_partial_fit():
    X, y = _classification(n_classes=3)
    model = daskglm.SGDClassifier(loss="hinge", class_weight={0: 2.0}, random_state=0)
    for chunk in np.array_split(np.arange(len(y)), 4):
        model.partial_fit(X[chunk], y[chunk], classes=[0, 1, 2])
    assert model.coef_.shape == (3, 5) and list(model.classes_) == [0, 1, 2]
    assert model.score(X, y) > 0.6  # well above chance (1/3) after one pass
    with pytest.raises(ValueError, match="not supported for partial_fit"):
        daskglm.SGDClassifier(class_weight="balanced").partial_fit(X, y, classes=[0, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model.partial_fit(X, y)  # classes known from the first call


@pytest.mark.parametrize("sync_every", [None, 5], ids=["synchronous", "local-5"])
def test_sparse_rows_give_the_dense_model(sync_every):
    import scipy.sparse as sp

    X, y = _classification(n_classes=3)
    X = np.where(np.abs(X) > 1, X, 0.0)
    params = {"loss": "hinge", "max_iter": 3, "tol": None, "random_state": 0,
              "sync_every": sync_every}
    sparse = daskglm.SGDClassifier(**params).fit(sp.csr_matrix(X), y)
    dense = daskglm.SGDClassifier(**params).fit(X, y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-10, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("estimator", [daskglm.SGDClassifier(loss="log_loss", random_state=0),
                                       daskglm.SGDClassifier(loss="modified_huber",
                                                             random_state=0),
                                       daskglm.SGDRegressor(loss="huber", batch_size=1,
                                                            random_state=0)],
                         ids=["log_loss", "modified_huber", "huber"])
def test_check_estimator_with_other_losses(estimator):
    """As scikit-learn's own SGD estimators: the sample-weight equivalence checks fail by
    design, and with the modified Huber loss so does ``check_classifiers_train`` (clipped
    probabilities tie, so their argmax is not always the prediction; scikit-learn's
    ``SGDClassifier(loss="modified_huber")`` fails it the same way).  The Huber regressor
    takes scikit-learn's one row per step: with the default 16 rows per step, the bounded
    Huber gradient makes too little progress on the check's data before ``tol`` stops it."""
    from sklearn.utils.estimator_checks import check_estimator

    expected = dict(type(estimator)._expected_failed_checks)
    if estimator.loss == "modified_huber":
        expected["check_classifiers_train"] = "tied clipped probabilities, as scikit-learn's"
    results = check_estimator(estimator, on_skip=None, expected_failed_checks=expected)
    failed = [r["check_name"] for r in results if r["status"] not in ("passed", "xfail", "skipped")]
    assert failed == []


def test_hogwild_with_a_loss_it_has_no_loop_for_says_so():
    """The default hinge has no Hogwild loop: a clear ValueError before any work."""
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="Option 'hogwild' needs the binomial or Gaussian"):
        daskglm.SGDClassifier(solver_options={"hogwild": 2, "sync_every": 4}).fit(X, y)


@pytest.mark.parametrize("name", sorted(set(CLASSIFICATION_LOSSES) | set(REGRESSION_LOSSES)))
@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_compiled_sgd_losses_give_the_numpy_paths_sums(name, layout, monkeypatch):
    # the compiled row loops (every SGD loss has a code) against the loss's own numpy
    # formulas: loss and gradient sums of a weighted partition, to round-off (1e-12
    # relative), rows at the hinge's and the epsilon tube's kinks included
    import scipy.sparse as sp

    import daskglm.compute.kernels as kernels
    from daskglm.compute.loss_codes import loss_code

    rng = np.random.default_rng(3)
    n, d = 400, 6
    X = rng.normal(size=(n, d))
    for loss in ([CLASSIFICATION_LOSSES[name](0.2)] if name in CLASSIFICATION_LOSSES else []) \
            + ([REGRESSION_LOSSES[name](0.2)] if name in REGRESSION_LOSSES else []):
        assert loss_code(loss) is not None
        y = rng.integers(0, 2, n).astype(float) if loss.classification else rng.normal(size=n)
        params = rng.normal(size=d + 1)
        eta = X @ params[:-1] + params[-1]
        X[:10, 0] += ((2 * y[:10] - 1) - eta[:10]) / params[0]  # s eta = 1 exactly (about)
        part = (sp.csr_matrix(X) if layout == "csr" else X, y, rng.uniform(0.5, 2.0, n))
        compiled = kernels.loss_grad(part, params, loss, True)
        with monkeypatch.context() as patch:
            patch.setattr(kernels, "pointwise_for", lambda family: None)
            reference = kernels.loss_grad(part, params, loss, True)
        np.testing.assert_allclose(compiled.loss, reference.loss, rtol=1e-12)
        np.testing.assert_allclose(compiled.grad, reference.grad, rtol=1e-12, atol=1e-12)
