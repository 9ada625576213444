"""Folds' fits side by side, their rounds shared (SharedRounds): the same numbers as the
folds fitted one after another, to the bit, in fewer rounds."""

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.model_selection import KFold, ShuffleSplit

import daskglm
from daskglm.accounting.kinds import Kind
from daskglm.engine.build import make_engine
from daskglm.engine.folds import SharedRounds, TrainingView, fold_ids_by_partition
from daskglm.model.families import Poisson
from tests.conftest import make_data


def _both(make, X, y):
    """``make()`` fitted with the folds side by side, then one after another."""
    shared = make().fit(X, y)
    with dask.config.set({"daskglm.shared-fold-rounds": False}):
        alone = make().fit(X, y)
    return shared, alone


def _poisson_path():
    return daskglm.GLMCV(family="poisson", l1_ratio=1.0, alphas=6, cv=KFold(3),
                         solver="newton", tol=1e-8)


def test_a_poisson_lasso_path_is_the_same_in_fewer_rounds():
    X, y, _ = make_data("poisson", n=3000, d=8)
    shared, alone = _both(_poisson_path, X, y)
    np.testing.assert_array_equal(shared.deviance_path_, alone.deviance_path_)
    np.testing.assert_array_equal(shared.coef_, alone.coef_)
    assert shared.alpha_ == alone.alpha_
    assert shared.comm_.rounds < 0.6 * alone.comm_.rounds
    # one shared moments round per path instead of one per fold
    assert shared.comm_.count(Kind.FOLD_MOMENTS) == 1
    assert alone.comm_.count(Kind.FOLD_MOMENTS) == 3
    assert shared.comm_.count(Kind.HELD_OUT) == 1  # every fold's path scored in one round


def test_logistic_regression_cv_is_the_same_in_fewer_rounds():
    X, y, _ = make_data("binomial", n=2000, d=6)

    def make():
        return daskglm.LogisticRegressionCV(Cs=5, cv=KFold(4), solver="lbfgs", tol=1e-8)

    shared, alone = _both(make, X, y)
    np.testing.assert_array_equal(shared.coefs_paths_[1.0], alone.coefs_paths_[1.0])
    np.testing.assert_array_equal(shared.scores_[1.0], alone.scores_[1.0])
    assert shared.comm_.rounds < 0.6 * alone.comm_.rounds


def test_splits_that_are_not_a_partition_share_rounds_too():
    """ShuffleSplit: every split has fold assignments of its own, all sent in one round."""
    X, y, _ = make_data("poisson", n=2000, d=5)

    def make():
        return daskglm.GLMCV(family="poisson", l1_ratio=0.0, alphas=[0.1, 0.01],
                             cv=ShuffleSplit(3, random_state=0), solver="lbfgs", tol=1e-8)

    shared, alone = _both(make, X, y)
    np.testing.assert_array_equal(shared.deviance_path_, alone.deviance_path_)
    assert shared.comm_.rounds < alone.comm_.rounds


def test_on_a_cluster_the_path_is_the_same_as_in_process(client):
    X, y, _ = make_data("poisson", n=4000, d=6)
    Xd, yd = da.from_array(X, chunks=(700, 6)), da.from_array(y, chunks=700)
    on_cluster = _poisson_path().fit(Xd, yd)
    with dask.config.set({"daskglm.shared-fold-rounds": False}):
        alone = _poisson_path().fit(Xd, yd)
    np.testing.assert_array_equal(on_cluster.deviance_path_, alone.deviance_path_)
    assert on_cluster.comm_.rounds < 0.6 * alone.comm_.rounds
    in_process = _poisson_path().fit(X, y)
    np.testing.assert_allclose(on_cluster.deviance_path_, in_process.deviance_path_,
                               rtol=1e-9)


def _engine_and_views(rounds):
    X, y, _ = make_data("poisson", n=600, d=3)
    engine = make_engine(X, y, client=None, family=Poisson(), n_partitions=3)
    each = fold_ids_by_partition(engine, np.arange(600) % 3)
    return engine, [lambda f=f: TrainingView(engine, each, f, rounds=rounds) for f in range(3)]


def _run_fits_of_lengths(rounds, views, lengths):
    """Run one fit per view, each building its view and taking ``lengths[i]`` rounds."""

    def fit(view, n_rounds):
        view = view()
        return [view.reduce(_total_weight, kind=Kind.GRADIENT) for _ in range(n_rounds)]

    return rounds.run([lambda v=v, n=n: fit(v, n) for v, n in zip(views, lengths)])


def _shared_fits_of_lengths(lengths):
    """Fits of the given lengths side by side on a fresh engine: their results and the
    rounds they took."""
    rounds = SharedRounds(None)
    engine, views = _engine_and_views(rounds)
    rounds.engine = engine
    before = engine.ledger.rounds
    results = _run_fits_of_lengths(rounds, views, lengths)
    taken = engine.ledger.rounds - before
    engine.close()
    return results, taken


def _total_weight(part):
    return float(np.sum(part[2]))


def test_an_error_in_one_fit_is_raised_once_every_fit_has_stopped():
    rounds = SharedRounds(None)
    engine, views = _engine_and_views(rounds)
    rounds.engine = engine
    finished = []

    def fit(view, fails):
        view = view()
        total = view.reduce(_total_weight, kind=Kind.GRADIENT)
        if fails:
            raise ValueError("this fold failed")
        view.reduce(_total_weight, kind=Kind.GRADIENT)
        finished.append(total)

    with pytest.raises(ValueError, match="this fold failed"):
        rounds.run([lambda v=v, fails=(i == 1): fit(v, fails) for i, v in enumerate(views)])
    assert finished == []  # the others stopped at their next round, none hung

    # the same object runs again after an error, with nothing left of the failed run:
    # one shared moments round and one shared round of the fits
    before = engine.ledger.rounds
    built = []

    def fit_again(view):
        built.append(view())
        return built[-1].reduce(_total_weight, kind=Kind.GRADIENT)

    results = rounds.run([lambda v=v: fit_again(v) for v in views])
    assert results == [400.0, 400.0, 400.0]
    assert engine.ledger.rounds - before == 2
    # a view used after its fits have ended runs a round of its own
    assert built[0].reduce(_total_weight, kind=Kind.GRADIENT) == 400.0
    assert engine.ledger.rounds - before == 3
    engine.close()


def test_fits_of_different_lengths_share_what_they_can():
    results, taken = _shared_fits_of_lengths((1, 4, 2))
    assert results == [[400.0], [400.0] * 4, [400.0] * 2]
    # 1 shared moments round, then the longest fit's 4 rounds
    assert taken == 5


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("family", ["binomial", "poisson", "gaussian"])
@pytest.mark.parametrize("d", [7, 300])
def test_several_models_from_one_read_of_x_equal_one_call_each(dtype, family, d):
    """A shared round's loss-and-gradient requests read each chunk of X once for all the
    folds (fused_rows_many); each fold's sums are those of a call of its own, to the bit."""
    from daskglm.compute.kernels import loss_grad, loss_grads
    from daskglm.model.families import Binomial, Gaussian

    family = {"binomial": Binomial(), "poisson": Poisson(), "gaussian": Gaussian()}[family]
    rng = np.random.default_rng(d)
    X = rng.standard_normal((1000, d)).astype(dtype)
    y = rng.poisson(1.0, 1000).astype(float)
    if isinstance(family, Binomial):
        y = (y > 0).astype(float)
    folds = np.arange(1000) % 3
    weights = [(folds != f) * rng.uniform(0.5, 2.0, 1000) for f in range(3)]
    params = [rng.standard_normal(d + 1) * 0.1 for _ in range(3)]
    together = loss_grads(X, y, weights, params, family, True)
    for weight, p, stats in zip(weights, params, together):
        alone = loss_grad((X, y, weight), p, family, True)
        assert stats.loss == alone.loss and stats.weight == alone.weight
        np.testing.assert_array_equal(stats.grad, alone.grad)


def test_shared_gradient_rounds_read_x_once_for_every_fold(monkeypatch):
    from daskglm.compute import kernels

    calls = []
    original = kernels.fused_loss_grads

    def counted(X, y, weights, *args):
        calls.append(len(weights))
        return original(X, y, weights, *args)

    monkeypatch.setattr(kernels, "fused_loss_grads", counted)
    X, y, _ = make_data("binomial", n=2000, d=6)
    daskglm.LogisticRegressionCV(Cs=3, cv=KFold(4), solver="lbfgs").fit(X, y)
    assert calls and max(calls) == 4


def test_every_l1_ratio_and_fold_shares_the_same_rounds():
    """Two l1_ratios of three folds: six paths side by side, one moments round."""
    X, y, _ = make_data("poisson", n=3000, d=8)

    def make():
        return daskglm.GLMCV(family="poisson", l1_ratio=[0.5, 1.0], alphas=5, cv=KFold(3),
                             solver="newton", tol=1e-8)

    shared, alone = _both(make, X, y)
    np.testing.assert_array_equal(shared.deviance_path_, alone.deviance_path_)
    assert (shared.alpha_, shared.l1_ratio_) == (alone.alpha_, alone.l1_ratio_)
    assert shared.comm_.count(Kind.FOLD_MOMENTS) == 1
    assert alone.comm_.count(Kind.FOLD_MOMENTS) == 6
    assert shared.comm_.rounds < 0.35 * alone.comm_.rounds


def test_results_past_the_byte_limit_go_out_in_several_rounds(monkeypatch):
    from daskglm.engine import folds

    monkeypatch.setattr(folds, "SHARED_RESULT_BYTES", 64)  # two gradients of 3 columns
    results, taken = _shared_fits_of_lengths((1, 4, 2))
    assert results == [[400.0], [400.0] * 4, [400.0] * 2]
    # moments of 3 fits: 2 rounds; then 3, 2, 1 and 1 requests: 2 + 1 + 1 + 1 rounds
    assert taken == 7
