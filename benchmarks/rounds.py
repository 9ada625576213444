"""Where the time of a daskglm fit goes: per-round overhead versus kernel time.

``python -m benchmarks rounds`` persists the data set of a suite on a local cluster and
measures, each as the median of several repeats:

* the phases of one ``LogisticRegression(solver="lbfgs")`` fit: total, time inside the
  engine's rounds (from the ledger), and the rest (driver work between rounds);
* the set-up a fit pays before its first solver round: reading the labels
  (``da.unique``) and building the engine (packing partitions plus the validation round);
* one round on the cluster: Dask's own floor (a no-op task per group, gathered, with
  nothing of daskglm in it), an empty round (no work per partition: the fixed cost of
  sending arguments and gathering), a gradient round, a Hessian round (Newton's: loss,
  gradient and Hessian) and a Gram round, all direct rounds
  (calls to the partition holders, :mod:`daskglm.engine.direct`), and the empty and
  gradient rounds again as scheduler tasks (and the fit with every round as tasks);
* the same kernels run on the workers but timed inside the task (pure compute time),
  with every worker busy and with one task alone;
* the same kernels on one partition in this process, single-threaded, broken into
  their numpy steps, next to one read of the partition (``X_p.sum()``).

The ideal round is ``ceil(partitions / workers)`` kernel times; what a round costs above
that is overhead.  The report ends with the targets of the kernels, as ratios measured in
the same run:

* a gradient round against one read of ``X`` per worker (``waves`` reads of a partition,
  alone; target 1.5); against ``X`` read by as many threads as workers at once, each its
  share (the least a round that reads ``X`` can take on this machine, where the workers
  share the memory bandwidth); and less the empty round (which costs what Dask's no-op
  round costs), the kernels' share of a round;
* a gradient round with the ledger's measurement (its Dask counters fetched afterwards)
  against the same round unmeasured (target 1.05: measuring costs under 5%);
* a Gram round against numpy's ``X_p.T @ X_p`` per worker (target 2), and a Hessian round
  against the same (target 2: the Gram's, for a product of the same size);
* the same kernels on one partition in this process, in float64 and float32.

This module uses daskglm's engine and kernels directly.
"""

from __future__ import annotations

import math
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.limits import read_in_shares
from benchmarks.timing import measure

__all__ = ["profile_rounds", "main"]


def _empty(part, n_params):
    """A kernel that does nothing: the gradient round's result shape, zero work."""
    from daskglm.compute.kernels import Stats

    return Stats(0.0, 0.0, np.zeros(n_params))


def _noop(part):
    """A task that returns nothing, placed where its partition lives."""
    return None


def _dask_noop_round(engine):
    """One Dask round trip with nothing of daskglm in it: a no-op task per group (on the
    worker holding the group's partitions), gathered; Dask's floor for any round."""
    client = engine.client
    futures = client.map(_noop, [engine.parts[group[0]] for group in engine.groups],
                         pure=False)
    client.gather(futures)


def _unmeasured_probe(engine):
    """A round's probe that names the round's tasks, as every round needs, and measures
    nothing: a round with it costs what a round would cost without the ledger."""
    from daskglm.engine.measure import _DaskProbe

    class Unmeasured(_DaskProbe):
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def finish(self, record, report):
            pass

    return lambda kind: Unmeasured(engine.meter, kind)


def _measurement_rows(engine, round_once, repeats, block=20):
    """Gradient rounds with the ledger's measurement and without, in interleaved blocks of
    ``block`` rounds (the fastest block of each kept: the least disturbed), and the
    seconds per round of fetching Dask's counters afterwards (median)."""
    seconds, fetch = {True: [], False: []}, []
    engine.collect_measurements()
    for index in range(2 * max(3, repeats // 2)):
        for measured in ((True, False) if index % 2 else (False, True)):
            if measured:
                engine.__dict__.pop("_probe", None)
            else:
                engine._probe = _unmeasured_probe(engine)
            start = time.perf_counter()
            for _ in range(block):
                round_once()
            seconds[measured].append((time.perf_counter() - start) / block)
            if measured:
                start = time.perf_counter()
                engine.collect_measurements()
                fetch.append((time.perf_counter() - start) / block)
    engine.__dict__.pop("_probe", None)
    return {
        "round: gradient, measured (fastest block)": min(seconds[True]),
        "round: gradient, not measured (fastest block)": min(seconds[False]),
        "round: fetching Dask's counters, per measured round": statistics.median(fetch),
    }


def _timed_call(part, function, *args):
    """Seconds ``function(part, *args)`` takes, measured inside the task."""
    start = time.perf_counter()
    function(part, *args)
    return time.perf_counter() - start


def _is_aligned(part):
    """Whether the partition's ``X`` is aligned (numpy hands only aligned arrays to BLAS)."""
    return bool(part[0].flags.aligned)


def _median_seconds(function, repeats):
    return measure(function, repeats)[0].median


def _cluster_rounds(engine, params, family, repeats):
    from daskglm.compute.kernels import gram, loss_grad, loss_grad_hess

    d = params.shape[0]
    rows = {}
    for _ in range(2):  # a task round that makes the holders, then one that waits for them
        engine.reduce(_empty, d, kind="profile")
    rows["round: empty (no work per partition)"] = _median_seconds(
        lambda: engine.reduce(_empty, d, kind="profile"), repeats)
    rows["round: Dask no-op (a task per group, gathered)"] = _median_seconds(
        lambda: _dask_noop_round(engine), repeats)
    rows["round: gradient (loss_grad)"] = _median_seconds(
        lambda: engine.reduce(loss_grad, params, family, False, kind="profile"), repeats)
    rows["round: hessian (loss_grad_hess)"] = _median_seconds(
        lambda: engine.reduce(loss_grad_hess, params, family, False, kind="profile"), repeats)
    rows["round: gram"] = _median_seconds(
        lambda: engine.reduce(gram, kind="profile"), repeats)
    # the same rounds as scheduler tasks (the engine's direct rounds off, then on again)
    engine.direct_rounds = False
    engine._drop_direct()
    rows["round: empty, as tasks (direct rounds off)"] = _median_seconds(
        lambda: engine.reduce(_empty, d, kind="profile"), repeats)
    rows["round: gradient, as tasks (direct rounds off)"] = _median_seconds(
        lambda: engine.reduce(loss_grad, params, family, False, kind="profile"), repeats)
    engine.direct_rounds = True
    for _ in range(2):  # a task round that makes the holders, then one that waits for them
        engine.reduce(_empty, d, kind="profile")
    rows.update(_measurement_rows(
        engine, lambda: engine.reduce(loss_grad, params, family, False, kind="profile"),
        repeats))
    rows["round: gradient, measured, with its counters fetched"] = (
        rows["round: gradient, measured (fastest block)"]
        + rows["round: fetching Dask's counters, per measured round"])
    inside = {"loss_grad": [], "gram": []}
    for _ in range(repeats):
        inside["loss_grad"].append(engine.map(_timed_call, loss_grad, params, family, False,
                                              kind="profile"))
        inside["gram"].append(engine.map(_timed_call, gram, kind="profile"))
    for name, runs in inside.items():
        per_partition = statistics.median(t for run in runs for t in run)
        rows[f"on workers: {name}, one partition, all busy (timed in task)"] = per_partition
    first = engine.parts[0]  # one task at a time: the kernel without contention
    for name, kernel, args in (("loss_grad", loss_grad, (params, family, False)),
                               ("gram", gram, ())):
        alone = [engine.client.submit(_timed_call, first, kernel, *args, pure=False).result()
                 for _ in range(repeats)]
        rows[f"on workers: {name}, one partition, alone (timed in task)"] = statistics.median(alone)
    return rows


#: ``(name, numerator row, denominator row, per-worker waves?, target)`` of the report's ratios.
TARGETS = (
    ("gradient round / one read of X per worker", "round: gradient (loss_grad)",
     "local: X_p.sum() (one read of the partition)", True, 1.5),
    ("gradient round / X read by every worker at once", "round: gradient (loss_grad)",
     "local: X read by every worker at once (a thread each, its share)", False, 1.5),
    ("gradient round less the empty round / one read of X per worker",
     "round: gradient less the empty round",
     "local: X_p.sum() (one read of the partition)", True, 1.5),
    ("gram round / numpy X.T@X per worker", "round: gram", "local:   X_p.T @ X_p", True, 2.0),
    ("hessian round / numpy X.T@X per worker", "round: hessian (loss_grad_hess)",
     "local:   X_p.T @ X_p", True, 2.0),
    ("measured gradient round (counters fetched) / unmeasured",
     "round: gradient, measured, with its counters fetched",
     "round: gradient, not measured (fastest block)", False, 1.05),
    ("local loss_grad / one read", "local: loss_grad(partition)",
     "local: X_p.sum() (one read of the partition)", False, 1.5),
    ("local gram / numpy X.T@X", "local: gram(partition)", "local:   X_p.T @ X_p", False, 2.0),
    ("local loss_grad_hess / numpy X.T@X", "local: loss_grad_hess(partition)",
     "local:   X_p.T @ X_p", False, 2.0),
    ("local float32 loss_grad / one float32 read", "local f32: loss_grad(partition)",
     "local f32: X_p.sum() (one read of the partition)", False, 1.5),
    ("local float32 gram / numpy float32 X.T@X", "local f32: gram(partition)",
     "local f32:   X_p.T @ X_p", False, 2.0),
)


def target_ratios(rows, waves):
    """``{name: (ratio, target)}`` of :data:`TARGETS` from the rows of one run."""
    ratios = {}
    for name, numerator, denominator, per_worker, target in TARGETS:
        if numerator in rows and denominator in rows:
            scale = waves if per_worker else 1
            ratios[name] = (rows[numerator] / (scale * rows[denominator]), target)
    return ratios


def _local_float32(part, params, family, repeats):
    """The kernels on the partition's float32 copy: one read, loss_grad, gram, X.T @ X."""
    from daskglm.compute.kernels import gram, loss_grad

    X = part[0].astype(np.float32)
    part32 = (X, part[1], None)
    steps = {
        "local f32: X_p.sum() (one read of the partition)": lambda: X.sum(),
        "local f32: loss_grad(partition)": lambda: loss_grad(part32, params, family, False),
        "local f32: gram(partition)": lambda: gram(part32),
        "local f32:   X_p.T @ X_p": lambda: X.T @ X,
    }
    with threadpool_limits(1):
        return {name: _median_seconds(step, repeats) for name, step in steps.items()}


def _local_kernels(part, params, family, repeats):
    from daskglm.compute.kernels import gram, loss_grad, loss_grad_hess
    from daskglm.compute.summaries import summarize

    X, y, _ = part
    eta = X @ params
    _, residual = family.loss_and_dloss(y, eta)
    steps = {
        "local: X_p.sum() (one read of the partition)": lambda: X.sum(),
        "local: loss_grad(partition)": lambda: loss_grad(part, params, family, False),
        "local:   X_p @ coef": lambda: X @ params,
        "local:   family.loss_and_dloss(y, eta)": lambda: family.loss_and_dloss(y, eta),
        "local:   X_p.T @ r": lambda: X.T @ residual,
        "local: gram(partition)": lambda: gram(part),
        "local: loss_grad_hess(partition)": lambda: loss_grad_hess(part, params, family, False),
        "local:   X_p.T @ X_p": lambda: X.T @ X,
        "local: summarize(partition) (the validate kernel)": lambda: summarize(part, family),
    }
    with threadpool_limits(1):
        return {name: _median_seconds(step, repeats) for name, step in steps.items()}


def _fit_rows(label, model, X, y, repeats):
    """Total time of a fit and its split between engine rounds and the rest (medians)."""
    totals, in_rounds, by_kind = [], [], {}
    for _ in range(repeats):
        start = time.perf_counter()
        model.fit(X, y)
        totals.append(time.perf_counter() - start)
        in_rounds.append(model.comm_.seconds)
        for record in model.comm_.records:
            by_kind.setdefault(record.kind, []).append(record.seconds)
    rows = {f"fit: {label}, total": statistics.median(totals),
            "fit:   inside engine rounds (ledger)": statistics.median(in_rounds)}
    for kind, seconds in by_kind.items():
        count = len(seconds) // repeats
        rows[f"fit:     {kind} rounds: {count} x median"] = statistics.median(seconds)
    rows["fit:   outside rounds (driver, set-up)"] = statistics.median(
        total - inside for total, inside in zip(totals, in_rounds, strict=True))
    return rows, model.comm_.rounds, int(np.max(model.n_iter_))


def _fit_phases(data, tol, repeats):
    import dask
    import dask.array as da

    import daskglm
    from daskglm.engine import make_engine
    from daskglm.model.families import Binomial

    y = data.target("binary")
    logistic = daskglm.LogisticRegression(C=1.0, solver="lbfgs", fit_intercept=False, tol=tol,
                                          max_iter=10_000)
    rows, rounds, n_iter = _fit_rows("LogisticRegression(lbfgs)", logistic, data.X, y, repeats)
    with dask.config.set({"daskglm.direct-rounds": False}):
        tasks_rows, _, _ = _fit_rows("LogisticRegression(lbfgs)", logistic, data.X, y, repeats)
    rows["fit: LogisticRegression(lbfgs), total, every round as tasks"] = tasks_rows[
        "fit: LogisticRegression(lbfgs), total"]
    ols_rows, _, _ = _fit_rows("LinearRegression(normal)", daskglm.LinearRegression(
        solver="normal"), data.X, data.target("continuous"), repeats)
    rows.update({name.replace("fit:   ", "fit (ols):   "): value
                 for name, value in ols_rows.items()})
    rows["set-up: da.unique(y).compute()"] = _median_seconds(
        lambda: np.unique(da.unique(y).compute()), repeats)
    labels = (y == 1.0).astype(np.float64)

    def build():
        make_engine(data.X, labels, family=Binomial()).close()

    rows["set-up: make_engine (pack partitions + validate round)"] = _median_seconds(build, 3)
    return rows, {"tol": tol, "rounds": rounds, "n_iter": n_iter}


def profile_rounds(data, client, repeats=10, tol=1e-6):
    """Measure the phases of a fit, the cost of rounds and of their kernels.

    Parameters
    ----------
    data : benchmarks.data.Data
        Persisted on ``client``'s workers.
    client : distributed.Client
    repeats : int
        Repeats per measurement (the median is kept).
    tol : float
        Tolerance of the profiled fit.

    Returns
    -------
    dict
        ``rows`` (description -> seconds) and ``info`` (partition and worker counts, the
        ideal round and the profiled fit's rounds and iterations).
    """
    from daskglm.engine import make_engine
    from daskglm.model.families import Binomial

    family = Binomial()
    params = np.random.default_rng(0).standard_normal(data.spec.n_features) * 0.1
    rows, info = _fit_phases(data, tol, max(3, repeats // 3))
    labels = (data.target("binary") == 1.0).astype(np.float64)
    with make_engine(data.X, labels, family=family) as engine:
        rows.update(_cluster_rounds(engine, params, family, repeats))
        n_partitions = engine.n_partitions
        aligned = engine.map(_is_aligned, kind="profile")
    first = math.ceil(data.spec.n_samples / data.spec.n_partitions)
    part = (data.X_local[:first], data.target_local("binary")[:first], None)
    rows.update(_local_kernels(part, params, family, repeats))
    rows.update(_local_float32(part, params, family, repeats))
    workers = len(client.nthreads())
    waves = math.ceil(n_partitions / workers)
    rows["local: X read by every worker at once (a thread each, its share)"] = _median_seconds(
        read_in_shares(data.X_local, workers), repeats)
    info.update(partitions=n_partitions, workers=workers, partitions_per_worker=waves,
                misaligned_partitions=len(aligned) - sum(aligned))
    rows["ideal gradient round: waves x local loss_grad"] = waves * rows["local: loss_grad(partition)"]
    rows["ideal gram round: waves x local gram"] = waves * rows["local: gram(partition)"]
    rows["round: gradient less the empty round"] = (
        rows["round: gradient (loss_grad)"] - rows["round: empty (no work per partition)"])
    info["targets"] = {name: {"ratio": ratio, "target": target}
                       for name, (ratio, target) in target_ratios(rows, waves).items()}
    return {"rows": rows, "info": info}


def _markdown(result, spec):
    info = result["info"]
    lines = [
        f"Data {spec.label}; {info['workers']} workers, {info['partitions']} partitions "
        f"({info['partitions_per_worker']} per worker, {info['misaligned_partitions']} "
        f"misaligned); profiled fit: tol={info['tol']:g}, {info['rounds']} rounds, "
        f"{info['n_iter']} iterations.",
        "",
        "| measurement | seconds |",
        "|---|---|",
    ]
    lines += [f"| {name} | {seconds:.4f} |" for name, seconds in result["rows"].items()]
    lines += ["", "| ratio (same run) | measured | target | met |", "|---|---|---|---|"]
    lines += [f"| {name} | {row['ratio']:.2f} | {row['target']:g} | "
              f"{'yes' if row['ratio'] <= row['target'] else 'no'} |"
              for name, row in info.get("targets", {}).items()]
    return "\n".join(lines) + "\n"


def main(args):
    """Run the profile on the data set of ``args.suite`` and print a table; returns 0."""
    import pathlib

    from benchmarks.cases import get_suite
    from benchmarks.cluster import local_cluster
    from benchmarks.data import make_data
    from benchmarks.environment import library_versions, machine_info
    from benchmarks.report import write_json

    suite = get_suite(args.suite)
    spec = suite.cases[0].data
    with local_cluster(suite.cluster) as client:
        data = make_data(spec, client)
        result = profile_rounds(data, client, repeats=args.repeats)
    result.update(data=spec.to_dict(), machine=machine_info(), versions=library_versions())
    path = write_json(result, pathlib.Path(__file__).resolve().parent / "results" / "rounds.json")
    print(_markdown(result, spec))
    print(f"Results written to {path}")
    return 0
