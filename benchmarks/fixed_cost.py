"""A round's fixed cost: the seconds and measured bytes of rounds that compute almost nothing.

On a ``LocalCluster`` of ``--workers`` one-thread worker processes holding 2 partitions a
worker of 100 rows x ``--features`` columns, each kind of round the engine runs is timed
``--repeats`` times with a kernel that costs microseconds, and its bytes are measured
from Dask's counters (the engine's own ledger):

* ``task``: a gradient round through the scheduler (direct rounds switched off);
* ``direct``: the same round straight to the partition holders;
* ``stateful``: a round with partition state: the states in tasks (gossip's local
  steps), and kept by the partition holders, whose rounds go straight to the workers
  (compressed SGD's and compressed gradient descent's senders);
* ``push`` / ``pull``: one call from the driver to a parameter holder (``solver="async"``);
* ``gossip exchange``: every partition's state mixed with its neighbours' (a ring).

The fixed cost is what a solver amortises by taking more steps per round
(:mod:`daskglm.solvers.round_sizing`), and what compression cannot remove: at ``d``
coefficients a compressed gradient saves about ``8 d (1 - 1 / ratio)`` bytes per partition,
which pays once it is well above the stateful round's fixed bytes.

With ``--by-d``, it also measures one epoch of synchronous SGD (batch 100, 1,000 rows,
2 partitions) at several ``d``, uncompressed and with 4-bit QSGD (one norm, the default,
and a norm per 64 entries) and sign compression:
the measured bytes per round both ways, their ratio, and the seconds per round (the
table "From which d compression pays" in the communication tutorial).

``python -m benchmarks fixed-cost [--workers 2] [--features 10] [--repeats 20] [--by-d]``
"""

from __future__ import annotations

import statistics
import time
import warnings

__all__ = ["add_parser", "main"]


def _keep(part, state):
    return 0.0, state


def _median_rounds(engine, run, repeats):
    """Median seconds and measured bytes of ``repeats`` rounds of ``run()``."""
    first = len(engine.ledger.records)
    for _ in range(repeats):
        run()
    engine.collect_measurements()
    records = engine.ledger.records[first:]
    return (statistics.median(r.seconds for r in records),
            int(statistics.median(r.bytes_measured or 0 for r in records)),
            records[-1].tasks)


def _holder_calls(holder, params, repeats):
    pushes, pulls = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        holder.push(params, 0)
        pushes.append(time.perf_counter() - start)
        start = time.perf_counter()
        holder.pull()
        pulls.append(time.perf_counter() - start)
    return statistics.median(pushes), statistics.median(pulls)


#: Widths of ``--by-d``.
WIDTHS = (300, 1000, 3000, 10_000, 30_000)


def compression_by_width(client, widths=WIDTHS):
    """Rows ``(d, codec, median measured bytes per round, ratio to none, median seconds)``."""
    import numpy as np

    from daskglm.engine import make_engine
    from daskglm.model.families import Binomial
    from daskglm.model.penalties import L2
    from daskglm.model.problem import Problem
    from daskglm.solvers.sgd import SGD

    codecs = {"none": None, "qsgd (4 bits, one norm)": "qsgd",
              "qsgd (4 bits, a norm per 64)": {"name": "qsgd", "bits": 4, "bucket": 64},
              "sign": "sign"}
    rows = []
    for d in widths:
        rng = np.random.default_rng(0)
        X = 0.1 * rng.normal(size=(1000, d))
        y = (rng.uniform(size=1000) < 0.5).astype(float)
        problem = Problem(Binomial(), L2(0.01), True, d)
        with make_engine(X, y, family=Binomial(), client=client, n_partitions=2) as engine:
            base = None
            for name, codec in codecs.items():
                first = len(engine.ledger.records)
                SGD(tol=None, max_iter=1, batch_size=100, sync_every=None, compression=codec,
                    random_state=0).solve(problem, engine, np.zeros(d + 1))
                engine.collect_measurements()
                steps = [r for r in engine.ledger.records[first:]
                         if r.kind in ("sgd_batch", "compressed_batch")][2:]  # warm
                measured = statistics.median(r.bytes_measured for r in steps)
                base = base or measured
                rows.append((d, name, int(measured), base / measured,
                             statistics.median(r.seconds for r in steps)))
    return rows


def main(args):
    import dask
    import numpy as np

    from benchmarks.cluster import ClusterSpec, local_cluster
    from benchmarks.environment import load_text
    from daskglm.accounting.kinds import Kind
    from daskglm.compute.gossip import metropolis_weights, mix_with_neighbours, neighbours_of
    from daskglm.compute.kernels import loss_grad
    from daskglm.engine import make_engine
    from daskglm.engine.neighbours import exchange_with_neighbours
    from daskglm.model.families import Binomial

    d = args.features
    n_parts = 2 * args.workers
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100 * n_parts, d))
    y = (rng.uniform(size=X.shape[0]) < 0.5).astype(float)
    params = np.zeros(d + 1)
    family = Binomial()
    rows = []
    with local_cluster(ClusterSpec(args.workers, 1)) as client, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for route, direct in (("task", False), ("direct", True)):
            with dask.config.set({"daskglm.direct-rounds": direct}), make_engine(
                    X, y, family=family, client=client, n_partitions=n_parts) as engine:
                engine.reduce(loss_grad, params, family, True, kind=Kind.GRADIENT)  # warm up
                rows.append((route, *_median_rounds(
                    engine, lambda: engine.reduce(loss_grad, params, family, True,
                                                  kind=Kind.GRADIENT), args.repeats)))
        with make_engine(X, y, family=family, client=client, n_partitions=n_parts) as engine:
            engine.put_state("bench", [params.copy() for _ in range(n_parts)])
            rows.append(("stateful, states in tasks", *_median_rounds(
                engine, lambda: engine.reduce_stateful(_keep, "bench", kind=Kind.GOSSIP),
                args.repeats)))
            engine.keep_states_in_holders("kept")
            engine.put_state("kept", [params.copy() for _ in range(n_parts)])
            rows.append(("stateful, states kept by the holders", *_median_rounds(
                engine, lambda: engine.reduce_stateful(_keep, "kept", kind=Kind.GOSSIP),
                args.repeats)))
            links = neighbours_of(n_parts, "ring", 2, 0)
            weights = metropolis_weights(links)
            mixing = [(i, weights[i]) for i in range(n_parts)]
            from daskglm.compute.gossip import GossipNode
            engine.put_state("nodes", [GossipNode(i, params.copy(), None)
                                       for i in range(n_parts)])
            rows.append(("gossip exchange", *_median_rounds(
                engine, lambda: exchange_with_neighbours(
                    engine, "nodes", mix_with_neighbours, links, mixing,
                    kind=Kind.GOSSIP_EXCHANGE, message_bytes=8 * (d + 1)),
                args.repeats)))
            holder = engine.parameter_holder(params.copy())
            push, pull = _holder_calls(holder, np.zeros(d + 1), args.repeats)
            engine.close_holder(holder)
        print(f"Fixed cost of a round: {args.workers} one-thread workers, {n_parts} partitions "
              f"of 100 x {d}; median of {args.repeats}; load {load_text()}\n")
        print("| round | seconds | measured bytes | tasks or calls |")
        print("|---|---|---|---|")
        for name, seconds, measured, tasks in rows:
            print(f"| {name} | {1e3 * seconds:.2f} ms | {measured:,} | {tasks} |")
        print(f"| push (one call to the holder) | {1e3 * push:.2f} ms | - | 1 |")
        print(f"| pull (one call to the holder) | {1e3 * pull:.2f} ms | - | 1 |")
        if args.by_d:
            print("\nSynchronous SGD, one epoch of 1,000 rows in batches of 100, 2 partitions:\n")
            print("| d | codec | measured bytes / round | vs none | seconds / round |")
            print("|---|---|---|---|---|")
            for d, name, measured, ratio, seconds in compression_by_width(client):
                print(f"| {d:,} | {name} | {measured:,} | {ratio:.1f}x | "
                      f"{1e3 * seconds:.1f} ms |")
    return 0


def add_parser(commands):
    """The ``fixed-cost`` sub-command."""
    parser = commands.add_parser("fixed-cost", help="seconds and bytes of near-empty rounds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--by-d", action="store_true",
                        help="also compressed SGD's bytes per round at several d")
    parser.set_defaults(handler=main)
    return parser

