"""Asynchronous verbs: results consumed as they complete, and a parameter holder.

* :class:`AsCompleted` -- what :meth:`Engine.map_as_completed` returns: an iterator of
  ``(partition index, result)`` in completion order, which records ONE ledger round when
  it ends (exhausted, closed early, or failed) and reports the partitions lost with a
  worker in :attr:`AsCompleted.failed` instead of hanging on them.
* :class:`ParameterHolder` -- a versioned parameter vector that tasks read (``pull``) and
  update (``push``) without the driver in the loop.  On a cluster it lives in one worker
  as a Dask Actor and is reached through an :class:`ActorHolder` handle; in this process
  it is its own handle (a plain object behind a lock).  Both handles pickle, so they can
  be passed to partition tasks as arguments.
* :class:`AsyncVerbs` -- the engine's verbs that create them (``map_as_completed``,
  ``parameter_holder``, ``close_holder``), mixed into :class:`~daskglm.engine.base.Engine`.

Nothing here decides anything about a fit: no solver uses these verbs yet.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from ..accounting.bytemodel import nbytes
from ..accounting.kinds import Kind
from .measure import Timer


class HolderLostError(RuntimeError):
    """The worker hosting a parameter holder was lost, and the holder's state with it."""


class ParameterHolder:
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
        delta = np.asarray(delta, dtype=np.float64)
        if delta.shape != self._params.shape:
            raise ValueError(f"delta has shape {delta.shape}; the parameters have shape "
                             f"{self._params.shape}.")
        based_on_version = int(based_on_version)
        with self._lock:
            if not 0 <= based_on_version <= self._version:
                raise ValueError(f"based_on_version must be in [0, {self._version}]; "
                                 f"got {based_on_version}.")
            staleness = self._version - based_on_version
            self._staleness[staleness] = self._staleness.get(staleness, 0) + 1
            self._params += delta
            self._version += 1
            self._pushes += 1
            self._bytes_pushed += nbytes(delta)
            return self._version

    def stats(self):
        """Traffic so far: ``{"version", "pushes", "pulls", "staleness" (a dict
        staleness -> pushes), "bytes_pushed", "bytes_pulled"}`` (bytes by
        :func:`~daskglm.accounting.bytemodel.nbytes`)."""
        with self._lock:
            return {"version": self._version, "pushes": self._pushes, "pulls": self._pulls,
                    "staleness": dict(sorted(self._staleness.items())),
                    "bytes_pushed": self._bytes_pushed, "bytes_pulled": self._bytes_pulled}

    # the in-process holder is its own handle: pickled (to a thread, never to a process)
    # it would lose its identity, so it refuses to be
    def __reduce__(self):
        raise TypeError("The in-process ParameterHolder cannot be pickled; on a cluster "
                        "use the engine's holder (an ActorHolder).")


class ActorHolder:
    """The handle of a :class:`ParameterHolder` running as a Dask Actor on one worker.

    Usable on the driver and inside tasks on any worker (it pickles to a reference to the
    actor): each call is one direct message to the holder's worker, not through the
    scheduler.  When that worker is lost, the holder's state is gone: every call raises
    :class:`HolderLostError` (Dask never recreates it: the actor is pinned to its worker).

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

    def _host_alive(self):
        """Whether the scheduler still lists the holder's worker."""
        from distributed import get_client

        try:
            return self.address in get_client().scheduler_info(n_workers=-1)["workers"]
        except Exception:  # no client to ask: only the call itself can tell
            return True

    def _call(self, method, *args):
        start = time.monotonic()
        try:
            future = getattr(self._actor, method)(*args)
            # a dead host refuses connections at once but Dask retries them for its
            # connect timeout (30 s): while a call waits, ask the scheduler every
            # ``poll`` seconds whether the holder's worker is still there
            while True:
                try:
                    return future.result(timeout=self.poll)
                except TimeoutError:
                    if not self._host_alive():
                        raise TimeoutError(f"worker {self.address} left the cluster") from None
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

    def __repr__(self):
        return f"ActorHolder(address={self.address!r})"


class AsCompleted:
    """What :meth:`Engine.map_as_completed` returns: ``(index, result)`` pairs in
    completion order, each partition at most once.

    The tasks are submitted when it is made.  Iterate it (or call ``next``); :meth:`close`
    (also on ``with`` exit, or when it is garbage collected) stops early and cancels the
    tasks whose results were not consumed.  The ledger record is written once, when the
    iteration ends for any reason (exhausted, closed, or a kernel's error raised).

    Attributes
    ----------
    yielded : list of int
        Partitions yielded so far, in completion order.
    failed : tuple of int
        Partitions whose task was lost with a worker: skipped, never yielded (a later
        round rebuilds scattered partitions).  Final once the iteration has ended.
    cancelled : tuple of int
        Partitions not yielded because the consumer stopped early.
    record : RoundRecord or None
        The ledger record, once the iteration has ended.
    """

    def __init__(self, stream, cancel, finish):
        self.yielded = []
        self.failed = ()
        self.cancelled = ()
        self.record = None
        self._failed = []
        self._stream, self._cancel, self._finish = stream, cancel, finish
        self._returned = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.record is not None:
            raise StopIteration
        try:
            for index, ok, value in self._stream:
                if ok:
                    self.yielded.append(index)
                    self._returned += nbytes(value)
                    return index, value
                self._failed.append(index)
        except BaseException:
            self.close()
            raise
        self.close()
        raise StopIteration

    def close(self):
        """Stop: cancel the unconsumed tasks and write the record (idempotent)."""
        if self.record is not None or self._finish is None:
            return
        finish, self._finish = self._finish, None
        try:
            self._cancel()
        finally:
            self.failed = tuple(sorted(self._failed))
            self.record = finish(self)

    @property
    def done(self):
        """Whether the iteration has ended (its record is written)."""
        return self.record is not None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown, a closed client
            pass


class AsyncVerbs:
    """The asynchronous verbs of :class:`~daskglm.engine.base.Engine`."""

    # asynchronous work --------------------------------------------------------------
    def map_as_completed(self, fn, *args, kind):
        """One round consumed as it completes: ``fn(part, *args)`` as one task per
        partition (on the partition's worker), yielding ``(index, result)`` in completion
        order, each partition at most once.

        Returns an :class:`~daskglm.engine.asynchronous.AsCompleted` iterator; the tasks are
        submitted now.  Stopping early (``close()``, ``break`` inside ``with``, or dropping
        the iterator) cancels the tasks not consumed.  A partition whose task is lost with a
        worker is skipped and listed in ``failed`` (never a hang): scattered partitions are
        rebuilt by the next round, Dask recomputes those with lineage (they are then
        yielded late, not failed).  A kernel's error is raised.  ONE ledger record is written
        when the iteration ends: ``P`` tasks, the arguments sent ``P`` times, the bytes of
        the results yielded, ``dropped`` = the partitions not yielded (failed or cancelled).
        """
        from .asynchronous import AsCompleted

        self._recover()  # partitions lost in an earlier round are rebuilt first
        timer = Timer().__enter__()
        probe = self._probe(kind).__enter__()
        n = self.n_partitions
        try:
            stream, cancel = self._submit_as_completed(fn, args, probe)
        except BaseException:
            probe.__exit__(None, None, None)
            raise

        def finish(it):
            probe.__exit__(None, None, None)
            timer.__exit__()
            done = set(it.yielded) | set(it.failed)
            it.cancelled = tuple(i for i in range(n) if i not in done)
            record = self.ledger.record(kind, n, n * nbytes(args), it._returned, timer.seconds,
                                        partitions=n, groups=n, probe=probe)
            record.dropped = tuple(sorted(set(it.failed) | set(it.cancelled)))
            if self.cache == "none":
                record.bytes_read = self.data_bytes * len(it.yielded) // max(n, 1)
            return record

        return AsCompleted(stream, cancel, finish)

    def _submit_as_completed(self, fn, args, probe):
        """Submit one task per partition; return ``(stream, cancel)``: an iterator of
        ``(index, ok, result)`` in completion order (``ok`` False for a partition lost
        with a worker) and a function releasing what is not consumed."""
        raise NotImplementedError

    def parameter_holder(self, params):
        """A long-lived parameter holder, usable on the driver and inside partition tasks
        (pass the handle as an argument of the kernel): ``pull() -> (version, params)``,
        ``push(delta, based_on_version) -> version``, ``stats()``.

        On a cluster a :class:`~daskglm.engine.asynchronous.ParameterHolder` runs as a
        Dask Actor on one worker and the handle is an
        :class:`~daskglm.engine.asynchronous.ActorHolder`; in this process the handle is
        the holder itself.  Its traffic is written to the ledger by :meth:`close_holder`
        (or :meth:`close`).
        """
        handle = self._make_holder(np.asarray(params, dtype=np.float64))
        self._holders.append(handle)
        return handle

    def close_holder(self, handle):
        """Release a holder and write its traffic to the ledger: one ``push`` and one
        ``pull`` record (tasks = calls, bytes as :meth:`ParameterHolder.stats` counts them,
        ``seconds`` 0: the calls ran inside other rounds' tasks or on the driver); the
        ``push`` record carries the staleness histogram.  Returns the final stats, or None
        when the holder was lost with its worker (its traffic is then not recorded).
        """
        from .asynchronous import HolderLostError

        if not any(h is handle for h in self._holders):
            raise ValueError(f"{handle!r} is not an open holder of this engine.")
        self._holders = [h for h in self._holders if h is not handle]
        try:
            stats = handle.stats()
        except HolderLostError:
            stats = None
        finally:
            self._release_holder(handle)
        if stats is None:
            return None
        push = self.ledger.record(Kind.PUSH, stats["pushes"], stats["bytes_pushed"], 0, 0.0)
        push.staleness = dict(stats["staleness"])
        self.ledger.record(Kind.PULL, stats["pulls"], 0, stats["bytes_pulled"], 0.0)
        return stats

    def _close_holders(self):
        for handle in list(self._holders):
            self.close_holder(handle)

    def _make_holder(self, params):
        raise NotImplementedError

    def _release_holder(self, handle):
        """Let go of a holder (nothing to do in this process)."""
