"""A Dask worker warmed at its start: daskglm's compiled loops loaded before the first fit.

A new worker process pays about 0.3 s on its first daskglm task, whatever the data: it
imports daskglm's compute modules, numba builds its compiler context (its typing and
lowering registries) and reads the compiled loops from numba's on-disk cache.  Started
with this module as a preload, a worker does that in a background thread as soon as it
starts, while the user's data are being loaded, and the first fit runs about as fast as
the second (``python -m benchmarks cold-start``)::

    dask worker tcp://scheduler:8786 --preload daskglm.preload
    LocalCluster(n_workers=2, preload=["daskglm.preload"])
    client.register_plugin(daskglm.preload.WarmUp())  # workers running already

The worker is ready at once.  A task that needs a loop before the thread has loaded it
waits on numba's lock instead of loading it a second time.  The ``daskglm`` command's
clusters start their workers this way.
"""

from __future__ import annotations

import importlib
import threading

import numpy as np
from distributed import WorkerPlugin

__all__ = ["dask_setup", "warm_process", "WarmUp", "PRELOAD"]

#: The module to name in ``preload=`` or ``--preload``.
PRELOAD = __name__

#: What a worker imports for its first task of a fit (and scipy with them).
_WORKER_MODULES = ("daskglm.engine.tasks", "daskglm.engine.partitions",
                   "daskglm.compute.kernels", "daskglm.compute.summaries")

_started = threading.Event()


def warm_process():
    """Import the worker's modules and load the compiled loops of float64 data, here.

    Blocking; :func:`dask_setup` runs it in a background thread.
    """
    for module in _WORKER_MODULES:
        importlib.import_module(module)
    from .compute.blocked import load_loops

    load_loops(np.float64)


def dask_setup(worker=None):
    """Start warming this process in a background thread, once; Dask calls it when this
    module is a worker's preload."""
    if _started.is_set():
        return
    _started.set()
    threading.Thread(target=warm_process, daemon=True, name="daskglm-preload").start()


class WarmUp(WorkerPlugin):
    """:func:`dask_setup` as a worker plugin, for workers that were started without it.

    Registered with ``client.register_plugin(WarmUp())``: the workers running then start
    warming at once, and the workers that join the cluster later (or that restart) start
    warming when they start.
    """

    name = "daskglm-warm-up"

    def setup(self, worker):
        dask_setup(worker)
