"""``python -m benchmarks.out_of_core``: run the benchmark (see :mod:`benchmarks.out_of_core`)."""

import sys

from benchmarks.out_of_core.cli import main

if __name__ == "__main__":
    sys.exit(main())
