"""An emulated cluster network: Dask's TCP comms, each message held as a network would.

Loopback makes every byte free, which hides what communication-saving methods save.  This
module registers a Dask comm backend, ``shaped://``, that is TCP with a network card on
each process: every message a process sends or receives is queued on that card and held
for ``latency + bytes / bandwidth``, with ``latency`` and ``bandwidth`` from the Dask
configuration (``daskglm.network.latency`` in seconds, ``daskglm.network.bandwidth`` in
bytes per second), or in the process that opened a :meth:`Network.local_cluster`, from
that cluster (:func:`current_network`).  A cluster started with ``protocol="shaped://"``
behaves, as far as communication goes, like one whose processes sit on separate hosts of
that network::

    from distributed import Client
    from daskglm.network import Network

    network = Network(bandwidth="100 Mbit/s", latency="5 ms")
    with network.local_cluster(n_workers=8) as cluster, Client(cluster) as client:
        ...   # every fit on ``client`` pays for its bytes and messages

The model of one process's card:

* **Egress.**  A process sends one message at a time: a message is written when the card
  has finished sending the bytes written before it (``bytes / bandwidth`` each).
* **Ingress.**  A message whose first bytes arrive at ``t`` starts crossing the receiver's
  card at ``max(t, card free)`` and is handed to Dask ``bytes / bandwidth + latency``
  after that.  A lone message therefore arrives ``latency + bytes / bandwidth`` after it
  was sent; messages from many senders to one process queue on its card (a reduction into
  the driver), and messages from one process to many queue on its card (a broadcast).

The bytes are counted as they are read from the socket (every frame of the message), so
the holds are of measured sizes, not estimates.  The real transfer over loopback overlaps
the emulated one: emulate bandwidths well below the host's memory copy speed (a few GB/s).
The client and the scheduler of a ``LocalCluster`` share their process's card.

On a cluster started by hand, the same: ``dask scheduler --protocol shaped`` and workers
pointed at the ``shaped://`` address, with ``DASK_DASKGLM__NETWORK__BANDWIDTH`` and
``DASK_DASKGLM__NETWORK__LATENCY`` set in their environments.  Nothing here is used by a fit.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from dataclasses import dataclass

import dask
from distributed import LocalCluster
from distributed.comm.registry import backends
from distributed.comm.tcp import TCP, BaseTCPBackend, TCPConnector, TCPListener

__all__ = ["Network", "ShapedBackend", "parse_bandwidth", "parse_latency", "SCHEME",
           "current_network"]

#: The address scheme of the emulated network.
SCHEME = "shaped"

_BIT_UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_bandwidth(value):
    """Bytes per second from a number (bytes per second) or a string such as
    ``"1 Gbit/s"``, ``"100 Mbit/s"``, ``"10Gbps"`` or ``"125 MB/s"``."""
    if isinstance(value, (int, float)):
        rate = float(value)
    else:
        text = str(value).strip().lower().replace(" ", "")
        bits = re.fullmatch(r"([0-9.e+-]+)([kmgt]?)(?:bit/s|bps)", text)
        if bits:
            rate = float(bits.group(1)) * _BIT_UNITS[bits.group(2)] / 8.0
        else:
            rate = float(dask.utils.parse_bytes(text.removesuffix("/s")))
    if not rate > 0:
        raise ValueError(f"a bandwidth must be positive, got {value!r}")
    return rate


def parse_latency(value):
    """Seconds from a number (seconds) or a string such as ``"0.5 ms"`` or ``"50us"``."""
    seconds = float(value) if isinstance(value, (int, float)) else float(
        dask.utils.parse_timedelta(str(value).replace(" ", ""), default="s"))
    if seconds < 0:
        raise ValueError(f"a latency cannot be negative, got {value!r}")
    return seconds


@dataclass(frozen=True)
class Network:
    """A network to emulate: every process's card sends and receives ``bandwidth`` bytes
    per second, and every message arrives ``latency`` seconds after its last byte left.

    Parameters
    ----------
    bandwidth : float or str
        Bytes per second, or a string with units (``"1 Gbit/s"``, ``"125 MB/s"``).
    latency : float or str
        One-way latency in seconds, or a string with units (``"0.5 ms"``).
    """

    bandwidth: float
    latency: float

    def __init__(self, bandwidth, latency):
        object.__setattr__(self, "bandwidth", parse_bandwidth(bandwidth))
        object.__setattr__(self, "latency", parse_latency(latency))

    def config(self):
        """The Dask configuration that sets this network in every process that reads it."""
        return {"daskglm": {"network": {"bandwidth": self.bandwidth,
                                        "latency": self.latency}}}

    def local_cluster(self, n_workers=2, threads_per_worker=1, **kwargs):
        """A ``distributed.LocalCluster`` of worker processes on this network.

        Its scheduler, its workers and every client of it talk over ``shaped://``: the
        worker processes get the network in their configuration from their nannies, and
        this process's comms find it among the open clusters' networks (the configuration
        here is left as it is).  Keyword arguments go to ``LocalCluster``.
        """
        kwargs.setdefault("dashboard_address", None)
        kwargs.setdefault("worker_dashboard_address", None)
        # the nannies' configuration, passed on to their worker processes
        kwargs["config"] = {**(kwargs.get("config") or {}), **self.config()}
        return _ShapedLocalCluster(self, n_workers=n_workers,
                                   threads_per_worker=threads_per_worker, processes=True,
                                   protocol=f"{SCHEME}://", **kwargs)

    def __str__(self):
        return f"{self.bandwidth * 8 / 1e6:g} Mbit/s, {self.latency * 1e3:g} ms"


#: The networks of the local clusters open in this process, the last opened last.
_OPEN: list[Network] = []


def current_network():
    """The :class:`Network` of this process: its Dask configuration's
    (``daskglm.network``), else that of the last :meth:`Network.local_cluster` still open
    here, else None."""
    settings = dask.config.get("daskglm.network", default=None) or {}
    if "bandwidth" in settings:
        return Network(settings["bandwidth"], settings.get("latency", 0.0))
    return _OPEN[-1] if _OPEN else None


class _ShapedLocalCluster(LocalCluster):
    """A LocalCluster whose network is this process's while it is open (its scheduler
    and the clients of it run here)."""

    def __init__(self, network, **kwargs):
        self.network = network
        _OPEN.append(network)
        try:
            super().__init__(**kwargs)
        except BaseException:
            self._forget_network()
            raise

    def close(self, *args, **kwargs):
        try:
            return super().close(*args, **kwargs)
        finally:
            self._forget_network()

    def _forget_network(self):
        network, self.network = getattr(self, "network", None), None
        for k in range(len(_OPEN) - 1, -1, -1):
            if network is not None and _OPEN[k] is network:
                del _OPEN[k]
                break


class _Card:
    """One process's network card: when its egress and its ingress are next free."""

    def __init__(self):
        self.lock = threading.Lock()
        self.egress_free = 0.0
        self.ingress_free = 0.0
        self.loop_locks = {}

    def write_lock(self):
        """The lock that lets one message at a time leave on the running event loop."""
        loop = asyncio.get_running_loop()
        with self.lock:
            lock = self.loop_locks.get(loop)
            if lock is None:
                lock = self.loop_locks[loop] = asyncio.Lock()
            return lock

    def sent(self, nbytes, bandwidth):
        """Book ``nbytes`` just written on the egress; the time it is free again."""
        with self.lock:
            self.egress_free = max(time.perf_counter(), self.egress_free) + nbytes / bandwidth
            return self.egress_free

    def received(self, first_byte, nbytes, bandwidth, latency):
        """Book a message whose first bytes arrived at ``first_byte``: when to hand it on."""
        with self.lock:
            start = max(first_byte, self.ingress_free)
            self.ingress_free = start + nbytes / bandwidth
            return self.ingress_free + latency


_CARD = _Card()


#: An event loop's timers fire up to a millisecond late (epoll waits whole milliseconds);
#: the last stretch of a hold yields to the loop until the moment instead.
_TIMER_SLACK = 1.1e-3


async def _sleep_until(moment):
    """Yield to the event loop until ``moment`` (``time.perf_counter()``)."""
    delay = moment - time.perf_counter()
    if delay > _TIMER_SLACK:
        await asyncio.sleep(delay - _TIMER_SLACK)
    while time.perf_counter() < moment:
        await asyncio.sleep(0)


class ShapedTCP(TCP):
    """A TCP comm whose messages wait on this process's :class:`_Card`."""

    def __init__(self, stream, local_addr, peer_addr, deserialize=True):
        super().__init__(stream, local_addr, peer_addr, deserialize)
        network = current_network()
        if network is None:
            raise RuntimeError(
                "a shaped:// comm needs the Dask configuration 'daskglm.network' "
                "(bandwidth and latency) set in this process, or a Network.local_cluster "
                "open in it")
        self.network = network
        self._bytes_read = 0
        self._first_byte = None
        read_bytes, read_into = stream.read_bytes, stream.read_into

        async def counted_read_bytes(n, *args, **kwargs):
            data = await read_bytes(n, *args, **kwargs)
            if self._first_byte is None:
                self._first_byte = time.perf_counter()
            self._bytes_read += len(data)
            return data

        async def counted_read_into(buffer, *args, **kwargs):
            n = await read_into(buffer, *args, **kwargs)
            if self._first_byte is None:
                self._first_byte = time.perf_counter()
            self._bytes_read += n
            return n

        stream.read_bytes, stream.read_into = counted_read_bytes, counted_read_into

    async def read(self, deserializers=None):
        self._bytes_read, self._first_byte = 0, None
        message = await super().read(deserializers)
        network = self.network
        await _sleep_until(_CARD.received(self._first_byte or time.perf_counter(),
                                          self._bytes_read, network.bandwidth,
                                          network.latency))
        return message

    async def write(self, msg, serializers=None, on_error="message"):
        async with _CARD.write_lock():
            await _sleep_until(_CARD.egress_free)
            nbytes = await super().write(msg, serializers, on_error)
            _CARD.sent(nbytes, self.network.bandwidth)
        return nbytes


class _ShapedConnector(TCPConnector):
    prefix = f"{SCHEME}://"
    comm_class = ShapedTCP


class _ShapedListener(TCPListener):
    prefix = f"{SCHEME}://"
    comm_class = ShapedTCP


class ShapedBackend(BaseTCPBackend):
    """The ``shaped://`` comm backend (registered on import, and as the entry point
    ``distributed.comm.backends: shaped`` so worker processes find it)."""

    _connector_class = _ShapedConnector
    _listener_class = _ShapedListener


backends.setdefault(SCHEME, ShapedBackend())
