"""Sharded (Sandblaster) L-BFGS: same iterates as the in-memory L-BFGS, bytes by touched
columns, worker loss, options.

Tolerances: the sharded fit and :func:`plain_lbfgs` (the same iteration on numpy vectors,
classic two-loop recursion) agree to ``1e-8`` in every coefficient and take the same
number of iterations; against scipy's L-BFGS-B (``solver="lbfgs"``) and scikit-learn, both
run to gradient entries ``<= 1e-10``, coefficients agree to ``1e-8`` relative and the
objective to ``1e-8`` relative.
"""

import threading
import time
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression as SkLogistic

import daskglm
from daskglm import progress
from daskglm.accounting.kinds import Kind
from daskglm.engine.shards import ShardLostError
from daskglm.optim.vector_free_lbfgs import gram_two_loop, plain_lbfgs
from daskglm.testing import slow_worker
from tests.conftest import kill_worker, make_data, wait_until

C = 0.05
TIGHT = {"tol": 1e-10, "max_iter": 500}
SHARDED = {"sharded": True}


def sparse_data(n=2000, d=400, density=0.02, seed=0, columns=None):
    """Binary targets from a sparse CSR ``X``; non-zeros only in ``columns`` when given."""
    rng = np.random.default_rng(seed)
    used = d if columns is None else columns
    X = sp.random(n, used, density=density, random_state=seed, format="csr",
                  data_rvs=lambda k: rng.normal(size=k))
    X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(n, d))
    eta = X @ rng.normal(size=d) * 0.5
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    return X, y


def criterion_scales(X, weight=None):
    """The factors of the solvers' optimality test (``max(1, 1 / rms)`` of each column, 1
    for the intercept, last), for the reference's stopping test to be theirs."""
    weight = np.ones(X.shape[0]) if weight is None else weight
    squares = np.asarray(X.multiply(X).T @ weight if sp.issparse(X) else (X * X).T @ weight)
    rms = np.sqrt(np.ravel(squares) / weight.sum())
    factors = np.ones(X.shape[1] + 1)
    small = (rms > 0) & (rms < 1)
    factors[:-1][small] = 1.0 / rms[small]
    return factors


def coordinates(X, alpha, weight=None):
    """The shards' coordinates of iteration for L2 logistic regression of strength
    ``alpha`` with an intercept, started at zero: ``units``
    (:func:`~daskglm.solvers.sharded_lbfgs.iteration_units`) and the column ``means`` it
    centres on, as :func:`plain_lbfgs`'s keywords."""
    from daskglm.model.families import Binomial
    from daskglm.model.penalties import L2
    from daskglm.solvers import Problem
    from daskglm.solvers.sharded_lbfgs import iteration_units

    weight = np.ones(X.shape[0]) if weight is None else weight
    squares = np.asarray(X.multiply(X).T @ weight if sp.issparse(X) else (X * X).T @ weight)
    means = np.ravel(np.asarray(X.T @ weight)) / weight.sum()
    problem = Problem(Binomial(), L2(alpha), True, X.shape[1])
    units = iteration_units(problem, np.ravel(squares) / weight.sum(),
                            np.zeros(X.shape[1] + 1), means)
    return {"units": units, "means": means}


def chunked(X, y, rows=500):
    """Dask arrays of ``X`` (dense or CSR) and ``y`` in row chunks: several partitions."""
    Xd = da.from_array(X, chunks=(rows, X.shape[1]), asarray=False)
    return Xd, da.from_array(y, chunks=rows)


def objective(X, y, alpha, weight=None):
    """Weighted mean logistic loss plus ``alpha / 2 ||coef||^2`` (unpenalised intercept,
    last)."""
    weight = np.ones(X.shape[0]) if weight is None else weight
    total = weight.sum()

    def fun(params):
        coef, intercept = params[:-1], params[-1]
        eta = np.asarray(X @ coef).ravel() + intercept
        loss = weight * (np.logaddexp(0.0, eta) - y * eta)
        r = weight * (1.0 / (1.0 + np.exp(-eta)) - y)
        grad = np.append(np.asarray(X.T @ r).ravel(), r.sum()) / total
        grad[:-1] += alpha * coef
        return loss.sum() / total + 0.5 * alpha * coef @ coef, grad

    return fun


def params_of(model):
    return np.append(np.ravel(model.coef_), np.ravel(model.intercept_))


def dense_data():
    X, y, _ = make_data("binomial", n=2000, d=8)
    return X, y


@pytest.mark.parametrize("make", [dense_data, sparse_data], ids=["dense", "sparse"])
def test_same_iterates_as_plain_lbfgs_and_scipy(client, make):
    X, y = make()
    model = daskglm.LogisticRegression(C=C, solver="lbfgs", solver_options=SHARDED,
                                       **TIGHT).fit(*chunked(X, y))
    assert model.converged_
    fun = objective(X, y, 1.0 / (C * X.shape[0]))
    reference, outcome = plain_lbfgs(fun, np.zeros(X.shape[1] + 1), tol=TIGHT["tol"],
                                     max_iter=TIGHT["max_iter"],
                                     criterion_scales=criterion_scales(X),
                                     **coordinates(X, 1.0 / (C * X.shape[0])))
    assert outcome.converged
    assert model.n_iter_ == outcome.n_iter
    np.testing.assert_allclose(params_of(model), reference, rtol=0, atol=1e-8)

    scipy_fit = daskglm.LogisticRegression(C=C, solver="lbfgs", **TIGHT).fit(*chunked(X, y))
    scale = np.max(np.abs(params_of(scipy_fit)))
    assert np.max(np.abs(params_of(model) - params_of(scipy_fit))) <= 1e-8 * scale

    # scikit-learn minimises C sum(loss) + ||coef||^2 / 2: ours divided by C n
    sk_fit = SkLogistic(C=C, tol=1e-12, max_iter=10_000).fit(X, y)
    best = fun(params_of(sk_fit))[0]
    assert abs(fun(params_of(model))[0] - best) <= 1e-8 * abs(best)


def test_history_and_ledger_tell_the_truth(client):
    X, y = sparse_data()
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        model = daskglm.LogisticRegression(C=C, solver="lbfgs", solver_options=SHARDED,
                                           tol=1e-12, max_iter=3).fit(*chunked(X, y))
    assert not model.converged_ and model.n_iter_ == 3 and len(model.history_) == 3
    kinds = model.comm_.by_kind()
    evaluations = model.comm_.count(Kind.SPARSE_GRADIENT)
    assert model.comm_.count(Kind.SHARD_PULL) == model.comm_.count(Kind.SHARD_PUSH) == evaluations
    assert model.comm_.count(Kind.SHARD_LOAD) == model.comm_.count(Kind.SHARD_FETCH) == 1
    assert model.comm_.count(Kind.SHARD_REGISTER) == model.comm_.count(Kind.SHARD_COLUMNS) == 1
    assert Kind.GRADIENT not in kinds


def _bytes_per_evaluation(d, client):
    """Per evaluation: bytes of the pulls and pushes, their calls, bytes of the shard
    commands, of the round's own scalars, and the touched columns pulled."""
    X, y = sparse_data(n=2000, d=d, density=0.01, columns=500)
    with pytest.warns(ConvergenceWarning):
        model = daskglm.LogisticRegression(C=C, solver="lbfgs", solver_options=SHARDED,
                                           max_iter=4, tol=1e-12).fit(*chunked(X, y))
    records = model.comm_.records
    evaluations = sum(r.kind == Kind.SPARSE_GRADIENT for r in records)

    def total(kinds, of=lambda r: r.bytes_sent + r.bytes_returned):
        return sum(of(r) for r in records if r.kind in kinds) / evaluations

    return {"vectors": total((Kind.SHARD_PULL, Kind.SHARD_PUSH)),
            "calls": total((Kind.SHARD_PULL,), lambda r: r.tasks),
            "commands": total((Kind.SHARD_OP,)),
            # the round's own scalars: their tasks depend on how Dask spread the partitions
            "scalars": total((Kind.SPARSE_GRADIENT,)),
            "touched": total((Kind.SHARD_PULL,), lambda r: r.bytes_returned) / 8}


def test_bytes_per_round_scale_with_touched_columns_not_d(client):
    small, large = (_bytes_per_evaluation(d, client) for d in (2**16, 2**20))
    # the same rows touch the same 500 columns (and the intercept); each worker pulls the
    # union of its partitions' columns, so the count depends on where Dask put the
    # partitions, never on d
    workers = len(client.nthreads())
    for measured in (small, large):
        assert measured["touched"] <= workers * 501
        # 8 bytes each way per touched column, 16 bytes of identifiers per call
        assert measured["vectors"] == 16 * measured["touched"] + 32 * measured["calls"]
    assert large["commands"] == small["commands"]  # scalars: the same at any d
    assert large["scalars"] < 1000
    # pull, push, the commands and the round: at most twice the touched columns at 16 B
    assert large["vectors"] + large["commands"] + large["scalars"] <= 2 * large["touched"] * 16


def fit_killing_a_worker(client, Xd, yd, options):
    """Fit ``Xd, yd`` with ``solver_options=options`` in a thread and kill the cluster's
    last worker (which holds a shard and partitions) while it runs one of the fit's tasks,
    after the first iteration.  Returns ``(model, warning texts, victim)``."""
    victim = sorted(client.nthreads())[-1]
    started, outcome = threading.Event(), {}

    def fit():
        token = progress._listener.set(lambda entry: started.set())
        try:
            # every round as tasks: the kill waits until the victim runs one
            with warnings.catch_warnings(record=True) as caught, \
                    dask.config.set({"daskglm.direct-rounds": False}):
                warnings.simplefilter("always")
                outcome["model"] = daskglm.LogisticRegression(
                    C=C, solver="lbfgs", solver_options=options, **TIGHT).fit(Xd, yd)
            outcome["warnings"] = [str(w.message) for w in caught]
        except Exception as exc:  # reported below
            outcome["error"] = exc
        finally:
            progress._listener.reset(token)

    thread = threading.Thread(target=fit)
    thread.start()
    deadline = time.monotonic() + 120
    # an iteration is done (the shards hold progress), or the fit has stopped
    while not started.wait(0.1) and thread.is_alive() and time.monotonic() < deadline:
        pass
    assert started.is_set(), outcome.get("error")
    # mid-fit, whatever the machine's load: the victim's kernel tasks now take a second
    # each, so the fit cannot end before the kill, which lands while one of them runs
    with slow_worker(client, victim, 1.0):
        while not client.processing([victim]).get(victim) and time.monotonic() < deadline \
                and thread.is_alive():
            time.sleep(0.01)
        assert thread.is_alive()
        kill_worker(client, victim)
    thread.join(180)
    assert not thread.is_alive() and "error" not in outcome, outcome.get("error")
    return outcome["model"], outcome["warnings"], victim


def test_shard_worker_killed_mid_fit_is_survived(own_client):
    """A worker holding a shard (and partitions) is killed while it runs one of the fit's
    tasks: the fit rebuilds its shards on the worker left and reaches the reference."""
    X, y = sparse_data(n=8000)
    Xd, yd = chunked(X, y, rows=500)
    model, caught, victim = fit_killing_a_worker(own_client, Xd, yd, SHARDED)
    assert model.converged_
    assert any("rebuilt" in w and victim in w for w in caught), (victim, caught)
    # the start and a rebuild; a second one where the lost partitions, recomputed on the
    # worker left, moved after the first (seen once on a loaded machine: "Partition 1 did
    # not register its columns on this worker")
    assert 2 <= model.comm_.count(Kind.SHARD_LOAD) <= 3
    reference, _ = plain_lbfgs(objective(X, y, 1.0 / (C * X.shape[0])),
                               np.zeros(X.shape[1] + 1), **TIGHT)
    np.testing.assert_allclose(params_of(model), reference, rtol=0, atol=1e-6)


def test_shard_lost_too_often_is_a_clear_error(monkeypatch, own_client):
    """With no rebuilds allowed, losing a shard's worker stops the fit with an error that
    says what was lost and what to do."""
    from daskglm.solvers import sharded_lbfgs

    monkeypatch.setattr(sharded_lbfgs, "MAX_REBUILDS", 0)
    X, y = sparse_data(n=4000)
    Xd, yd = chunked(X, y)
    victim = sorted(own_client.nthreads())[-1]

    def kill_at_second_iteration(entry):
        if entry["iteration"] == 2:
            kill_worker(own_client, victim)

    token = progress._listener.set(kill_at_second_iteration)
    try:
        with pytest.raises(ShardLostError, match="fit again") as caught:
            daskglm.LogisticRegression(C=C, solver="lbfgs", solver_options=SHARDED,
                                       **TIGHT).fit(Xd, yd)
    finally:
        progress._listener.reset(token)
    assert victim in str(caught.value) and "sharded': False" in str(caught.value)


@pytest.mark.parametrize("options, match", [
    ({"sharded": "yes"}, "True or False"),
    ({"sharded": True, "shards": 0}, "shards"),
    ({"shards": 2}, "needs sharded=True"),
])
def test_bad_options_raise_before_any_work(options, match):
    X, y = sparse_data(n=200, d=50)
    X_before = X.copy()
    with pytest.raises(ValueError, match=match):
        daskglm.LogisticRegression(solver="lbfgs", solver_options=options).fit(X, y)
    assert (X != X_before).nnz == 0


def test_auto_shards_from_many_features():
    from daskglm.estimators.planning import SHARDED_FEATURES, _auto_options
    from daskglm.model.families import Binomial
    from daskglm.model.penalties import L2, NonNegative
    from daskglm.solvers import Problem

    def problem(n_features, penalty=None):
        return Problem(Binomial(), penalty or L2(1.0), True, n_features)

    assert _auto_options("lbfgs", problem(SHARDED_FEATURES), None) == {"sharded": True}
    assert _auto_options("lbfgs", problem(SHARDED_FEATURES - 1), None) == {}
    assert _auto_options("lbfgs", problem(SHARDED_FEATURES),
                         {"sharded": False}) == {"sharded": False}
    assert _auto_options("normal", problem(SHARDED_FEATURES), None) == {}
    # bounds are the in-driver L-BFGS-B's alone
    assert _auto_options("lbfgs", problem(SHARDED_FEATURES, NonNegative(L2(1.0))), None) == {}


@pytest.mark.parametrize("memory", [10, 3])
def test_in_process_engine_matches_the_reference(memory):
    X, y = sparse_data()
    model = daskglm.LogisticRegression(C=C, solver="lbfgs",
                                       solver_options={**SHARDED, "memory": memory},
                                       **TIGHT).fit(X, y)
    reference, outcome = plain_lbfgs(objective(X, y, 1.0 / (C * X.shape[0])),
                                     np.zeros(X.shape[1] + 1), memory=memory,
                                     criterion_scales=criterion_scales(X),
                                     **coordinates(X, 1.0 / (C * X.shape[0])), **TIGHT)
    assert model.n_iter_ == outcome.n_iter > memory  # the pairs' slots were reused
    np.testing.assert_allclose(params_of(model), reference, rtol=0, atol=1e-8)


def test_gram_two_loop_is_the_two_loop_recursion():
    rng = np.random.default_rng(1)
    m, n = 3, 30
    S, Y, g = rng.normal(size=(m, n)), rng.normal(size=(m, n)), rng.normal(size=n)
    Y += 3 * S  # positive curvature
    basis = np.vstack([S, Y, g])
    coefficients = gram_two_loop(basis @ basis.T, [1, 2, 0], m)
    q, alphas = g.copy(), []
    for i in (0, 2, 1):  # newest first
        alphas.append((S[i] @ q) / (S[i] @ Y[i]))
        q -= alphas[-1] * Y[i]
    q *= (S[0] @ Y[0]) / (Y[0] @ Y[0])
    for i, a in zip((1, 2, 0), reversed(alphas)):
        q += S[i] * (a - (Y[i] @ q) / (S[i] @ Y[i]))
    np.testing.assert_allclose(coefficients @ basis, -q, rtol=1e-12)


def test_ledger_follows_the_payload_model(client):
    from daskglm.accounting.bytemodel import payload_model, tree_tasks

    X, y = sparse_data()
    with pytest.warns(ConvergenceWarning):
        model = daskglm.LogisticRegression(C=C, solver="lbfgs", solver_options=SHARDED,
                                           tol=1e-12, max_iter=3).fit(*chunked(X, y))
    records = model.comm_.records
    (register,) = [r for r in records if r.kind == Kind.SHARD_REGISTER]
    # the union of each worker's partitions' columns, summed over workers: at least the
    # union of all partitions' columns (one worker), at most the sum of each partition's
    parts = [np.unique(X[i:i + 500].indices).size + 1 for i in range(0, 2000, 500)]
    touched = (register.bytes_sent - 16 * register.tasks) // 8
    assert np.unique(X.indices).size + 1 <= touched <= sum(parts)
    d = X.shape[1] + 1
    for record in records:
        calls = record.tasks
        if record.kind in (Kind.SPARSE_GRADIENT, Kind.SHARD_COLUMNS):
            # a partial a group and combine task when each worker's partitions are
            # neighbours in the tree; one a partition when Dask interleaved them: the
            # model with the record's partials
            G, fan_in = record.groups, record.split_every or 8
            down, up = payload_model(record.kind, n_params=d, partitions=record.partitions,
                                     groups=G, split_every=fan_in, partials=record.partials)
            per_partial = 40 if record.kind == Kind.SPARSE_GRADIENT else 16
            assert record.bytes_sent == down
            assert record.bytes_returned == per_partial * record.partials == up
            assert G + tree_tasks(G, fan_in) <= record.partials <= record.partitions
            continue
        expected = {
            Kind.SHARD_REGISTER: dict(touched=touched, calls=calls),
            Kind.SHARD_PULL: dict(touched=touched, calls=calls),
            Kind.SHARD_PUSH: dict(touched=touched, calls=calls),
            Kind.SHARD_LOAD: {}, Kind.SHARD_FETCH: {},
        }.get(record.kind)
        if expected is not None:
            model_bytes = payload_model(record.kind, n_params=d, partitions=record.partitions,
                                        split_every=record.split_every or 8, **expected)
            assert (record.bytes_sent, record.bytes_returned) == model_bytes, record.kind
    # one pull and one push per worker and shard: at most workers x shards calls
    workers = len(client.nthreads())
    assert all(r.tasks <= workers * workers for r in records
               if r.kind in (Kind.SHARD_PULL, Kind.SHARD_PUSH))


def test_touched_columns_keep_x_as_it_is():
    from daskglm.compute.column_shards import touched_columns

    X, _ = sparse_data(n=300, d=5000, density=0.01)
    state = touched_columns((X, None, None), 3, fit_intercept=True, hub=1)
    assert state.index == 3 and state.hub == 1
    np.testing.assert_array_equal(state.columns, np.append(np.unique(X.indices), 5000))
    assert state.X is X


def test_sample_weights_in_process():
    X, y = sparse_data(n=1000)
    weight = np.random.default_rng(3).uniform(0.2, 3.0, size=1000)
    model = daskglm.LogisticRegression(C=C, solver="lbfgs", solver_options=SHARDED,
                                       **TIGHT).fit(X, y, sample_weight=weight)
    # the estimator scales the penalty by the total weight: 1 / (C sum(w))
    reference, outcome = plain_lbfgs(objective(X, y, 1.0 / (C * weight.sum()), weight),
                                     np.zeros(X.shape[1] + 1),
                                     criterion_scales=criterion_scales(X, weight),
                                     **coordinates(X, 1.0 / (C * weight.sum()), weight),
                                     **TIGHT)
    assert outcome.converged and model.n_iter_ == outcome.n_iter
    np.testing.assert_allclose(params_of(model), reference, rtol=0, atol=1e-8)


@pytest.mark.parametrize("options", [SHARDED, {**SHARDED, "column_blocks": True}],
                         ids=["sharded", "column_blocks"])
def test_offset_as_unsharded_lbfgs(options):
    X, y, _ = make_data("poisson", n=1000, d=6)
    offset = np.random.default_rng(4).normal(scale=0.3, size=1000)
    fits = [daskglm.PoissonRegressor(alpha=0.01, solver="lbfgs", solver_options=o,
                                      **TIGHT).fit(X, y, offset=offset)
            for o in (None, options)]
    np.testing.assert_allclose(params_of(fits[1]), params_of(fits[0]), rtol=0, atol=1e-8)


def test_compare_shows_bytes_per_iteration_of_the_sharded_variant():
    from daskglm.comparison import compare

    X, y = sparse_data(n=1000, d=300)
    result = compare(X, y, ["lbfgs", "lbfgs-sharded"], alpha=1e-2, tol=1e-8, test_size=0)
    sharded = result["lbfgs-sharded"]
    assert sharded.ok and sharded.converged and sharded.objective_gap <= 1e-8
    assert sharded.report.count(Kind.SPARSE_GRADIENT) > 0
    assert sharded.bytes_per_iteration == sharded.bytes_modelled / sharded.iterations
    assert "bytes per iteration" in result.table(("method", "bytes per iteration"))
    with pytest.raises(ValueError, match="lbfgs-sharded"):
        compare(X, y, ["lbfgs-shardedd"])


@pytest.mark.parametrize("d, density", [(50, 0.2), (5000, 0.002)])
def test_worker_columns_pull_once_and_push_one_sum_in_partition_order(d, density):
    """A worker's partitions share one pull per round (their ``X`` numbered in the union
    of their columns, in their first evaluation) and one push of their summed gradients,
    the same bits whichever partition hands its sums in first."""
    from daskglm.compute.column_shards import ColumnShard, shard_bounds, touched_columns
    from daskglm.compute.worker_columns import WorkerColumns
    from daskglm.engine.shards import ShardClients
    from daskglm.model.penalties import L2

    rng = np.random.default_rng(5)
    parts = {p: sparse_data(n=6, d=d, density=density, seed=p)[0] for p in range(3)}
    union = np.unique(np.concatenate([X.indices for X in parts.values()] + [[d]]))
    grads = {p: rng.normal(size=union.size) * 10.0 ** rng.integers(-8, 8, union.size)
             for p in parts}
    x = rng.normal(size=d + 1)
    sums = []
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        bounds = shard_bounds(d + 1, 2)
        shards = [ColumnShard(bounds[k], bounds[k + 1], d, L2(0.0), 2) for k in range(2)]
        for k, shard in enumerate(shards):
            shard.load(x[bounds[k]:bounds[k + 1]])
        hub = WorkerColumns(0, ShardClients(bounds, shards))
        for p in order:
            hub.add(touched_columns((parts[p], None, None), p, fit_intercept=True))
        assert list(hub.seal()) == [union.size, 2]
        pulls = [hub.pull(p, 1, 0.0) for p in order]
        assert [traffic for _, _, traffic in pulls] == [[union.size, 2], [0, 0], [0, 0]]
        for p, (X, values, _) in zip(order, pulls):
            np.testing.assert_array_equal(values, x[union])
            assert X.shape == (6, union.size - 1)
            assert np.shares_memory(X.data, parts[p].data)
            np.testing.assert_allclose(X @ values[:-1], parts[p] @ x[:d], rtol=1e-14)
        pushes = [hub.push(p, 1, grads[p]) for p in order]
        assert pushes == [[0, 0], [0, 0], [union.size, 2]]
        for shard in shards:
            shard.finish(1, 0.0, 1.0)
        sums.append(np.concatenate([shard.g_trial for shard in shards]))
    expected = np.zeros(d + 1)
    for p in range(3):
        expected[union] += grads[p]
    np.testing.assert_array_equal(sums[0], expected)
    assert all(np.array_equal(s, sums[0]) for s in sums[1:])


def test_a_partition_unknown_to_its_worker_is_a_lost_shard():
    from daskglm.compute.column_shards import ColumnShard, shard_bounds
    from daskglm.compute.worker_columns import WorkerColumns
    from daskglm.engine.shards import ShardClients
    from daskglm.model.penalties import L2

    bounds = shard_bounds(11, 1)
    shards = [ColumnShard(0, 11, 10, L2(0.0), 2)]
    hubs = [WorkerColumns(0, ShardClients(bounds, shards))]
    clients = ShardClients(bounds, shards, hubs=hubs)
    with pytest.raises(ShardLostError, match="Partition 4 did not register"):
        clients.call_hub(0, "pull", 4, 1, 0.0)


def test_same_bits_whichever_partition_finishes_first():
    """Two fits on the same layout give the same coefficients bit for bit, although the
    engine's threads finish their partitions in any order: each worker sums its
    partitions' gradients in partition order, each shard the workers' sums in worker
    order.  (In this process all partitions share one ``WorkerColumns``; on a cluster the
    bits depend on which partitions share a worker, as any partial sum does.)"""
    X, y = sparse_data()
    Xd, yd = chunked(X, y, rows=250)
    fits = [daskglm.LogisticRegression(C=C, solver="lbfgs", solver_options=SHARDED,
                                       **TIGHT).fit(Xd, yd) for _ in range(3)]
    assert all(f.converged_ for f in fits)
    assert fits[0].comm_.records[0].partitions == 8
    for other in fits[1:]:
        np.testing.assert_array_equal(params_of(other), params_of(fits[0]))


def _values_until_lost(clients):
    """A task that reads a shard until it cannot."""
    while True:
        try:
            clients.call_each("values", [(0, ())])
        except ShardLostError:
            return
        time.sleep(0.01)


def _running(dask_worker):
    return [str(key) for key in dask_worker.active_threads.values()]


def test_a_task_calling_a_shard_released_with_its_client_ends(client):
    """Dask never answers a call to an actor it has released (as when the driver's client
    leaves): a task calling a shard then ends within seconds instead of waiting forever."""
    from distributed import Client

    from daskglm.compute.column_shards import ColumnShard
    from daskglm.engine.shards import ShardClients
    from daskglm.model.penalties import L2

    workers = sorted(client.nthreads())
    with Client(client.scheduler.address, set_as_default=False) as driver:
        made = driver.submit(ColumnShard, 0, 4, 3, L2(1.0), 2, actor=True, workers=workers[:1],
                             allow_other_workers=False, pure=False, key="daskglm-shard-test")
        clients = ShardClients([0, 4], [made.result()], workers[:1])
        driver.submit(_values_until_lost, clients, workers=workers[1:], pure=False,
                      key="daskglm-test-shard-reader")
        wait_until(lambda: "daskglm-test-shard-reader" in client.run(_running)[workers[1]])
    # the driver's client has left: its keys are released, and the reader ends
    wait_until(lambda: "daskglm-test-shard-reader" not in client.run(_running)[workers[1]])
