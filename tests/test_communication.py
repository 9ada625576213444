"""Communication-efficient SGD: compressed rounds, error feedback on the workers, deadlines.

Convergence is checked against scikit-learn's solution of the same objective (L2-logistic,
``C = 1``): after 20 epochs every codec is within an objective gap of 1e-3 (uncompressed
SGD reaches 5e-5 on these data) its coefficients within 10% of scikit-learn's (in norm).  What concerns distribution
(bytes on the wire, where the residuals live, stragglers) runs on the two-process
LocalCluster of the ``client`` fixture.
"""

import dask.array as da
import numpy as np
import pytest
from distributed import wait
from sklearn.linear_model import LogisticRegression as SkLogisticRegression

from daskglm import LogisticRegression
from daskglm.accounting.bytemodel import payload_model
from daskglm.accounting.kinds import Kind
from daskglm.compute.compressed_steps import Sender, compressed_batch_loss_grad, decode_sum
from daskglm.compute.compression import get_codec
from daskglm.compute.kernels import loss_grad
from daskglm.compute.stochastic import SGDConfig, batch_loss_grad
from daskglm.engine import make_engine
from daskglm.model.families import Binomial
from daskglm.model.penalties import L2, NoPenalty
from daskglm.model.problem import Problem
from daskglm.solvers.gradient import GradientDescent
from daskglm.solvers.sgd import SGD
from daskglm.testing import slow_worker

N, D = 2000, 5
CODECS = ["none", "stochastic", "qsgd", "sign", {"name": "topk", "k": 0.4}]
#: Objective gap to scikit-learn's optimum that every codec reaches in 20 epochs.
GAP = 1e-3


def logistic_data(n=N, d=D, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    eta = X @ rng.normal(size=d) - 0.3
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    return X, y


def objective(X, y, coef, intercept, C=1.0):
    eta = X @ coef + intercept
    return np.mean(np.logaddexp(0, eta) - y * eta) + 0.5 / (C * len(y)) * coef @ coef


def sgd_options(**extra):
    """Synchronous SGD unless ``extra`` says otherwise ("auto" would size rounds by timing)."""
    return {"batch_size": 200, "eta0": 2.0, "learning_rate": "invscaling", "power_t": 0.5,
            "random_state": 0, "sync_every": None, **extra}


@pytest.fixture(scope="module")
def reference():
    X, y = logistic_data()
    sk = SkLogisticRegression(C=1.0, tol=1e-12, max_iter=1000).fit(X, y)
    return X, y, sk.coef_.ravel(), objective(X, y, sk.coef_.ravel(), sk.intercept_[0])


def chunked(X, y, rows=500):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


@pytest.mark.parametrize("sync_every", [None, 5])
@pytest.mark.parametrize("codec", CODECS, ids=str)
def test_each_codec_converges_to_sklearns_solution(reference, codec, sync_every):
    X, y, coef, best = reference
    Xd, yd = chunked(X, y)  # 4 partitions, in this process
    # the stochastic codec's unbiased rounding is the noisiest: its gap is the median of
    # three seeds' (seed 0 alone gave 1.07e-3 local and 7.7e-4 synchronous; seeds 1-5,
    # 2.5e-4 to 8.8e-4)
    seeds = (0, 1, 2) if codec == "stochastic" else (0,)
    gaps = []
    for seed in seeds:
        model = LogisticRegression(C=1.0, solver="sgd", max_iter=20, tol=None,
                                   solver_options=sgd_options(compression=codec,
                                                              sync_every=sync_every,
                                                              random_state=seed))
        model.fit(Xd, yd)
        gaps.append(objective(X, y, model.coef_.ravel(), model.intercept_[0]) - best)
    gap = float(np.median(gaps))
    assert 0 <= gap <= GAP
    assert np.linalg.norm(model.coef_.ravel() - coef) <= 0.1 * np.linalg.norm(coef)
    kind = Kind.COMPRESSED_BATCH if sync_every is None else Kind.COMPRESSED_LOCAL_SGD
    assert model.comm_.count(kind) > 0 and model.comm_.count(Kind.PUT_STATE) == 1
    assert model.comm_.count(Kind.FETCH_STATE) == 0


def test_no_compression_codec_gives_the_uncompressed_run_bit_for_bit(client):
    X, y = logistic_data()
    Xd, yd = chunked(X, y)
    fits = [LogisticRegression(C=1.0, solver="sgd", max_iter=2, tol=None,
                               solver_options=sgd_options(compression=codec, batch_size=500))
            .fit(Xd, yd)
            for codec in (None, "none")]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    np.testing.assert_array_equal(fits[0].intercept_, fits[1].intercept_)


def test_compressed_rounds_move_fewer_measured_bytes(client):
    X, y = logistic_data(n=800, d=2000)
    problem = Problem(Binomial(), L2(1.0 / 800), True, 2000)
    returned, total = {}, {}
    # in memory: 2 partitions scattered one per worker
    with make_engine(X, y, family=Binomial(), client=client, n_partitions=2) as engine:
        for codec in (None, "qsgd", "sign"):
            first = len(engine.ledger.records)
            SGD(tol=None, max_iter=1, **sgd_options(compression=codec)).solve(
                problem, engine, np.zeros(2001))
            engine.collect_measurements()
            kind = Kind.SGD_BATCH if codec is None else Kind.COMPRESSED_BATCH
            records = [r for r in engine.ledger.records[first:] if r.kind == kind]
            assert len(records) == 4
            # Dask's own counters: the bytes workers wrote for the round's results
            returned[codec] = np.mean([r.bytes_transferred for r in records])
            # both ways: after the first round the coefficients go down as the messages
            # of the step before, from which each partition steps its replica
            total[codec] = np.mean([r.bytes_measured for r in records[1:]])
            if codec is not None:
                up = payload_model(kind, n_params=2001, partitions=2, groups=2,
                                   codec=get_codec(codec))[1]
                assert all(record.bytes_returned == up for record in records)
    assert returned["qsgd"] * 8 <= returned[None]
    assert returned["sign"] * 8 <= returned[None]
    assert total["qsgd"] * 2 <= total[None]
    assert total["sign"] * 2 <= total[None]


def test_error_feedback_residuals_stay_on_the_workers(client):
    X, y = logistic_data(n=1000, d=50)
    Xd, yd = chunked(X, y, rows=250)
    codec = get_codec({"name": "topk", "k": 0.1})
    with make_engine(Xd, yd, family=Binomial(), client=client) as engine:
        config = SGDConfig(Binomial(), NoPenalty(), None, True, 50, 100, 1000,
                           engine.sum_weight, 7)
        engine.put_state("senders", [Sender(i) for i in range(engine.n_partitions)])
        params = np.zeros(51)
        draws = [(i, 25, 0) for i in range(4)]
        sent = np.zeros(51)
        for step in range(3):
            draws = [(i, 25, 25 * step) for i in range(4)]
            out = engine.map_stateful(compressed_batch_loss_grad, "senders", draws, params,
                                      config, 0, step, codec, kind=Kind.COMPRESSED_BATCH)
            sent += decode_sum([p.message for p in out.result], codec, 51)
        # the states are futures held by the partitions' workers; nothing was shipped
        futures = engine._states["senders"]
        wait(futures)
        holders = client.who_has(futures)
        parts = client.who_has(engine.parts)
        for future, part in zip(futures, engine.parts):
            assert type(future).__name__ == "Future"
            assert holders[future.key] == parts[part.key]
        assert [r.kind for r in engine.ledger.records].count("fetch_state") == 0
        for record in engine.ledger.records[-3:]:  # the messages only, 6 of 51 entries
            assert record.bytes_returned == 4 * (16 + codec.model_bytes(51))
        # what was sent plus what is owed equals what was computed
        residuals = sum(s.residual for s in engine.fetch_state("senders"))
        computed = sum(
            batch_loss_grad(part, (i, 25, 25 * step), params, config, 0).grad
            for step in range(3)
            for i, part in enumerate(client.gather(engine.parts))
        )
    np.testing.assert_allclose(sent + residuals, computed, rtol=1e-12, atol=1e-12)


def test_deadline_rounds_back_up_the_slow_worker_and_equal_plain_sgd(client, reference):
    """A persistent straggler: the first deadline round drops its partitions and copies
    them to the fast worker; from then on their backups arrive first, and the fit is
    plain synchronous SGD's to the bit, without waiting for the slow worker."""
    X, y, coef, best = reference
    slow = sorted(client.nthreads())[1]
    problem = _problem(alpha=1.0 / N)
    deadline = SGD(tol=None, max_iter=5, **sgd_options(batch_size=500, deadline=30.0,
                                                       min_fraction=0.5))
    plain = SGD(tol=None, max_iter=5, **sgd_options(batch_size=500))
    # in memory: 4 partitions scattered in contiguous runs, two per worker
    with make_engine(X, y, family=Binomial(), client=client, n_partitions=4) as engine:
        holders = client.who_has(engine.parts)
        on_slow = tuple(i for i, part in enumerate(engine.parts) if slow in holders[part.key])
        undisturbed = plain.solve(problem, engine, np.zeros(D + 1))
        with slow_worker(client, slow, 0.5):
            first = engine.reduce_by_deadline(loss_grad, np.zeros(D + 1), Binomial(), True,
                                              kind=Kind.DEADLINE_GRADIENT, min_fraction=0.5)
            result = deadline.solve(problem, engine, np.zeros(D + 1))
        records = [r for r in engine.ledger.records if r.kind == Kind.DEADLINE_BATCH]
        waited = engine.ledger.count(Kind.SGD_BATCH) - 20  # the undisturbed fit's 20
        choice = engine.ledger.choices["deadline"]
        # leave the shared cluster idle: this round waits for the late tasks to end
        engine.reduce(loss_grad, np.zeros(D + 1), Binomial(), True, kind=Kind.GRADIENT)
    # the guard's 2 waiting steps (after 4 deadline steps) took 0.5 s; the deadline's did not
    assert len(on_slow) == 2 and len(records) == 18 and waited == 2
    assert choice[0] == "deadline", choice
    assert first.dropped == on_slow
    # every step had every partition, the slow worker's from their backups
    assert all(r.dropped == () and r.backups == on_slow for r in records)
    assert sum(r.bytes_replicated for r in records) == 0  # copied once, before the fit
    assert [entry["dropped"] for entry in result.history] == [[()] * 4] * 5
    np.testing.assert_array_equal(result.params, undisturbed.params)


def test_a_fit_backs_up_the_straggler_after_its_first_step(client, reference):
    """The first step of a fit drops the slow worker's partitions (no backups yet); the
    later ones have them all: the fit ends as close to the optimum as plain SGD."""
    X, y, coef, best = reference
    slow = sorted(client.nthreads())[1]
    problem = _problem(alpha=1.0 / N)
    solver = SGD(tol=None, max_iter=5, **sgd_options(batch_size=500, deadline=30.0,
                                                     min_fraction=0.5))
    with make_engine(X, y, family=Binomial(), client=client, n_partitions=4) as engine:
        holders = client.who_has(engine.parts)
        on_slow = tuple(i for i, part in enumerate(engine.parts) if slow in holders[part.key])
        with slow_worker(client, slow, 0.5):
            result = solver.solve(problem, engine, np.zeros(D + 1))
        plain = SGD(tol=None, max_iter=5, **sgd_options(batch_size=500)).solve(
            problem, engine, np.zeros(D + 1))
        records = [r for r in engine.ledger.records if r.kind == Kind.DEADLINE_BATCH]
    assert records[0].dropped == on_slow and records[0].backups == ()
    assert all(r.dropped == () and r.backups == on_slow for r in records[1:])
    assert result.history[0]["dropped"] == [on_slow, (), (), ()]
    assert len(records) == 18  # and two waiting steps, timed by the guard
    gap = objective(X, y, result.params[:D], result.params[D]) - best
    plain_gap = objective(X, y, plain.params[:D], plain.params[D]) - best
    assert 0 <= gap <= 1.1 * plain_gap


def test_reweighting_by_the_weight_that_arrived_is_exact():
    X, y = logistic_data()
    Xd, yd = chunked(X, y)
    config = SGDConfig(Binomial(), NoPenalty(), None, True, D, 100, N, float(N), 3)
    params = np.linspace(-1, 1, D + 1)
    draws = [(i, 25, 0) for i in range(4)]
    with make_engine(Xd, yd, family=Binomial(), client=None) as engine:
        full = engine.reduce_each(batch_loss_grad, draws, params, config, 0, kind="sgd_batch")
        everyone = engine.reduce_each_by_deadline(batch_loss_grad, draws, params, config, 0,
                                                  kind=Kind.DEADLINE_BATCH, min_fraction=1.0)
        assert everyone.dropped == () and everyone.fraction == 1.0
        np.testing.assert_array_equal(everyone.result.grad, full.grad)
        record = engine.ledger.records[-1]
        assert record.kind == Kind.DEADLINE_BATCH and record.dropped == ()
        # a solver run that waits for everyone is plain synchronous SGD, bit for bit
        runs = []
        for extra in ({}, {"min_fraction": 1.0}):
            solver = SGD(tol=None, max_iter=2, **sgd_options(**extra))
            problem = _problem()
            runs.append(solver.solve(problem, engine, np.zeros(D + 1)).params)
    np.testing.assert_array_equal(runs[0], runs[1])


def _problem(alpha=0.0):
    return Problem(Binomial(), L2(alpha) if alpha else NoPenalty(), True, D)


@pytest.mark.parametrize("options, match", [
    ({"compression": "gzip"}, "unknown codec"),
    ({"compression": "qsgd", "bits": 9}, "bits"),
    ({"compression": "topk", "k": 0.0}, "k"),
    ({"compression": "sign", "bits": 4}, "takes no parameter"),
    ({"bits": 4}, "need 'compression'"),
    ({"compression": {"name": "qsgd"}, "bits": 4}, "inside the 'compression' dict"),
    ({"deadline": 0.0}, "deadline"),
    ({"deadline": "soon"}, "deadline"),
    ({"min_fraction": 1.5}, "min_fraction"),
    ({"deadline": 1.0, "sync_every": 4, "hogwild": 2}, "not to hogwild"),
    ({"deadline": 1.0, "compression": "sign"}, "cannot be combined"),
    ({"compression": "sign", "sync_every": 4, "average": True}, "average"),
])
def test_bad_options_raise_before_any_work(options, match):
    X, y = logistic_data(n=50)
    model = LogisticRegression(solver="sgd", solver_options=options)
    with pytest.raises(ValueError, match=match):
        model.fit(X, y)


def test_bucketed_qsgd_is_unbiased_smaller_in_variance_and_sized_as_modelled():
    codec = get_codec({"name": "qsgd", "bits": 4, "bucket": 64})
    plain = get_codec({"name": "qsgd", "bits": 4, "bucket": None})
    vector = np.random.default_rng(0).standard_normal(1000) * np.linspace(0.1, 3, 1000)
    rng = np.random.default_rng(1)
    draws = np.array([codec.decode(codec.encode(vector, rng)) for _ in range(4000)])
    plain_draws = np.array([plain.decode(plain.encode(vector, rng)) for _ in range(400)])
    # the mean of 4000 draws is within 5 standard errors of the input, entry by entry
    error = np.abs(draws.mean(axis=0) - vector)
    assert np.all(error <= 5 * draws.std(axis=0) / np.sqrt(4000) + 1e-12)
    assert draws.var(axis=0).sum() < 0.5 * plain_draws.var(axis=0).sum()
    message = codec.encode(vector, rng)
    assert message.norm.shape == (16,)  # ceil(1000 / 64) bucket norms
    assert 8 + 8 * 16 + 125 + 375 == codec.model_bytes(1000)
    assert sum(f.nbytes if isinstance(f, np.ndarray) else 8 for f in message) == 8 + 8 * 16 + 125 + 375
    assert get_codec(codec.spec) == codec
    with pytest.raises(ValueError, match="bucket"):
        get_codec({"name": "qsgd", "bucket": 0})


@pytest.mark.parametrize("spec, drifts", [({"name": "qsgd", "bits": 4, "bucket": None}, False),
                                          ({"name": "qsgd", "bits": 2, "bucket": 32}, True),
                                          ("stochastic", True)], ids=str)
def test_unbiased_codecs_state_their_variance_and_their_shifts_contract(spec, drifts):
    codec = get_codec(spec)
    rng = np.random.default_rng(4)
    vector = rng.standard_normal(256) * np.linspace(0.1, 3, 256)
    draws = np.array([codec.decode(codec.encode(vector, rng)) for _ in range(2000)])
    # the mean squared error of 2000 draws, against the stated bound (10% for sampling)
    error = ((draws - vector) ** 2).sum(axis=1).mean()
    assert error <= 1.1 * codec.variance(256) * vector @ vector
    assert codec.shift_rate(256) == pytest.approx(1 / (1 + codec.variance(256)))
    # the shift h <- h + rate D(C(g - h)) approaches g; at rate 1 it drifts away where
    # the variance factor exceeds 1 (measured: 0.69 for 4 bits, 3.4 for 2 bits, 10 for
    # stochastic)
    shifted, plain = np.zeros(256), np.zeros(256)
    for _ in range(60):
        shifted = shifted + codec.shift_rate(256) * codec.decode(codec.encode(vector - shifted, rng))
        plain = plain + codec.decode(codec.encode(vector - plain, rng))
    assert np.linalg.norm(shifted - vector) < 0.5 * np.linalg.norm(vector)
    assert (np.linalg.norm(plain - vector) > np.linalg.norm(vector)) == drifts
    assert get_codec("topk").shift_rate(256) == 1.0 and get_codec("none").variance(9) == 0.0


GD_CODECS = ["none", "qsgd", {"name": "qsgd", "bits": 8}, "sign", {"name": "topk", "k": 0.5}]


@pytest.mark.parametrize("codec", GD_CODECS, ids=str)
def test_compressed_gradient_descent_reaches_sklearns_solution(reference, codec):
    X, y, coef, best = reference
    Xd, yd = chunked(X, y)  # 4 partitions, in this process
    model = LogisticRegression(C=1.0, solver="gd", tol=1e-6, max_iter=300,
                               solver_options={"compression": codec}).fit(Xd, yd)
    # the criterion (largest gradient entry <= 1e-6) held in an exact round
    assert model.comm_.records[-1].kind == Kind.GRADIENT
    np.testing.assert_allclose(model.coef_.ravel(), coef, atol=1e-4)
    assert objective(X, y, model.coef_.ravel(), model.intercept_[0]) - best <= 1e-9
    assert model.comm_.count(Kind.COMPRESSED_GRADIENT) > 0
    assert model.comm_.count(Kind.FETCH_STATE) == 0


def test_compressed_gradient_descent_says_when_it_did_not_converge(reference):
    from sklearn.exceptions import ConvergenceWarning

    X, y, _, _ = reference
    Xd, yd = chunked(X, y)
    model = LogisticRegression(C=1.0, solver="gd", tol=1e-10, max_iter=15,
                               solver_options={"compression": "stochastic"})
    with pytest.warns(ConvergenceWarning):
        model.fit(Xd, yd)
    assert model.converged_ is False


def test_deadline_gradient_descent_backs_up_the_slow_worker(client, reference):
    X, y, coef, _ = reference
    slow = sorted(client.nthreads())[1]
    problem = _problem(alpha=1.0 / N)
    solver = GradientDescent(tol=1e-6, max_iter=20, min_fraction=0.5, deadline=30.0)
    with make_engine(X, y, family=Binomial(), client=client, n_partitions=4) as engine:
        holders = client.who_has(engine.parts)
        on_slow = tuple(i for i, part in enumerate(engine.parts) if slow in holders[part.key])
        with slow_worker(client, slow, 1.0):
            result = solver.solve(problem, engine, np.zeros(D + 1))
        records = [r for r in engine.ledger.records if r.kind == Kind.DEADLINE_GRADIENT]
        exact = [r for r in engine.ledger.records if r.kind == Kind.GRADIENT]
    # the first round drops the slow worker's partitions, the later ones have them from
    # their backups: exact gradients, and the criterion confirmed by an exact round
    assert records[0].dropped == on_slow
    assert all(r.dropped == () and r.backups == on_slow for r in records[1:])
    assert result.converged and exact
    np.testing.assert_allclose(result.params[:D], coef, atol=1e-4)
