"""The compiled loop of local SGD against the Python loop it replaces.

:func:`~daskglm.compute.local_sgd_rounds.local_sgd` runs a dense partition's round of steps in
one compiled call (:mod:`daskglm.compute.sgd_loops`) where it can; with that path switched
off it runs the Python loop, the reference.  Both draw the same rows and take the same
steps: every field of their :class:`~daskglm.compute.local_sgd_rounds.LocalSGDStats` agrees to
1e-10 (the sums of the penalty and of the sample weights are taken in another order, and
steps of few rows use the C library's ``exp``).
"""

import numpy as np
import pytest
import scipy.sparse as sp

from daskglm.compute import local_sgd_rounds
from daskglm.compute.local_sgd_rounds import local_sgd
from daskglm.compute.stochastic import SGDConfig
from daskglm.model.families import Binomial, Gamma, Gaussian, Poisson, Tweedie
from daskglm.model.links import Identity
from daskglm.model.penalties import L2, NoPenalty, make_penalty
from daskglm.optim.schedules import make_step_rule
from tests.conftest import make_partition

N, D = 400, 6
N_ROWS = 8 * N  # the data set: this partition and seven more like it

FAMILIES = {"binomial": Binomial(), "gaussian": Gaussian(), "poisson": Poisson()}
PENALTIES = {"none": NoPenalty(), "l2": L2(0.05),
             "elasticnet": make_penalty("elasticnet", 0.05, 0.5)}
RULES = {"constant": ("constant", {"eta0": 0.05}),
         "invscaling": ("invscaling", {"eta0": 0.1, "power_t": 0.25}),
         "optimal": ("optimal", {"alpha": 1.0})}


def make_part(family, n=N, weights=True, dtype=np.float64, order="C", seed=0):
    return make_partition(family, n, D, weights, dtype, order, seed)


def make_config(family, penalty=None, rule="invscaling", fit_intercept=True, average_from=None,
                n_rows=N_ROWS, batch_size=16):
    name, options = RULES[rule]
    return SGDConfig(family, L2(0.05) if penalty is None else penalty,
                     make_step_rule(name, **options), fit_intercept, D, batch_size, n_rows,
                     float(n_rows), seed=5, average_from=average_from)


def start(config, seed=1):
    params = np.random.default_rng(seed).normal(scale=0.2, size=D + config.fit_intercept)
    return params, config.rule.init(params)


def both_paths(part, draw, params, rule_state, average, config, monkeypatch):
    """``local_sgd`` on the compiled path and on the Python path."""
    assert local_sgd_rounds.compiled_local_steps_apply(part, draw[2], config)
    compiled = local_sgd(part, draw, params, rule_state, average, config)
    with monkeypatch.context() as patch:
        patch.setattr(local_sgd_rounds, "compiled_local_steps_apply", lambda *args: False)
        reference = local_sgd(part, draw, params, rule_state, average, config)
    return compiled, reference


def assert_same(compiled, reference, rtol=1e-10):
    np.testing.assert_allclose(compiled.params, reference.params, rtol=rtol, atol=1e-13)
    assert compiled.rate == reference.rate
    assert compiled.rule_state == reference.rule_state
    if reference.average is None:
        assert compiled.average is None
    else:
        np.testing.assert_allclose(compiled.average, reference.average, rtol=rtol, atol=1e-13)
    assert compiled.loss == pytest.approx(reference.loss, rel=rtol)
    assert compiled.batch_weight == pytest.approx(reference.batch_weight, rel=rtol)
    assert compiled.penalty == pytest.approx(reference.penalty, rel=rtol, abs=1e-13)


def random_counts(steps, seed=2, most=4):
    return np.random.default_rng(seed).integers(0, most + 1, size=steps)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("penalty", PENALTIES)
@pytest.mark.parametrize("family", FAMILIES)
def test_weighted_round_with_intercept_equals_the_python_loop(family, penalty, rule, monkeypatch):
    family = FAMILIES[family]
    config = make_config(family, PENALTIES[penalty], rule)
    params, state = start(config)
    draw = (3, 40, random_counts(60), 30, 11)  # zero-row steps among them
    compiled, reference = both_paths(make_part(family), draw, params, state, None, config,
                                     monkeypatch)
    assert_same(compiled, reference)
    assert reference.batch_weight > 0 and np.isfinite(reference.params).all()
    assert np.isfinite(reference.loss) and not np.array_equal(reference.params, params)


@pytest.mark.parametrize("penalty", PENALTIES)
@pytest.mark.parametrize("family", FAMILIES)
def test_round_without_intercept_or_weights(family, penalty, monkeypatch):
    family = FAMILIES[family]
    config = make_config(family, PENALTIES[penalty], "constant", fit_intercept=False)
    params, state = start(config)
    assert params.shape == (D,)
    part = make_part(family, weights=False)
    compiled, reference = both_paths(part, (0, 7, random_counts(40), 7), params, state, None,
                                     config, monkeypatch)
    assert_same(compiled, reference)


@pytest.mark.parametrize("dtype, order", [(np.float32, "C"), (np.float64, "F"),
                                          (np.float32, "F")],
                         ids=["float32", "fortran", "float32-fortran"])
def test_float32_and_fortran_ordered_partitions(dtype, order, monkeypatch):
    config = make_config(Binomial(), make_penalty("elasticnet", 0.05, 0.5))
    params, state = start(config)
    part = make_part(Binomial(), dtype=dtype, order=order)
    assert part[0].dtype == dtype and part[0].flags[f"{order}_CONTIGUOUS"]
    compiled, reference = both_paths(part, (1, 0, random_counts(50), 0, 5), params, state, None,
                                     config, monkeypatch)
    assert_same(compiled, reference)


@pytest.mark.parametrize("steps", [1, 150], ids=["one-step", "many-steps"])
@pytest.mark.parametrize("family", ["binomial", "gaussian"])
def test_one_step_and_many_steps(family, steps, monkeypatch):
    family = FAMILIES[family]
    config = make_config(family, make_penalty("elasticnet", 0.05, 0.5))
    params, state = start(config)
    compiled, reference = both_paths(make_part(family), (2, 20, random_counts(steps, most=3), 15),
                                     params, state, None, config, monkeypatch)
    assert_same(compiled, reference)


def test_one_step_without_rows_moves_by_the_penalty_only(monkeypatch):
    config = make_config(Gaussian(), L2(0.05), "constant")
    params, state = start(config)
    compiled, reference = both_paths(make_part(Gaussian()), (0, 3, [0], 0), params, state, None,
                                     config, monkeypatch)
    assert_same(compiled, reference)
    expected = params.copy()
    expected[:D] -= 0.05 * (0.05 * params[:D])  # rate times the L2 gradient
    fraction = make_part(Gaussian())[2].sum() / N_ROWS
    np.testing.assert_allclose(compiled.params, fraction * expected, rtol=1e-12)
    assert compiled.loss == compiled.batch_weight == compiled.penalty == 0.0


def test_partition_with_fewer_rows_than_the_steps_want(monkeypatch):
    config = make_config(Poisson(), L2(0.05))
    params, state = start(config)
    part = make_part(Poisson(), n=5)
    draw = (0, 4, [2, 4, 3, 0, 1], 4, 0)  # the second step finds 3 of its 4 rows, then none
    compiled, reference = both_paths(part, draw, params, state, None, config, monkeypatch)
    assert_same(compiled, reference)
    assert compiled.batch_weight == pytest.approx(part[2].sum(), rel=1e-12)  # every row once


def test_steps_of_many_rows_sum_in_blocks(monkeypatch):
    # steps of 40 and 300 rows (over a summing block of 128) besides a few small ones
    config = make_config(Binomial(), L2(0.05), batch_size=N_ROWS // 4)
    params, state = start(config)
    counts = [3, 40, 0, 300]
    compiled, reference = both_paths(make_part(Binomial()), (0, 0, counts, 0), params, state,
                                     None, config, monkeypatch)
    assert_same(compiled, reference)


def test_last_step_of_an_epoch_scales_by_the_rows_it_has(monkeypatch):
    config = make_config(Gaussian(), L2(0.05), n_rows=1000)  # 63 steps, the last of 8 rows
    params, state = start(config)
    compiled, reference = both_paths(make_part(Gaussian()), (0, 55, random_counts(8), 0, 100),
                                     params, state, None, config, monkeypatch)
    assert_same(compiled, reference)


@pytest.mark.parametrize("average_from, running", [(0, True), (45, False), (53, False),
                                                   (500, False)],
                         ids=["running", "starts-in-round", "starts-at-last-step", "not-yet"])
def test_averaging(average_from, running, monkeypatch):
    config = make_config(Binomial(), make_penalty("elasticnet", 0.05, 0.5),
                         average_from=average_from)
    params, state = start(config)
    average = np.random.default_rng(3).normal(size=params.shape) if running else None
    compiled, reference = both_paths(make_part(Binomial()), (0, 40, random_counts(14), 40),
                                     params, state, average, config, monkeypatch)
    assert_same(compiled, reference)
    assert (reference.average is None) == (average_from >= 53)


def test_tweedie_and_gamma_pass_their_parameter(monkeypatch):
    for family in (Tweedie(power=1.5, link="log"), Gamma(link="log")):
        config = make_config(family, L2(0.05), "constant")
        params, state = start(config)
        compiled, reference = both_paths(make_part(family), (0, 0, random_counts(30), 0),
                                         params, state, None, config, monkeypatch)
        assert_same(compiled, reference)


def test_other_cases_keep_the_python_loop():
    X, y, w = make_part(Binomial())
    counts = random_counts(10)
    config = make_config(Binomial())
    assert local_sgd_rounds.compiled_local_steps_apply((X, y, w), counts, config)
    adagrad = SGDConfig(Binomial(), L2(0.05), make_step_rule("adagrad", 0.1), True, D, 16,
                        N_ROWS, float(N_ROWS), 0)
    assert not local_sgd_rounds.compiled_local_steps_apply((X, y, w), counts, adagrad)
    assert not local_sgd_rounds.compiled_local_steps_apply((sp.csr_matrix(X), y, w), counts, config)
    assert not local_sgd_rounds.compiled_local_steps_apply((X.astype(np.int64), y, w), counts, config)
    assert not local_sgd_rounds.compiled_local_steps_apply((X, y, w), [], config)
    assert not local_sgd_rounds.compiled_local_steps_apply((X, y, w), counts,
                                            make_config(Poisson(link=Identity())))


def test_a_fit_with_local_steps_equals_the_python_loops(monkeypatch):
    from daskglm.engine import make_engine
    from daskglm.solvers import Problem, get_solver

    X, y, w = make_part(Binomial(), n=1000)
    problem = Problem(Binomial(), make_penalty("elasticnet", 0.01, 0.5), True, D)

    def fit():
        options = {"batch_size": 32, "random_state": 0, "sync_every": 4,
                   "learning_rate": "invscaling", "eta0": 0.2, "average": 500}
        with make_engine(X, y, w, family=problem.family, client=None, n_partitions=3) as engine:
            solver = get_solver("sgd", problem, tol=None, max_iter=3, options=options)
            return solver.solve(problem, engine, np.zeros(problem.n_params))

    rounds = []
    compiled_steps = local_sgd_rounds.compiled_local_steps
    monkeypatch.setattr(local_sgd_rounds, "compiled_local_steps",
                        lambda *args: rounds.append(1) or compiled_steps(*args))
    compiled = fit()
    assert len(rounds) == 3 * 3 * 8  # epochs, partitions, rounds of 4 of the 32 steps
    monkeypatch.setattr(local_sgd_rounds, "compiled_local_steps_apply", lambda *args: False)
    reference = fit()
    np.testing.assert_allclose(compiled.params, reference.params, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(compiled.state.params, reference.state.params, rtol=1e-10,
                               atol=1e-13)


@pytest.mark.parametrize("family", ["binomial", "gaussian", "poisson"])
def test_gossip_nodes_take_the_compiled_steps(family, monkeypatch):
    """A gossip node's local steps are local SGD's with the node's share of the weight."""
    from daskglm.compute import gossip

    part = make_part(FAMILIES[family])
    config = make_config(FAMILIES[family])
    params, rule_state = start(config)
    n_nodes = 8
    counts = np.full((40, n_nodes), 2)
    offsets = np.full(n_nodes, 10)
    node = gossip.GossipNode(3, params, rule_state)
    compiled = gossip.gossip_local_steps(part, node, counts, offsets, 7, 5, config, n_nodes)
    monkeypatch.setattr(gossip, "compiled_local_steps_apply", lambda *args: False)
    python = gossip.gossip_local_steps(part, node, counts, offsets, 7, 5, config, n_nodes)
    for got, expected in zip((compiled[0].params, compiled[0].loss, compiled[0].weight,
                              compiled[0].penalty, compiled[1].params),
                             (python[0].params, python[0].loss, python[0].weight,
                              python[0].penalty, python[1].params)):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-14)


# --------------------------------------------------------------------------------------
# CSR partitions: the lazy L2 steps compiled (compute/sparse_sgd_loops.py)


def _hashed_part(weighted, n=3000, d=2**13, nnz=12, seed=0):
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), nnz)
    X = sp.csr_matrix((rng.uniform(0.5, 1.5, n * nnz), (rows, rng.integers(0, d, n * nnz))),
                      shape=(n, d))
    y = (rng.uniform(size=n) < 0.4).astype(float)
    weight = rng.uniform(0.5, 2.0, n) if weighted else None
    return (X, y, weight), d


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("family, penalty", [(Binomial(), L2(1e-3)), (Poisson(), NoPenalty()),
                                             (Gaussian(), L2(0.5))])
def test_compiled_lazy_steps_equal_the_python_loop(family, penalty, weighted):
    """The same rows, rates and updates as the Python lazy loop, to round-off (1e-12 on
    the coefficients, 1e-9 relative on the loss sums)."""
    from daskglm.compute.sparse_sgd_loops import compiled_lazy_steps, compiled_lazy_steps_apply

    part, d = _hashed_part(weighted)
    rule = make_step_rule("invscaling", eta0=0.05, power_t=0.25)
    n = part[0].shape[0]
    config = SGDConfig(family, penalty, rule, True, d, 16, n, float(n), 3)
    params = np.random.default_rng(1).normal(scale=0.05, size=d + 1)
    counts = np.full(150, 16)
    weight = float(n) if part[2] is None else float(part[2].sum())
    assert compiled_lazy_steps_apply(part, counts, config)
    args = (part, 0, 0, counts, params, rule.init(params), weight, config, 0, 0)
    python = local_sgd_rounds._lazy_local_steps(*args)
    compiled = compiled_lazy_steps(*args)
    np.testing.assert_allclose(compiled[0], python[0], rtol=0, atol=1e-12)
    assert compiled[1] == python[1]  # the last rate
    np.testing.assert_allclose(compiled[3:], python[3:], rtol=1e-9)


@pytest.mark.parametrize("layout", ["csr_matrix", "csr_array"])
def test_a_sparse_round_takes_the_compiled_lazy_steps(monkeypatch, layout):
    """scipy's sparse arrays as well as its matrices (a ``csr_array`` partition took the
    Python loop: 12x slower on iris in scikit-learn's ``test_balanced_weight``)."""
    from daskglm.compute import sparse_sgd_loops

    calls = []
    original = sparse_sgd_loops.compiled_lazy_steps
    monkeypatch.setattr(sparse_sgd_loops, "compiled_lazy_steps",
                        lambda *a: calls.append(1) or original(*a))
    part, d = _hashed_part(False)
    part = (getattr(sp, layout)(part[0]), *part[1:])
    rule = make_step_rule("invscaling", eta0=0.05, power_t=0.25)
    config = SGDConfig(Binomial(), L2(1e-3), rule, True, d, 16, 3000, 3000.0, 3)
    params = np.zeros(d + 1)
    local_sgd(part, (0, 0, np.full(10, 16)), params, rule.init(params), None, config)
    assert calls == [1]


def test_a_rounds_rates_come_in_one_call_as_update_gives_them():
    # the scalar rules' rates for thousands of local steps at once: the same numbers as
    # one update per step (the compiled rounds took longer for those calls than for their
    # steps)
    from daskglm.optim.schedules import Chain, OptimalDecay, PolynomialDecay, Scale, step_rates

    steps = range(1000, 5096)
    for rule in (Scale(0.01), OptimalDecay(1e-4), Chain((Scale(0.01), PolynomialDecay(0.25)))):
        state = rule.init(None)
        rates, last, after = step_rates(rule, state, steps)
        expected = [rule.update(None, state, step)[0] for step in steps]
        assert rates.tolist() == expected and last == expected[-1] and after == state
