"""The cluster's network, measured once per client: what ``solver="auto"`` prices
messages with (:class:`~daskglm.accounting.links.Link`).

:func:`measure_link` times, between the driver and the first worker,

* the round trip of a small message (the shortest of :data:`PINGS`), half of which is the
  latency;
* the fetch of a block of :data:`PROBE_BYTES` bytes scattered there (16 times more when
  that took under :data:`SHORT_SECONDS`, so that the figure is a transfer's, not a
  message's), the shortest of :data:`FETCHES`: its bytes over its seconds less a round
  trip.

The shortest times are the link's, not those of a moment when the workers were busy
(loading the data a fit was just given, say): a fit's rounds wait for its tasks anyway.

It took 0.15 s on loopback and 0.35 s on an emulated 100 Mbit/s network (the scatter
of the block included), and is cached per scheduler address.  The Dask configuration
``daskglm.link`` (``latency``, ``bandwidth``) fixes the figures instead, so that a fit's
choice is reproducible.
"""

from __future__ import annotations

import threading
import time

import dask
import numpy as np

from ..accounting.links import IN_PROCESS, Link, link_from_config
from .dask_compat import cluster_workers

__all__ = ["measure_link", "link_for", "PINGS", "PROBE_BYTES"]

#: Round trips timed for the latency.
PINGS = 5
#: Bytes of the first transfer timed for the bandwidth.
PROBE_BYTES = 2**20
#: Fetches of the block timed, the shortest taken: on loopback one fetch of 16 MiB
#: measured from 0.28 to 1.9 GB/s from one client to the next (the workers busy
#: loading persisted data at the time, or not).
FETCHES = 3
#: A transfer shorter than this is timed again with 16 times the bytes.
SHORT_SECONDS = 0.02

_MEASURED: dict[str, Link] = {}
_LOCK = threading.Lock()


def link_for(client):
    """The :class:`Link` a fit on ``client`` is priced with: the configuration's figures,
    else those measured on its cluster (cached), else :data:`IN_PROCESS` without a
    client or a worker."""
    if client is None:
        return IN_PROCESS
    workers = cluster_workers(client)
    if not workers:
        return IN_PROCESS
    fixed = link_from_config(dask.config.get("daskglm.link", default=None), len(workers))
    if fixed is not None:
        return fixed
    key = client.scheduler.address
    with _LOCK:
        found = _MEASURED.get(key)
    if found is None or found.nodes != len(workers):
        found = measure_link(client, sorted(workers)[0], len(workers))
        with _LOCK:
            _MEASURED[key] = found
    return found


def measure_link(client, worker, nodes):
    """Measure the latency and the bandwidth between the driver and ``worker``.

    Parameters
    ----------
    client : distributed.Client
    worker : str
        The worker's address.
    nodes : int
        Worker processes of the cluster (recorded in the result).

    Returns
    -------
    Link
    """
    async def round_trips():
        seconds = []
        peer = client.rpc(worker)
        await peer.identity()  # the connection made
        for _ in range(PINGS):
            start = time.perf_counter()
            await peer.identity()
            seconds.append(time.perf_counter() - start)
        return min(seconds)

    round_trip = client.sync(round_trips)
    size, seconds = PROBE_BYTES, 0.0
    while True:
        block = client.scatter(np.ones(size, dtype=np.uint8), workers=[worker], direct=True,
                               hash=False)
        try:
            timings = []
            for _ in range(FETCHES):
                start = time.perf_counter()
                client.gather(block, direct=True)
                timings.append(time.perf_counter() - start)
        finally:
            block.release()
        seconds = min(timings)
        if seconds >= SHORT_SECONDS or size > PROBE_BYTES:
            break
        size *= 16
    bandwidth = size / max(seconds - round_trip, 1e-6)
    return Link(latency=round_trip / 2.0, bandwidth=bandwidth, nodes=int(nodes))
