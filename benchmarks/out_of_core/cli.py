"""The command line: ``python -m benchmarks.out_of_core`` (see :func:`main`)."""

from __future__ import annotations

import argparse
import pathlib
import sys

from benchmarks.out_of_core.parts import run
from benchmarks.out_of_core.tables import markdown

#: Where the results go unless ``--output`` says otherwise (git-ignored).
DEFAULT_OUTPUT = (pathlib.Path(__file__).resolve().parent.parent / "results"
                  / "out_of_core.json")


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.out_of_core",
        description="Persisted partitions against partitions streamed from a zarr store.",
    )
    parser.add_argument("--parts", nargs="+", choices=("compare", "bounded"),
                        default=["compare", "bounded"], help="Parts to run (default: both).")
    parser.add_argument("--compare-n", type=int, default=2_000_000,
                        help="Rows of the compare store (default: 2,000,000).")
    parser.add_argument("--n", type=int, default=10_000_000,
                        help="Rows of the bounded-memory store (default: 10,000,000).")
    parser.add_argument("--d", type=int, default=50, help="Features (default: 50).")
    parser.add_argument("--chunks", type=int, default=None,
                        help="Rows per chunk (default: about 32 MiB of X per chunk).")
    parser.add_argument("--memory-limit", default="1GB",
                        help="Memory limit of each worker of the bounded run (default: 1GB).")
    parser.add_argument("--path", default=None,
                        help="Directory for the temporary stores (default: the system's "
                             "temporary directory); they are removed at the end.")
    parser.add_argument("--store", default=None,
                        help="Use this existing store for the bounded run instead of "
                             "writing one (it is left in place).")
    parser.add_argument("--repeats", type=int, default=2,
                        help="Fits per cache policy in the compare part (default: 2).")
    parser.add_argument("--tol", type=float, default=1e-6,
                        help="Tolerance of every fit (default: 1e-6).")
    parser.add_argument("--compare-max-iter", type=int, default=100,
                        help="Iteration cap of the compare fits (default: 100).")
    parser.add_argument("--max-iter", type=int, default=5,
                        help="Iteration cap of the bounded fit (default: 5).")
    parser.add_argument("--seed", type=int, default=0, help="Random state of the data.")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="dtype of X in the bounded run's store (default: float64).")
    parser.add_argument("--compressor", choices=("default", "none"), default="default",
                        help="Compression of the bounded run's store: zarr's default "
                             "(zstd) or none (default: default).")
    parser.add_argument("--from-zero", action="store_true",
                        help="Start the bounded fit from zero coefficients, not from a solve "
                             "on the partitions kept in memory (for comparison).")
    parser.add_argument("--kept-copies", choices=("exact", "float32"), default="exact",
                        help="Dask's config key daskglm.kept-copies during the bounded fit: "
                             "keep float32 copies of a float64 X's kept partitions "
                             "(default: exact).")
    parser.add_argument("--no-drop-caches", dest="drop_caches", action="store_false",
                        help="Do not try to drop the whole page cache before cold reads "
                             "(the store's own files are evicted either way).")
    parser.add_argument("--output", type=pathlib.Path, default=DEFAULT_OUTPUT,
                        help=f"JSON results (default: {DEFAULT_OUTPUT}).")
    return parser


def main(argv=None):
    """Command line: run the benchmark, print the tables, write the JSON; returns 0."""
    from benchmarks.report import write_json

    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    args.argv = argv
    results = run(args)
    path = write_json(results, args.output)
    print(markdown(results))
    print(f"Results written to {path}")
    return 0
