"""Partitions are used as they arrive: results do not depend on where a buffer starts.

The engine does not copy a C-contiguous, naturally aligned partition to a 64-byte
boundary (:func:`daskglm.engine.partitions._usable`).  That is sound only if every kernel
it runs on dense numpy partitions gives the same bits whatever the offset of its buffers
from a cache line: here the same data are placed at each 8-byte offset modulo 64 (and, for
float32 ``X``, each 4-byte offset) and every kernel, and whole fits, must agree bit for
bit.  The last tests check that a persisted Dask array is not copied when it is packed.
"""

import dataclasses
import hashlib

import dask.array as da
import numpy as np
import pytest

import daskglm
from daskglm import engine as engine_module
from daskglm.compute import blocked, row_blocks
from daskglm.compute.kernels import gram, linear_predictor, loss_grad, loss_grad_hess
from daskglm.compute.local_solves import fit_partition
from daskglm.compute.multinomial import multinomial_loss_grad, multinomial_loss_grad_hess
from daskglm.compute.summaries import summarize, summarize_and_evaluate, summarize_gram
from daskglm.engine.partitions import _as_partition, _usable
from daskglm.model.families import Binomial, Gamma, Gaussian, Poisson
from daskglm.model.penalties import L2

from .conftest import make_data

#: Odd width, so that rows start at every offset inside a buffer; rows span several
#: gradient and Gram blocks and end in a partial one.
D = 13
N = 3 * max(blocked.gram_block_rows(D), row_blocks.block_rows(D, True)) + 5


def _at(offset, a):
    """A copy of ``a`` whose buffer starts ``offset`` bytes past a 64-byte boundary."""
    if a is None:
        return None
    raw = np.empty(a.nbytes + 128, dtype=np.uint8)
    start = -raw.ctypes.data % 64 + offset
    placed = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    placed[...] = a
    assert placed.ctypes.data % 64 == offset and placed.flags.c_contiguous
    return placed


def _bits(result):
    """A digest of every number in ``result`` (nested tuples, dataclasses, arrays)."""
    digest = hashlib.sha256()

    def add(value):
        if dataclasses.is_dataclass(value):
            for field in dataclasses.fields(value):
                add(getattr(value, field.name))
        elif isinstance(value, (tuple, list)):
            for item in value:
                add(item)
        elif value is not None and not isinstance(value, (str, bool)):
            array = np.asarray(value)
            if array.dtype.kind in "fiuc":
                digest.update(array.astype(np.float64).tobytes())

    add(result)
    return digest.hexdigest()


def _data(dtype):
    rng = np.random.default_rng(0)
    X = rng.uniform(0.5, 1.5, size=(N, D)).astype(dtype)
    eta = rng.normal(scale=0.3, size=N)
    y_binary = (rng.uniform(size=N) < 1 / (1 + np.exp(-eta))).astype(float)
    y_count = rng.poisson(np.exp(eta)).astype(float)
    y_positive = rng.gamma(2.0, np.exp(eta) / 2.0)
    y_class = rng.integers(0, 3, size=N).astype(float)
    weight = rng.uniform(0.0, 2.0, size=N)
    offset = rng.uniform(0.0, 0.2, size=N)
    return X, y_binary, y_count, y_positive, y_class, weight, offset


def _kernel_calls(dtype):
    """Every kernel the engine runs on a dense numpy partition, as ``name -> call(place)``,
    ``place`` putting an array at the offset under test."""
    X0, y_binary, y_count, y_positive, y_class, weight0, offset0 = _data(dtype)
    rng = np.random.default_rng(1)
    params = rng.normal(scale=0.1, size=D + 1)
    multi_params = rng.normal(scale=0.1, size=3 * (D + 1))

    def part(place, y, weighted=True, offset=False):
        base = (place(X0), place(y), place(weight0) if weighted else None)
        return base + (place(offset0),) if offset else base

    calls = {}
    for name, family, y in [("gaussian", Gaussian(), y_count), ("binomial", Binomial(), y_binary),
                            ("poisson", Poisson(), y_count)]:
        calls[f"fused gradient, {name}"] = lambda p, f=family, y=y: loss_grad(
            part(p, y, offset=True), params, f, True)
        calls[f"fused gradient, {name}, unweighted"] = lambda p, f=family, y=y: loss_grad(
            part(p, y, weighted=False), params[:-1], f, False)
    for name, family, y in [("gamma", Gamma(), y_positive), ("probit", Binomial("probit"), y_binary)]:
        calls[f"blocked gradient, {name}"] = lambda p, f=family, y=y: loss_grad(
            part(p, y, offset=True), params * 0.1, f, True)
    calls["hessian, binomial"] = lambda p: loss_grad_hess(part(p, y_binary, offset=True),
                                                          params, Binomial(), True)
    calls["hessian, gamma"] = lambda p: loss_grad_hess(part(p, y_positive), params * 0.1,
                                                       Gamma(), True)
    calls["gram"] = lambda p: gram(part(p, y_count))
    calls["gram, unweighted"] = lambda p: gram(part(p, y_count, weighted=False))
    calls["linear predictor"] = lambda p: linear_predictor(p(X0), params, True)
    calls["validation"] = lambda p: summarize(part(p, y_binary), Binomial())
    calls["validation with labels"] = lambda p: summarize(part(p, y_class), Binomial(),
                                                          labels="moments")
    calls["validation with the gram"] = lambda p: summarize_gram(part(p, y_count), Gaussian())
    calls["validation with the gradient"] = lambda p: summarize_and_evaluate(
        part(p, y_binary), Binomial(), True, loss_grad, params, Binomial(), True)
    calls["multinomial gradient"] = lambda p: multinomial_loss_grad(
        part(p, y_class), multi_params, 3, True)
    calls["multinomial hessian"] = lambda p: multinomial_loss_grad_hess(
        part(p, y_class), multi_params, 3, True)
    calls["local solve"] = lambda p: fit_partition(  # 10 iterations: bits, not convergence
        part(p, y_binary), np.zeros(D + 1), Binomial(), L2(1e-3), True, 1e-10, 10)
    return calls


def _offsets(dtype):
    return range(0, 64, np.dtype(dtype).itemsize if dtype == np.float32 else 8)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_dense_kernel_gives_the_same_bits_at_every_buffer_offset(dtype):
    for name, call in _kernel_calls(dtype).items():
        digests = set()
        for offset in _offsets(dtype):
            with np.errstate(all="ignore"):
                digests.add(_bits(call(lambda a, o=offset: _at(o - o % a.itemsize, a))))
        assert len(digests) == 1, f"{name} depends on the buffer's offset ({dtype.__name__})"


@pytest.mark.parametrize("estimator", [
    daskglm.LogisticRegression(solver="lbfgs", tol=1e-10),
    daskglm.LogisticRegression(solver="newton", tol=1e-10),
    daskglm.LogisticRegression(solver="averaging", tol=1e-8),
    daskglm.LogisticRegression(solver="admm", penalty="l1", C=0.5, tol=1e-6, max_iter=30),
    daskglm.LinearRegression(solver="normal"),
    daskglm.PoissonRegressor(solver="lbfgs", tol=1e-10),
])
def test_fits_give_the_same_bits_at_every_buffer_offset(estimator, monkeypatch):
    from sklearn.base import clone

    monkeypatch.setattr(engine_module, "active_client", lambda: None)
    family = "poisson" if isinstance(estimator, daskglm.PoissonRegressor) else (
        "gaussian" if isinstance(estimator, daskglm.LinearRegression) else "binomial")
    X, y, w = make_data(family, n=3001, d=7, weights=True)
    fits = set()
    for offset in range(0, 64, 8):
        model = clone(estimator).fit(_at(offset, X), _at(offset, y), sample_weight=_at(offset, w))
        fits.add(_bits((model.coef_, model.intercept_)))
    assert len(fits) == 1


def test_a_usable_partition_is_not_copied():
    X = _at(16, np.ones((100, 5)))
    y, w = _at(8, np.ones(100)), _at(40, np.ones(100))
    X32 = _at(4, np.ones((100, 5), dtype=np.float32))
    for packed, given in zip(_as_partition(X, y, w), (X, y, w)):
        assert packed is given or np.shares_memory(packed, given)
    assert np.shares_memory(_as_partition(X32, y, None)[0], X32)
    # a buffer at an odd byte offset (as inside a network frame) is copied to an aligned one
    raw = np.zeros(8 * 100 + 1, dtype=np.uint8)
    odd = raw[1:].view(np.float64)
    assert not odd.flags.aligned and _usable(odd).flags.aligned
    assert not np.shares_memory(_usable(odd), odd)


def _packed_x_is_a_held_chunk(dask_worker):
    """On a worker: for each packed partition it holds, whether its ``X`` is a chunk held
    there too (the same object, no copy)."""
    held = [v for v in dask_worker.data.values() if isinstance(v, np.ndarray) and v.ndim == 2]
    parts = [v for v in dask_worker.data.values() if isinstance(v, tuple) and len(v) >= 3
             and isinstance(v[0], np.ndarray)]
    return [any(part[0] is chunk for chunk in held) for part in parts]


def test_an_engine_does_not_copy_a_persisted_dask_array():
    from distributed import Client, LocalCluster, wait

    from daskglm.engine import make_engine

    # one worker: no chunk can be moved by the scheduler, so any copy would be the engine's
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None, worker_dashboard_address=None) as cluster, \
            Client(cluster) as client:
        rng = da.random.default_rng(0)
        X = rng.random((4000, 6), chunks=(500, 6))
        y = (rng.random(4000, chunks=500) > 0.5).astype(float)
        X, y = client.persist([X, y])
        wait([X, y])
        with make_engine(X, y, family=Binomial(), client=client) as engine:
            wait(engine.parts)
            found = [flag for flags in client.run(_packed_x_is_a_held_chunk).values()
                     for flag in flags]
    assert found == [True] * 8
