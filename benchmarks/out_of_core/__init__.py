"""Out-of-core fits: partitions persisted on the workers against partitions read from zarr.

``python -m benchmarks.out_of_core`` runs two parts, each on a ``distributed.LocalCluster``
of two single-threaded worker processes, prints markdown tables and writes
``benchmarks/results/out_of_core.json``:

compare
    One zarr store that fits in the workers' memory, fitted by
    ``LogisticRegression(solver="lbfgs")`` with ``cache="memory"`` (the partitions are read
    once and persisted) and with ``cache="none"`` (every round reads every partition from
    the store), alternately, ``--repeats`` times each.  Time per pass is the median wall
    time of a fit's gradient rounds (``est.comm_.records``), time per fit the wall time of
    ``fit``.  The read throughput of streamed rounds (``bytes_read`` of a round over its
    seconds) is set against a plain sequential read of the chunk files of ``X``
    (``open().read()``): as found, cold (the files evicted from the page cache first) and
    warm.  Where the time of a streamed pass goes is broken down twice: from Dask's task
    stream during one ``cache="none"`` fit, and by timing each step of one chunk (read the
    file, decode it with zarr, pack it, run the gradient kernel) in this process.
bounded
    A store larger than the workers' memory limits (``--memory-limit`` each), fitted with
    ``cache="auto"``, which keeps the leading partitions that fit in half the free
    memory and streams the others (``"partial"``, or ``"none"`` when none fits), with
    ``solver="auto"`` choosing by the measured cost of a pass: time per pass, read throughput, peak
    worker memory against the limit (``distributed.diagnostics.MemorySampler`` with
    ``measure="process"``, which sums the workers, and each worker process's resident
    memory polled from this process) and whether a worker was restarted or warned about
    its memory.

Stores are written by :func:`daskglm.datasets.make_classification` into a temporary
directory under ``--path`` (the system's temporary directory by default), removed at the
end.  How much of a store is in the page cache is measured with ``mincore(2)``; a store's
files are evicted from it with ``posix_fadvise(POSIX_FADV_DONTNEED)`` (no privileges
needed), and before the cold sequential read the whole page cache is dropped too where
``/proc/sys/vm/drop_caches`` can be written (root), the result recorded.

The machine's load average is recorded at the start and end of each part: on a machine
shared with other processes the timings are noisy.

The modules: :mod:`~benchmarks.out_of_core.pagecache` (the store's files and the page
cache), :mod:`~benchmarks.out_of_core.workers` (the cluster's worker processes),
:mod:`~benchmarks.out_of_core.fits` (writing stores, fitting them and summarising the
fits), :mod:`~benchmarks.out_of_core.parts` (the two parts and the whole run),
:mod:`~benchmarks.out_of_core.tables` (the markdown tables),
:mod:`~benchmarks.out_of_core.cli` (the command line) and
:mod:`~benchmarks.out_of_core.units` (small numeric helpers).
"""

from benchmarks.out_of_core.cli import DEFAULT_OUTPUT, main
from benchmarks.out_of_core.fits import chunk_steps, fit_summary, task_breakdown, write_store
from benchmarks.out_of_core.pagecache import (
    disk_reads,
    drop_page_cache,
    evict,
    resident_bytes,
    sequential_read,
    store_files,
)
from benchmarks.out_of_core.parts import run, run_bounded, run_compare
from benchmarks.out_of_core.tables import markdown
from benchmarks.out_of_core.workers import WorkerMonitor, local_cluster

__all__ = [
    "DEFAULT_OUTPUT",
    "store_files",
    "resident_bytes",
    "evict",
    "drop_page_cache",
    "sequential_read",
    "disk_reads",
    "WorkerMonitor",
    "local_cluster",
    "write_store",
    "fit_summary",
    "task_breakdown",
    "chunk_steps",
    "run_compare",
    "run_bounded",
    "run",
    "markdown",
    "main",
]
