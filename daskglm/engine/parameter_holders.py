"""Parameter holders: a versioned parameter vector that tasks read and update without
the driver in the loop.

* :class:`ParameterHolder` -- the holder: tasks read it (``pull``) and update it
  (``push``).  On a cluster it lives in one worker as a Dask Actor and is reached through
  an :class:`ActorHolder` handle; in this process it is its own handle (a plain object
  behind a lock).  Both handles pickle, so they can be passed to partition tasks as
  arguments.  The engine makes them (:meth:`~daskglm.engine.Engine.parameter_holder`,
  :mod:`daskglm.engine.asynchronous`).
* Clocks on the holder, for parameter-server SGD (``solver="async"``): tasks ``join`` a
  run, read and update through :meth:`ParameterHolder.pull_for` and
  :meth:`ParameterHolder.push_from`, and with a staleness bound wait their turn
  (:meth:`ParameterHolder.wait_turn`); see :mod:`daskglm.engine.clocks`.
* :class:`HolderLease` -- the driver's lease on a holder of a cluster, renewed from a
  thread while the holder is open: once the driver stops renewing it (its process was
  killed), the holder tells the tasks of its run to stop.  A task whose call to a holder
  gets no answer asks the scheduler, every :attr:`ActorHolder.poll` seconds, whether the
  holder is still there (:func:`actor_alive`): a holder released with its driver's client
  or lost with its worker ends the task with :class:`HolderLostError` instead of a wait
  without end.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from ..accounting.bytemodel import nbytes
from ..compute.sparse_vectors import SparseGradient
from .clocks import ActorClocks, ClockedHolder, Run

__all__ = ["ParameterHolder", "ActorHolder", "HolderLease", "HolderLostError", "actor_alive",
           "LEASE_SECONDS", "RENEW_EVERY"]

#: Seconds a holder's lease lasts without a renewal from the driver.
LEASE_SECONDS = 5.0

#: Seconds between two renewals of the lease by the driver.
RENEW_EVERY = 1.0


class HolderLostError(RuntimeError):
    """The worker hosting a parameter holder was lost, and the holder's state with it."""


class ParameterHolder(ClockedHolder):
    """A versioned parameter vector: ``pull() -> (version, params)``,
    ``push(delta, based_on_version) -> version``.

    ``push`` adds ``delta`` to the parameters and increments the version; the staleness of
    the push, ``version - based_on_version`` (pushes applied since the pusher's pull), is
    counted in a histogram.  Thread safe (one lock); the same class runs as the Dask
    Actor on a cluster and as the in-process holder.
    """

    def __init__(self, params):
        self._lock = threading.Lock()
        self._params = np.array(params, dtype=np.float64, copy=True)
        self._version = 0
        self._pushes = self._pulls = 0
        self._bytes_pushed = self._bytes_pulled = 0
        self._staleness = {}
        self._run = Run(0, None)
        self._clock_staleness = {}
        self._seconds_waiting = 0.0
        self._waits = 0
        self._lease_until = None

    def resume(self, version):
        """Continue the versions of a holder this one replaces: the next push makes version
        ``version + 1``.  Only before the first push."""
        version = int(version)
        if version < 0:
            raise ValueError(f"version must be >= 0; got {version}.")
        with self._lock:
            if self._pushes:
                raise ValueError("resume() must come before the first push.")
            self._version = version

    def pull(self):
        """``(version, a copy of the parameters)``."""
        with self._lock:
            self._pulls += 1
            self._bytes_pulled += nbytes(self._params)
            return self._version, self._params.copy()

    def push(self, delta, based_on_version):
        """Apply ``params += delta``; return the new version.

        ``based_on_version`` is the version the pusher computed ``delta`` from (from its
        last :meth:`pull`); ``version - based_on_version`` is recorded as the push's
        staleness.
        """
        delta = self._checked_delta(delta)
        based_on_version = int(based_on_version)
        with self._lock:
            return self._apply(delta, based_on_version)

    def _checked_delta(self, delta):
        if isinstance(delta, SparseGradient):
            if delta.size != self._params.shape[0]:
                raise ValueError(f"delta has size {delta.size}; the parameters have shape "
                                 f"{self._params.shape}.")
            return delta
        delta = np.asarray(delta, dtype=np.float64)
        if delta.shape != self._params.shape:
            raise ValueError(f"delta has shape {delta.shape}; the parameters have shape "
                             f"{self._params.shape}.")
        return delta

    def _apply(self, delta, based_on_version):
        """``params += delta`` under the lock; the new version."""
        if not 0 <= based_on_version <= self._version:
            raise ValueError(f"based_on_version must be in [0, {self._version}]; "
                             f"got {based_on_version}.")
        staleness = self._version - based_on_version
        self._staleness[staleness] = self._staleness.get(staleness, 0) + 1
        if isinstance(delta, SparseGradient):
            self._params[delta.indices] += delta.values
        else:
            self._params += delta
        self._version += 1
        self._pushes += 1
        self._bytes_pushed += nbytes(delta)
        return self._version

    def stats(self):
        """Traffic so far: ``{"version", "pushes", "pulls", "staleness" (a dict
        staleness -> pushes), "bytes_pushed", "bytes_pulled", "clock_staleness" (a dict
        clock lag -> pushes, for pushes of :meth:`push_from`), "seconds_waiting" (at the
        staleness bound, summed over tasks), "waits" (turns that had to wait)}`` (bytes
        by :func:`~daskglm.accounting.bytemodel.nbytes`)."""
        with self._lock:
            return self._stats()

    def _stats(self):
        return {"version": self._version, "pushes": self._pushes, "pulls": self._pulls,
                "staleness": dict(sorted(self._staleness.items())),
                "bytes_pushed": self._bytes_pushed, "bytes_pulled": self._bytes_pulled,
                "clock_staleness": dict(sorted(self._clock_staleness.items())),
                "seconds_waiting": self._seconds_waiting, "waits": self._waits}

    # the in-process holder is its own handle: pickled (to a thread, never to a process)
    # it would lose its identity, so it refuses to be
    def __reduce__(self):
        raise TypeError("The in-process ParameterHolder cannot be pickled; on a cluster "
                        "use the engine's holder (an ActorHolder).")


class ActorHolder(ActorClocks):
    """The handle of a :class:`ParameterHolder` running as a Dask Actor on one worker.

    Usable on the driver and inside tasks on any worker (it pickles to a reference to the
    actor): each call is one direct message to the holder's worker, not through the
    scheduler.  When that worker is lost, the holder's state is gone: every call raises
    :class:`HolderLostError` (Dask never recreates it: the actor is pinned to its worker).
    So it does once the holder was released (its driver's client left the cluster): Dask
    answers a call to a released actor never, so a call that waits asks the scheduler
    every :attr:`poll` seconds whether the holder is still on its worker.

    Attributes
    ----------
    address : str
        The worker hosting the holder.
    timeout : float or None
        Seconds a call may take before it is taken for a lost holder (None: no limit;
        a call to a holder whose worker left the cluster fails within about
        :attr:`poll` seconds anyway).
    """

    #: Seconds between checks, while a call waits, that the holder's worker is alive.
    poll = 1.0

    def __init__(self, actor, address, timeout=None):
        self._actor = actor
        self.address = address
        self.timeout = None if timeout is None else float(timeout)
        self.lease = None  # the driver's HolderLease, never pickled

    def __reduce__(self):
        return (ActorHolder, (self._actor, self.address, self.timeout))

    def _call(self, method, *args):
        start = time.monotonic()
        try:
            future = getattr(self._actor, method)(*args)
            # a dead host refuses connections at once but Dask retries them for its
            # connect timeout (30 s), and a released actor never answers: while a call
            # waits, ask the scheduler every ``poll`` seconds whether the holder is there
            while True:
                try:
                    return future.result(timeout=self.poll)
                except TimeoutError:
                    if not actor_alive(self._actor.key, self.address):
                        raise TimeoutError(f"the holder is no longer on worker "
                                           f"{self.address} (the worker left the cluster, "
                                           f"or the holder's client did)") from None
                    if self.timeout is not None and time.monotonic() - start > self.timeout:
                        raise
        except (ValueError, TypeError):  # the holder's own argument checks
            raise
        except Exception as exc:
            raise HolderLostError(
                f"The parameter holder on worker {self.address} is unreachable (its worker "
                f"was lost): {type(exc).__name__}: {exc}.  Its parameters cannot be "
                f"recovered; start a new holder from the last pulled parameters."
            ) from exc

    def pull(self):
        """``(version, params)`` from the holder (see :meth:`ParameterHolder.pull`)."""
        return self._call("pull")

    def push(self, delta, based_on_version):
        """``params += delta`` on the holder; the new version (see :meth:`ParameterHolder.push`)."""
        return self._call("push", delta, based_on_version)

    def stats(self):
        """The holder's traffic (see :meth:`ParameterHolder.stats`)."""
        return self._call("stats")

    def resume(self, version):
        """See :meth:`ParameterHolder.resume`."""
        return self._call("resume", version)

    def __repr__(self):
        return f"ActorHolder(address={self.address!r})"


def actor_alive(key, address):
    """Whether the scheduler lists worker ``address`` as holding the actor of ``key``.

    False once the actor was released (the client that made it left) or its worker was
    lost.  One ``who_has`` call to the scheduler, from the driver or from a task (through
    the worker's client); True when there is no client to ask.

    Parameters
    ----------
    key : str
        The actor's key.
    address : str
        The worker the actor was made on.

    Returns
    -------
    bool
    """
    from distributed import Future, get_client

    try:
        client = get_client()
        future = Future(key, client)
        try:
            holders = client.who_has([future]).get(key, ())
        finally:
            future.release()
    except Exception:  # no client to ask: only the call itself can tell
        return True
    return address in holders


class HolderLease:
    """The driver's lease on a holder of a cluster, renewed from a daemon thread.

    Made by :meth:`AsyncVerbs.parameter_holder`: it renews the lease for ``seconds``
    every ``every`` seconds until :meth:`close`.  The holder tells the tasks of its run to
    stop once the lease has lapsed (see
    :meth:`~daskglm.engine.clocks.ClockedHolder.renew`), so that tasks never work on for
    a driver that is gone.  A renewal that fails is tried again at the next turn: a lost
    holder is the fit's to meet, in its own calls.

    Parameters
    ----------
    handle : ActorHolder
    seconds : float, optional
        How long one renewal lasts (default :data:`LEASE_SECONDS`).
    every : float, optional
        Seconds between two renewals (default :data:`RENEW_EVERY`).
    """

    def __init__(self, handle, seconds=None, every=None):
        self.handle = handle
        self.seconds = float(LEASE_SECONDS if seconds is None else seconds)
        self.every = float(RENEW_EVERY if every is None else every)
        self._stop = threading.Event()
        handle.renew(self.seconds)
        self._thread = threading.Thread(target=self._renew, name="daskglm-holder-lease",
                                        daemon=True)
        self._thread.start()

    def _renew(self):
        while not self._stop.wait(self.every):
            try:
                self.handle.renew(self.seconds)
            except Exception:  # noqa: BLE001 - a lost holder: the fit's own calls say so
                continue

    def close(self):
        """Stop renewing (the lease then lapses after at most ``seconds``)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=self.every + ActorHolder.poll + 1.0)
