"""The local Dask cluster a suite runs on."""

from __future__ import annotations

import contextlib
import logging
import warnings
from dataclasses import asdict, dataclass

from daskglm.engine.dask_compat import cluster_workers

__all__ = ["ClusterSpec", "local_cluster", "describe_cluster"]


@dataclass(frozen=True)
class ClusterSpec:
    """Shape of a ``distributed.LocalCluster`` of worker processes.

    Attributes
    ----------
    n_workers : int
        Worker processes.
    threads_per_worker : int
        Threads per worker (BLAS in each worker is limited to this many threads too).
    """

    n_workers: int = 2
    threads_per_worker: int = 1

    @property
    def total_threads(self):
        """Worker threads in all: the cores the cluster computes on."""
        return self.n_workers * self.threads_per_worker

    def to_dict(self):
        """The spec as a plain dict."""
        return asdict(self)


@contextlib.contextmanager
def local_cluster(spec: ClusterSpec, quiet=True):
    """Start a ``LocalCluster`` and a ``Client`` (the default client) for the block.

    Parameters
    ----------
    spec : ClusterSpec
    quiet : bool
        Silence ``distributed``'s logging below errors here, and all of it in the workers.

    Yields
    ------
    distributed.Client
    """
    from distributed import Client, LocalCluster

    if quiet:
        logging.getLogger("distributed").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        # a second cluster in the same process cannot have the default port of the
        # scheduler's HTTP server, and says so
        warnings.filterwarnings("ignore", message="Port .* is already in use")
        cluster = LocalCluster(
            n_workers=spec.n_workers,
            threads_per_worker=spec.threads_per_worker,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
            # the workers' own logs: none (shutting a cluster down logs failed heartbeats)
            silence_logs=logging.CRITICAL if quiet else logging.WARNING,
        )
    with cluster, Client(cluster) as client:
        if quiet:
            # dask-glm's line searches overflow exp() on the workers, harmlessly
            client.run(_ignore_runtime_warnings)
        yield client


def _ignore_runtime_warnings():
    warnings.filterwarnings("ignore", category=RuntimeWarning)


def describe_cluster(client):
    """Workers, threads and memory limits of the cluster behind ``client``.

    Returns
    -------
    dict
    """
    workers = cluster_workers(client)
    return {
        "n_workers": len(workers),
        "threads": sum(w.get("nthreads", 0) for w in workers.values()),
        "memory_limit_bytes": [w.get("memory_limit") for w in workers.values()],
    }
