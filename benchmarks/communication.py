"""Communication-efficient SGD on a LocalCluster: objective gap against bytes and seconds.

One ``distributed.LocalCluster`` of 2 single-threaded worker processes, dense L2-logistic
data (``--rows`` x ``--features``, entries N(0, 0.01), ``alpha = 0.01``, one partition per
worker), scikit-learn's solution of the same objective as the reference.  Synchronous
mini-batch SGD (batches of ``--batch-size``, ``eta0 = 4``, ``invscaling`` with power 0.5)
runs ``--epochs`` epochs uncompressed (1.5 times as many with a codec)

1. uncompressed, then with each codec (``stochastic``, ``qsgd`` 4-bit with buckets of 64
   entries, ``sign`` and ``topk`` 1% with error feedback): per epoch the true objective gap, the bytes Dask
   measured for the gradient rounds (all of them, and those the workers wrote back), and
   the seconds;
2. stragglers, on data with many more rows than features (20,000 x 100, entries N(0, 1),
   batches of 2,000, ``eta0 = 1``), in two settings, each on an engine of its own: one
   worker slowed ``--slowdown`` times (``daskglm.testing.slow_worker`` adds
   ``(slowdown - 1)`` times the median plain round, measured first, to each of its
   tasks), and one worker slowed by ``--delay`` seconds per task (the issue's setting).
   In each, ``--epochs`` epochs of plain synchronous SGD and of deadline rounds that take
   the partitions holding half the weight (``min_fraction=0.5``, with a deadline halfway
   between an undisturbed deadline round and a slowed task as a backstop).  The first deadline round
   drops the slow worker's partition and copies it to the fast worker; the later ones
   run a backup task there and take whichever copy finishes first
   (:meth:`daskglm.engine.Engine.reduce_by_deadline`), so they have every partition
   without waiting for the slow worker.

The codecs' target gap is the one uncompressed SGD reaches in its last epoch; the
stragglers', 1.1 times the one plain SGD reaches in its last epoch (the issue's
"comparable accuracy").  Reported: the cut in measured returned bytes per gradient round,
the epochs and seconds to the target gap and their ratios to uncompressed (or plain,
slowed) SGD; for the stragglers also the rounds that dropped a partition, the backup
tasks per round, the seconds of the whole fit (the engine's one ``weights`` round
included) and the final gap, against plain SGD's.  The roadmap's targets (issue 15):
``qsgd`` 4-bit and ``sign`` cut returned bytes >= 8x at d = 10,000 with <= 1.5x the
epochs; a deadline fit with one of two workers slowed by 0.5 s per task takes <= 0.4x
the time of the slowed plain fit, at comparable accuracy.

``python -m benchmarks communication`` (about 3 minutes on 2 cores; the defaults are the
issue's d = 10,000 and 0.5 s); ``--output PATH`` writes the rows as JSON.
"""

from __future__ import annotations

import json
import statistics
import time
import warnings

import numpy as np

__all__ = ["main", "run"]

#: The straggler runs' data: many more rows than features, two partitions.
STRAGGLER_ROWS, STRAGGLER_FEATURES, STRAGGLER_BATCH = 20_000, 100, 2000

CODECS = {
    "none": None,
    "stochastic": "stochastic",
    "qsgd-4bit": {"name": "qsgd", "bits": 4, "bucket": 64},
    "sign": "sign",
    "topk-1%": {"name": "topk", "k": 0.01},
}


def _data(rows, features, seed=0, scale=0.1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, features)) * scale
    coef = rng.standard_normal(features) * (3.0 / (scale * np.sqrt(features)))
    y = (rng.uniform(size=rows) < 1 / (1 + np.exp(-(X @ coef)))).astype(float)
    return X, y


def _objective(X, y, params, alpha):
    eta = X @ params[:-1] + params[-1]
    coef = params[:-1]
    return float(np.mean(np.logaddexp(0, eta) - y * eta) + 0.5 * alpha * coef @ coef)


def _reference(X, y, alpha):
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0 / (alpha * len(y)), tol=1e-10, max_iter=10_000)
    model.fit(X, y)
    return _objective(X, y, np.append(model.coef_.ravel(), model.intercept_[0]), alpha)


def _fit(engine, problem, options, epochs, kinds):
    """Run SGD; per epoch ``(seconds, params)``, and the run's gradient-round records."""
    from daskglm.solvers.sgd import SGD

    solver = SGD(tol=None, max_iter=epochs, **options)
    first = len(engine.ledger.records)
    snapshots = []
    start = time.perf_counter()
    solver.solve(problem, engine, np.zeros(problem.n_features + 1),
                 callback=lambda epoch, state: snapshots.append(
                     (time.perf_counter() - start, state.params.copy())))
    engine.collect_measurements()
    records = [r for r in engine.ledger.records[first:] if r.kind in kinds]
    return snapshots, records


def _row(name, X, y, alpha, best, snapshots, records, steps):
    gaps = [_objective(X, y, params, alpha) - best for _, params in snapshots]
    return {
        "run": name,
        "gaps": gaps,
        "seconds": [seconds for seconds, _ in snapshots],
        "rounds": len(records),
        "bytes_measured_per_round": statistics.mean(r.bytes_measured for r in records),
        "bytes_returned_measured_per_round": statistics.mean(r.bytes_transferred
                                                             for r in records),
        "bytes_returned_model_per_round": statistics.mean(r.bytes_returned for r in records),
        "round_seconds_median": statistics.median(r.seconds for r in records),
        "dropped_rounds": sum(1 for r in records if r.dropped),
        "steps_per_epoch": steps,
    }


def _first_reaching(row, target):
    for epoch, (gap, seconds) in enumerate(zip(row["gaps"], row["seconds"]), start=1):
        if gap <= target:
            return epoch, seconds
    return None, None


def run(rows=2000, features=10_000, epochs=6, batch_size=200, slowdown=5.0, eta0=4.0,
        alpha=0.01, delay=0.5):
    """Run the benchmark; returns ``{"rows": [...], "stragglers": [...], ...}``."""
    from distributed import Client, LocalCluster

    from daskglm.accounting.kinds import Kind
    from daskglm.engine import make_engine
    from daskglm.model.families import Binomial
    from daskglm.model.penalties import L2
    from daskglm.model.problem import Problem

    X, y = _data(rows, features)
    best = _reference(X, y, alpha)
    problem = Problem(Binomial(), L2(alpha), True, features)
    base = {"batch_size": batch_size, "eta0": eta0, "learning_rate": "invscaling",
            "power_t": 0.5, "random_state": 0, "sync_every": None}  # synchronous rounds
    steps = -(-rows // batch_size)
    results = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client, \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with make_engine(X, y, family=Binomial(), client=client, n_partitions=2) as engine:
            for name, codec in CODECS.items():
                options = dict(base) if codec is None else {**base, "compression": codec}
                kinds = (Kind.SGD_BATCH,) if codec is None else (Kind.COMPRESSED_BATCH,)
                # a codec has 1.5 times the epochs to reach the uncompressed run's gap
                runs = epochs if codec is None else -(-3 * epochs // 2)
                snapshots, records = _fit(engine, problem, options, runs, kinds)
                results.append(_row(name, X, y, alpha, best, snapshots, records, steps))
        # stragglers: data with many more rows than features
        straggler = _Stragglers(client, epochs, base, alpha)
        plain_round, deadline_round = straggler.round_seconds()
        stragglers = [
            *straggler.runs(f"1 worker {slowdown:g}x slower", (slowdown - 1.0) * plain_round,
                            deadline_round),
            *straggler.runs(f"1 worker {delay:g} s slower per task", delay, deadline_round),
        ]
    target = results[0]["gaps"][-1]
    for row in results:
        row["epochs_to_target"], row["seconds_to_target"] = _first_reaching(row, target)
    return {"rows": results, "target_gap": target, "stragglers": stragglers,
            "plain_round_seconds": plain_round, "deadline_round_seconds": deadline_round,
            "n_rows": rows, "n_features": features,
            "batch_size": batch_size}


class _Stragglers:
    """The straggler runs: plain and deadline SGD with one of two workers slowed."""

    def __init__(self, client, epochs, base, alpha):
        from daskglm.model.families import Binomial
        from daskglm.model.penalties import L2
        from daskglm.model.problem import Problem

        self.client, self.epochs, self.alpha = client, epochs, alpha
        self.X, self.y = _data(STRAGGLER_ROWS, STRAGGLER_FEATURES, scale=1.0)
        self.best = _reference(self.X, self.y, alpha)
        self.problem = Problem(Binomial(), L2(alpha), True, STRAGGLER_FEATURES)
        self.options = {**base, "batch_size": STRAGGLER_BATCH, "eta0": 1.0}
        self.steps = -(-STRAGGLER_ROWS // STRAGGLER_BATCH)

    def _engine(self):
        from daskglm.engine import make_engine
        from daskglm.model.families import Binomial

        return make_engine(self.X, self.y, family=Binomial(), client=self.client,
                           n_partitions=2)

    def round_seconds(self):
        """The median seconds of an undisturbed plain round and of an undisturbed
        deadline round (a task per partition, waiting for all), one epoch each."""
        from daskglm.accounting.kinds import Kind

        with self._engine() as engine:
            _, plain = _fit(engine, self.problem, self.options, 1, (Kind.SGD_BATCH,))
            _, late = _fit(engine, self.problem, {**self.options, "min_fraction": 1.0}, 1,
                           (Kind.DEADLINE_BATCH,))
        return (statistics.median(r.seconds for r in plain),
                statistics.median(r.seconds for r in late))

    def runs(self, setting, delay, deadline_round):
        """Plain and deadline SGD with one worker's tasks ``delay`` seconds longer, on a
        fresh engine (no backups yet): their two rows.  The deadline rounds' backstop is
        halfway between an undisturbed deadline round and a slowed task."""
        from daskglm.accounting.kinds import Kind
        from daskglm.testing import slow_worker

        deadline = {**self.options, "min_fraction": 0.5, "deadline": deadline_round + delay / 2}
        rows = []
        with self._engine() as engine:
            slow = sorted(self.client.nthreads())[1]
            with slow_worker(self.client, slow, delay):
                for name, options, kind in (("plain", self.options, Kind.SGD_BATCH),
                                            ("deadline", deadline, Kind.DEADLINE_BATCH)):
                    snapshots, records = _fit(engine, self.problem, options, self.epochs,
                                              (kind,))
                    row = _row(name, self.X, self.y, self.alpha, self.best, snapshots,
                               records, self.steps)
                    row.update(setting=setting, slow_task_seconds=delay, fit_seconds=row["seconds"][-1],
                               backups_per_round=statistics.mean(
                                   len(getattr(r, "backups", ()) or ()) for r in records),
                               bytes_replicated=sum(getattr(r, "bytes_replicated", 0)
                                                    for r in records))
                    rows.append(row)
        target = 1.1 * rows[0]["gaps"][-1]
        for row in rows:
            row["target_gap"] = target
            row["epochs_to_target"], row["seconds_to_target"] = _first_reaching(row, target)
        return rows


def _ratio(a, b):
    return None if a is None or b is None or not b else a / b


def table(result):
    """The markdown tables of :func:`run`'s result: codecs, then stragglers."""
    rows = result["rows"]
    none = rows[0]
    lines = [
        f"Codecs: target gap {result['target_gap']:.3g} (uncompressed SGD's last epoch); "
        f"{result['n_rows']} x {result['n_features']}, batch {result['batch_size']}.",
        "",
        "| run | measured B/round | measured B/round back | cut (back) | epochs to gap "
        "| epochs vs base | s to gap | s vs base |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        cut = _ratio(none["bytes_returned_measured_per_round"],
                     row["bytes_returned_measured_per_round"])
        cells = [
            row["run"], f"{row['bytes_measured_per_round']:,.0f}",
            f"{row['bytes_returned_measured_per_round']:,.0f}",
            "-" if cut is None else f"{cut:.1f}x",
            str(row["epochs_to_target"] or "not reached"),
            _fmt(_ratio(row["epochs_to_target"], none["epochs_to_target"])),
            "-" if row["seconds_to_target"] is None else f"{row['seconds_to_target']:.2f}",
            _fmt(_ratio(row["seconds_to_target"], none["seconds_to_target"])),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Stragglers: {STRAGGLER_ROWS} x {STRAGGLER_FEATURES}, batch {STRAGGLER_BATCH}, "
        f"{result['stragglers'][0]['rounds']} rounds per fit; undisturbed, a plain round "
        f"takes {result['plain_round_seconds']:.3f} s, a deadline round (tasks) "
        f"{result['deadline_round_seconds']:.3f} s; target gap 1.1 x plain SGD's last.",
        "",
        "| slow worker | run | rounds dropping | backups/round | replicated B | final gap "
        "| gap vs plain | epochs to gap | s to gap | fit s | fit s vs plain |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    stragglers = result["stragglers"]
    for plain, late in zip(stragglers[::2], stragglers[1::2]):
        for row in (plain, late):
            cells = [
                f"{row['setting']} (+{row['slow_task_seconds']:.3f} s)", row["run"],
                str(row["dropped_rounds"]), f"{row['backups_per_round']:.2f}",
                f"{row['bytes_replicated']:,}", f"{row['gaps'][-1]:.3g}",
                _fmt(_ratio(row["gaps"][-1], plain["gaps"][-1])),
                str(row["epochs_to_target"] or "not reached"),
                "-" if row["seconds_to_target"] is None else f"{row['seconds_to_target']:.2f}",
                f"{row['fit_seconds']:.2f}", _fmt(_ratio(row["fit_seconds"],
                                                        plain["fit_seconds"])),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _fmt(value):
    return "-" if value is None else f"{value:.2f}"


def main(args):
    result = run(args.rows, args.features, args.epochs, args.batch_size, args.slowdown,
                 delay=args.delay)
    print(table(result))
    if args.output:
        with open(args.output, "w") as handle:
            json.dump(result, handle, indent=1)
    return 0
