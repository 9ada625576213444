"""Passes over Dask inputs that an estimator computes itself, outside the engine's rounds,
written to the fit's ledger all the same.

Some inputs must be read before an engine exists (the classes of labels that are not
numbers, the labels a stratified splitter reads) or beside it (class counts for a start
given before the classes are known).  :func:`compute_pass` computes them with Dask and,
inside :func:`collecting` (an estimator's ``fit``), notes each as a
:data:`~daskglm.accounting.kinds.Kind.DRIVER_PASS` record: its seconds, the tasks of its
graph, the bytes of its inputs (read) and of its result; its traffic is not measured
(``bytes_measured`` stays None).  :func:`records_driver_passes` (on an estimator's
``fit``) puts them at the front of the fit's ledger, before the rounds of the engine
made after them.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import time

from ..accounting.bytemodel import nbytes
from ..accounting.kinds import Kind
from ..accounting.round_record import RoundRecord

__all__ = ["collecting", "compute_pass", "keep_pass", "add_to", "records_driver_passes",
           "with_known_rows"]

_PASSES = contextvars.ContextVar("daskglm_driver_passes", default=None)


@contextlib.contextmanager
def collecting():
    """Collect the driver passes computed inside the block: yields their list."""
    passes = []
    token = _PASSES.set(passes)
    try:
        yield passes
    finally:
        _PASSES.reset(token)


def compute_pass(*collections, reads=()):
    """``dask.compute(*collections)``, noted as one driver pass of the fit collecting;
    ``reads``: the Dask arrays the pass reads (their bytes are the record's
    ``bytes_read``; the collections' own when not given)."""
    import dask

    tasks = set()
    for collection in collections:
        tasks.update(collection.__dask_graph__().keys())
    start = time.perf_counter()
    results = dask.compute(*collections)
    seconds = time.perf_counter() - start
    passes = _PASSES.get()
    if passes is not None:
        read = tuple(reads) or collections
        record = RoundRecord(Kind.DRIVER_PASS, len(tasks), 0, nbytes(results), seconds,
                             _partitions(read))
        record.bytes_read = sum(_bytes_of(c) for c in read)
        passes.append(record)
    return results


def keep_pass(collections, summarise, client=None):
    """Compute the delayed ``collections`` and keep each result where it was computed
    (futures on the workers of ``client``, objects in this process without one); return
    ``(kept, summaries)``, ``summaries`` being ``summarise(result)`` of each, brought to
    the driver.  Noted as one driver pass of the fit collecting: its seconds, the tasks
    of its graph and of the summaries, and the bytes of the summaries."""
    import dask

    tasks = set()
    for collection in collections:
        tasks.update(collection.__dask_graph__().keys())
    start = time.perf_counter()
    if client is None:
        kept = list(dask.compute(*collections, scheduler="threads"))
        summaries = [summarise(result) for result in kept]
    else:
        kept = client.compute(list(collections))
        summaries = client.gather(client.map(summarise, kept))
    seconds = time.perf_counter() - start
    passes = _PASSES.get()
    if passes is not None:
        record = RoundRecord(Kind.DRIVER_PASS, len(tasks) + len(kept), 0, nbytes(summaries),
                             seconds, len(collections))
        record.bytes_read = 0
        passes.append(record)
    return kept, summaries


def with_known_rows(array):
    """``array`` (a Dask array) with its unknown row chunk sizes (after boolean indexing,
    say) counted in one driver pass, as Dask's ``compute_chunk_sizes`` counts them but
    noted in the ledger; ``array`` itself when they are known."""
    import dask
    import dask.array as da

    if not any(math.isnan(size) for size in array.chunks[0]):
        return array
    blocks = array.to_delayed()
    firsts = blocks.reshape(blocks.shape[0], -1)[:, 0]
    rows = compute_pass(*[dask.delayed(_n_rows)(block) for block in firsts], reads=(array,))
    chunks = (tuple(int(r) for r in rows),) + tuple(array.chunks[1:])
    return da.Array(array.dask, array.name, chunks, meta=array._meta)


def _n_rows(block):
    return block.shape[0]


def records_driver_passes(fit):
    """Decorate an estimator's ``fit``: the driver passes computed during it go to the front
    of the ledger it leaves in ``comm_``."""

    @functools.wraps(fit)
    def fit_recording(self, *args, **kwargs):
        with collecting() as passes:
            result = fit(self, *args, **kwargs)
        if passes and getattr(self, "comm_", None) is not None:
            add_to(self.comm_, passes)
        return result

    return fit_recording


def add_to(ledger, passes):
    """Put ``passes`` at the front of ``ledger`` (they ran before its engine's rounds)."""
    ledger.records[:0] = list(passes)


def _partitions(collections):
    """The partitions a pass reads: the most row chunks of its arrays, or one per delayed
    object (each a partition's summary) when there are more of those."""
    from dask.delayed import Delayed

    delayed = sum(isinstance(c, Delayed) for c in collections)
    return max([delayed] + [_chunks(c) for c in collections if not isinstance(c, Delayed)])


def _chunks(collection):
    numblocks = getattr(collection, "numblocks", None)
    return int(numblocks[0]) if numblocks else 1


def _bytes_of(collection):
    """Bytes of a Dask array's data (0 when its chunk sizes are unknown, or for a delayed
    object)."""
    from dask.delayed import Delayed

    if isinstance(collection, Delayed):
        return 0
    try:
        size = float(getattr(collection, "nbytes", 0))
    except (TypeError, ValueError):
        return 0
    return int(size) if math.isfinite(size) else 0
