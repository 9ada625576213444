"""Command line: ``python -m benchmarks run --suite quick [--output PATH]``.

Sub-commands
------------
run
    Run a suite, write its JSON results and print the markdown table.
report
    Print the markdown table of a results file.
list
    List the suites, their cases and the registered methods.
rounds
    Break the time of daskglm's distributed rounds down (see :mod:`benchmarks.rounds`).
cold-start
    First fit against second fit on a fresh cluster (see :mod:`benchmarks.cold_start`).
communication
    Compressed SGD and straggler deadlines: gap vs bytes and seconds
    (see :mod:`benchmarks.communication`).
scaling
    The same fits on 1, 2, ..., N workers (see :mod:`benchmarks.strong_scaling`).
cv
    RidgeCV's one pass against a grid search of Ridge fits, and the multinomial model
    against one-vs-rest (see :mod:`benchmarks.cv`).
gpu
    CuPy chunks against numpy chunks and an in-memory GPU loop (see :mod:`benchmarks.gpu`).
passes
    Fits with the validation round fused into the first evaluation against the same fits
    with the rounds apart, and ``solver="auto"``'s pick (see :mod:`benchmarks.passes`).
newton
    Newton's fits with and without the fused Hessian and the last step's gradient round,
    against L-BFGS (see :mod:`benchmarks.newton`).
parity
    Rounds, bytes and seconds of multi-output, ``positive=True`` and one-vs-rest SGD (see
    :mod:`benchmarks.parity`).
async
    Time and bytes to a gap of synchronous, local, stale-synchronous, asynchronous and
    gossip SGD, with and without a straggler (see :mod:`benchmarks.asynchronous`).
fused-kernel
    The fused gradient loops on one partition against one read of it, single-threaded
    (see :mod:`benchmarks.fused_kernel`).
defaults
    Every method at its defaults against L-BFGS on a two-worker cluster: seconds, rounds,
    accuracy (see :mod:`benchmarks.defaults`).
fixed-cost
    Seconds and measured bytes of rounds that compute almost nothing, per kind of round
    (see :mod:`benchmarks.fixed_cost`).
bigd
    L-BFGS with the whole vector against L-BFGS on column shards (see :mod:`benchmarks.bigd`).
proximal-rounds
    Rounds of proximal gradient and proximal Newton on L1 GLMs, the source of the cost
    model's proximal rounds per decade (see :mod:`benchmarks.proximal_rounds`).
network
    Every method on an emulated network (10 Gbit/s, 1 Gbit/s, 100 Mbit/s): seconds to the
    optimum, rounds, measured bytes, and the cost model's predictions (see
    :mod:`benchmarks.network`).
network-rounds
    A gradient round's seconds on 2, 4, 8 and 16 worker processes of an emulated network
    against the cost model's (see :mod:`benchmarks.network`).
deadline-guard
    Deadline fits against waiting ones, with and without a straggler (see
    :mod:`benchmarks.deadline_guard`).
auto-cases
    ``solver="auto"`` against every batch solver on nine problems, in this process or on
    a cluster (see :mod:`benchmarks.auto_cases`).
sparse-sgd
    SGD on hashed sparse rows against L-BFGS (see :mod:`benchmarks.sparse_sgd`).
sharded-cost
    The cost model of L-BFGS on column shards against the rounds it measured (see
    :mod:`benchmarks.sharded_cost`).
click-through
    Hashed click-through rows: daskglm in memory and from zarr against Vowpal Wabbit and
    scikit-learn, seconds and held-out log loss (see :mod:`benchmarks.click_through`).
prediction
    ``predict_proba`` on hashed click-through rows in memory and streamed from zarr,
    rows per second against memory bandwidth and the store's read speed (see
    :mod:`benchmarks.prediction`).
grid
    :func:`daskglm.fit_grid` on a grid of ``C`` and ``l1_ratio`` against one ``fit``
    per setting: seconds, rounds and passes over ``X`` per model (see
    :mod:`benchmarks.grid`).
docs
    Write ``docs/benchmarks.md`` from results files.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import shlex
import sys

__all__ = ["main"]

#: Where ``run`` writes its results unless told otherwise (git-ignored).
DEFAULT_OUTPUT = pathlib.Path(__file__).resolve().parent / "results" / "latest.json"

#: The documentation page ``docs`` writes.
DOCS_PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def _log(message):
    print(message, file=sys.stderr, flush=True)


def _run(args):
    from benchmarks.cases import get_suite
    from benchmarks.report import markdown, write_json
    from benchmarks.runner import run_suite

    suite = get_suite(args.suite)
    overrides = {key: value for key, value in (("repeats", args.repeats),
                                               ("repeat_budget_s", args.repeat_budget))
                 if value is not None}
    if overrides:
        suite = dataclasses.replace(suite, **overrides)
    results = run_suite(suite, log=_log, only=args.only)
    results["command"] = "python -m benchmarks " + shlex.join(args.argv)
    path = write_json(results, args.output)
    print(markdown(results))
    print(f"Results written to {path}")
    return 0


def _report(args):
    from benchmarks.report import markdown, read_json

    print(markdown(read_json(args.path)))
    return 0


def _docs(args):
    import pathlib

    from benchmarks.report import docs_page, read_json

    page = docs_page([read_json(path) for path in args.paths])
    pathlib.Path(args.output).write_text(page)
    print(f"Page written to {args.output}")
    return 0


def _list(args):
    from benchmarks.cases import SUITES
    from benchmarks.methods import METHODS

    for suite in SUITES.values():
        print(f"suite {suite.name}: up to {suite.repeats} repeats, target gap "
              f"{suite.target_gap:g}")
        for case in suite.cases:
            print(f"  {case.name} on {case.data.label}: {', '.join(case.methods)}")
    print("methods:")
    for method in METHODS.values():
        print(f"  {method.name:<18} {method.label} [{method.library}, {method.where}]")
    return 0


def _rounds(args):
    from benchmarks.rounds import main as rounds_main

    return rounds_main(args)


def _cold_start(args):
    from benchmarks.cold_start import main as cold_start_main

    return cold_start_main(args)


def _categorical(args):
    from benchmarks.categorical import main as categorical_main

    return categorical_main(args)


def _communication(args):
    from benchmarks.communication import main as communication_main

    return communication_main(args)
def _scaling(args):
    from benchmarks.strong_scaling import main as scaling_main

    return scaling_main(args)


def _inference(args):
    from benchmarks.inference import main as inference_main

    return inference_main(args)
def _cv(args):
    from benchmarks.cv import main as cv_main

    return cv_main(args)


def _newton(args):
    from benchmarks.newton import main as newton_main

    return newton_main(args)


def _passes(args):
    from benchmarks.passes import main as passes_main

    return passes_main(args)


def _parity(args):
    from benchmarks.parity import main as parity_main

    return parity_main(args)


def _gpu(args):
    from benchmarks.gpu import main as gpu_main

    return gpu_main(args)


def _bigd(args):
    from benchmarks.bigd import main as bigd_main

    return bigd_main(args)


def build_parser():
    """The argument parser of ``python -m benchmarks``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a suite and write its results")
    run.add_argument("--suite", default="quick", help="quick (default), full, scale (1e7 rows), mid (the scale cases at 3e6 rows), peers (every peer library at 1e6 x 50), peers-large (at 1e7 x 50) or smoke")
    run.add_argument("--output", default=str(DEFAULT_OUTPUT),
                     help="JSON results file (default: benchmarks/results/latest.json)")
    run.add_argument("--only", nargs="+", default=[], metavar="PATTERN",
                     help="run only the cases whose names match these shell-style patterns, "
                          "e.g. 'ols*' 'logistic-l2/1e5x*'")
    run.add_argument("--repeats", type=int, default=None,
                     help="most timed repeats per entry (default: the suite's)")
    run.add_argument("--repeat-budget", type=float, default=None, metavar="SECONDS",
                     help="seconds of repeats an entry may take (default: the suite's)")
    run.set_defaults(handler=_run)

    report = commands.add_parser("report", help="print the table of a results file")
    report.add_argument("path", nargs="?", default=str(DEFAULT_OUTPUT))
    report.set_defaults(handler=_report)

    docs = commands.add_parser("docs", help="write the documentation page of results files")
    docs.add_argument("paths", nargs="+", help="results files, in the order of the page")
    docs.add_argument("--output", default=str(DOCS_PAGE),
                      help="the page to write (default: docs/benchmarks.md)")
    docs.set_defaults(handler=_docs)

    listing = commands.add_parser("list", help="list suites, cases and methods")
    listing.set_defaults(handler=_list)

    rounds = commands.add_parser("rounds", help="where the time of one daskglm round goes")
    rounds.add_argument("--suite", default="quick", help="take the data set of this suite")
    rounds.add_argument("--repeats", type=int, default=10, help="rounds timed per measurement")
    rounds.set_defaults(handler=_rounds)

    cold = commands.add_parser("cold-start", help="first fit / second fit on a fresh cluster")
    cold.add_argument("--workers", type=int, default=2)
    cold.add_argument("--rows", type=int, default=1_000_000)
    cold.add_argument("--features", type=int, default=50)
    cold.add_argument("--partitions", type=int, default=8)
    cold.add_argument("--repeats", type=int, default=3, help="fresh clusters measured")
    cold.set_defaults(handler=_cold_start)

    categorical = commands.add_parser(
        "categorical", help="categorical columns: per-partition blocks vs dense dummies vs glum")
    categorical.add_argument("--rows", type=int, default=10_000_000)
    categorical.add_argument("--dummies-rows", type=int, default=1_000_000,
                             help="the size at which dense dummies are fitted too")
    categorical.add_argument("--seed", type=int, default=0)
    categorical.add_argument("--partition", action="store_true",
                             help="time each kernel on one 5e5-row partition, as CSR and as "
                                  "a categorical block, in process (nothing else)")
    categorical.add_argument("--parquet", metavar="DIR",
                             help="write the table, its categorical columns as strings, to "
                                  "parquet files in DIR (once) and fit it read once and read "
                                  "twice, alternating")
    categorical.set_defaults(handler=_categorical)

    comm = commands.add_parser("communication",
                               help="compressed SGD and deadlines: gap vs bytes and seconds")
    comm.add_argument("--rows", type=int, default=2000)
    comm.add_argument("--features", type=int, default=10_000)
    comm.add_argument("--epochs", type=int, default=6)
    comm.add_argument("--batch-size", type=int, default=200)
    comm.add_argument("--slowdown", type=float, default=5.0,
                      help="how many times slower one worker's tasks are")
    comm.add_argument("--delay", type=float, default=0.5,
                      help="seconds added to each task of one worker (the second straggler "
                           "setting)")
    comm.add_argument("--output", default=None, help="write the rows as JSON here")
    comm.set_defaults(handler=_communication)
    scaling = commands.add_parser("scaling", help="the same fits on 1, 2, ..., N workers")
    scaling.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    scaling.add_argument("--rows", type=int, default=10_000_000)
    scaling.add_argument("--features", type=int, default=50)
    scaling.add_argument("--partitions", type=int, default=None,
                         help="row chunks (default: twice the largest worker count)")
    scaling.add_argument("--methods", default="lbfgs,newton,averaging,normal")
    scaling.add_argument("--repeats", type=int, default=3)
    scaling.add_argument("--tol", type=float, default=1e-8)
    scaling.set_defaults(handler=_scaling)

    inference = commands.add_parser("inference",
                                    help="the round of inference=True against the fit's rounds")
    inference.add_argument("--rows", type=int, default=200_000)
    inference.add_argument("--features", type=int, default=20)
    inference.add_argument("--partitions", type=int, default=8)
    inference.add_argument("--workers", type=int, default=2)
    inference.set_defaults(handler=_inference)
    cv = commands.add_parser("cv", help="RidgeCV's one pass against a grid search; "
                                       "multinomial against one-vs-rest")
    cv.add_argument("--rows", type=int, default=200_000)
    cv.add_argument("--features", type=int, default=20)
    cv.add_argument("--folds", type=int, default=3)
    cv.add_argument("--alphas", type=int, default=5)
    cv.add_argument("--classes", type=int, default=4)
    cv.set_defaults(handler=_cv)

    gpu = commands.add_parser("gpu", help="CuPy chunks on a GPU against numpy chunks")
    gpu.add_argument("--rows", type=int, default=10_000_000)
    gpu.add_argument("--features", type=int, default=100)
    gpu.add_argument("--partitions", type=int, default=8)
    gpu.add_argument("--tol", type=float, default=1e-8)
    gpu.add_argument("--solvers", nargs="+", default=["lbfgs", "newton", "averaging"])
    gpu.add_argument("--no-cluster", dest="cluster", action="store_false",
                     help="leave out the fits on a one-worker LocalCluster")
    gpu.set_defaults(handler=_gpu)

    passes = commands.add_parser("passes", help="validation fused into the first evaluation")
    passes.add_argument("--rows", type=int, default=1_000_000)
    passes.add_argument("--features", type=int, default=50)
    passes.add_argument("--repeats", type=int, default=3,
                        help="timed fits of each kind, alternating (the median is shown)")
    passes.set_defaults(handler=_passes)
    newton = commands.add_parser("newton", help="Newton's fused Hessian and last step")
    newton.add_argument("--rows", type=int, default=3_000_000)
    newton.add_argument("--features", type=int, default=50)
    newton.add_argument("--repeats", type=int, default=5, help="timed runs of each fit")
    newton.add_argument("--family", choices=("binomial", "tweedie", "gamma"),
                        default="binomial", help="the model fitted")
    newton.add_argument("--tol", type=float, default=1e-4)
    newton.set_defaults(handler=_newton)
    parity = commands.add_parser("parity", help="multi-output, positive=True, one-vs-rest SGD")
    parity.add_argument("--rows", type=int, default=200_000)
    parity.add_argument("--features", type=int, default=20)
    parity.add_argument("--partitions", type=int, default=8)
    parity.add_argument("--targets", type=int, default=4)
    parity.add_argument("--classes", type=int, default=4)
    parity.set_defaults(handler=_parity)
    from benchmarks.asynchronous import add_parser as add_async_parser

    add_async_parser(commands)
    from benchmarks.fused_kernel import add_parser as add_fused_kernel_parser

    add_fused_kernel_parser(commands)
    from benchmarks.defaults import add_parser as add_defaults_parser

    add_defaults_parser(commands)
    from benchmarks.fixed_cost import add_parser as add_fixed_cost_parser

    add_fixed_cost_parser(commands)
    from benchmarks.proximal_rounds import add_parser as add_proximal_rounds_parser

    add_proximal_rounds_parser(commands)
    from benchmarks.network import add_parser as add_network_parser
    from benchmarks.network import add_rounds_parser as add_network_rounds_parser

    add_network_parser(commands)
    add_network_rounds_parser(commands)
    from benchmarks.deadline_guard import add_parser as add_deadline_guard_parser

    add_deadline_guard_parser(commands)
    from benchmarks.sparse_sgd import add_parser as add_sparse_sgd_parser

    add_sparse_sgd_parser(commands)
    from benchmarks.sharded_cost import add_parser as add_sharded_cost_parser

    add_sharded_cost_parser(commands)
    from benchmarks.auto_cases import add_parser as add_auto_cases_parser

    add_auto_cases_parser(commands)
    from benchmarks.click_through import add_parser as add_click_through_parser

    add_click_through_parser(commands)
    from benchmarks.prediction import add_parser as add_prediction_parser

    add_prediction_parser(commands)
    from benchmarks.grid import add_parser as add_grid_parser

    add_grid_parser(commands)
    bigd = commands.add_parser("bigd", help="L-BFGS on column shards against L-BFGS, big d")
    bigd.add_argument("--n", type=float, default=200_000, help="rows (default 2e5)")
    bigd.add_argument("--d", default="16,20", help="log2 of the feature counts, e.g. 20,24")
    bigd.add_argument("--nnz", type=int, default=50, help="non-zeros per row")
    bigd.add_argument("--partitions", type=int, default=8)
    bigd.add_argument("--workers", type=int, default=2)
    bigd.add_argument("--before-iter", type=int, default=3, help="iterations of plain lbfgs")
    bigd.add_argument("--after-iter", type=int, default=10, help="iterations of sharded lbfgs")
    bigd.set_defaults(handler=_bigd)
    return parser


def main(argv=None):
    """Entry point; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
