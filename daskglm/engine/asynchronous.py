"""Asynchronous verbs: results consumed as they complete, and parameter holders.

* :class:`AsCompleted` -- what :meth:`Engine.map_as_completed` returns: an iterator of
  ``(partition index, result)`` in completion order, which records ONE ledger round when
  it ends (exhausted, closed early, or failed) and reports the partitions lost with a
  worker in :attr:`AsCompleted.failed` instead of hanging on them.
* :class:`AsyncVerbs` -- the engine's verbs that make them (``map_as_completed``,
  ``parameter_holder``, ``close_holder``), mixed into :class:`~daskglm.engine.base.Engine`.
  The holders themselves, their handles and the driver's lease on them are in
  :mod:`daskglm.engine.parameter_holders`.
"""

from __future__ import annotations

import numpy as np

from ..accounting.bytemodel import nbytes
from ..accounting.kinds import Kind
from .measure import Timer
from .parameter_holders import ActorHolder, HolderLease, HolderLostError


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
            record.bytes_read = self.round_bytes_read() * len(it.yielded) // max(n, 1)
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

        On a cluster a :class:`~daskglm.engine.parameter_holders.ParameterHolder` runs as a
        Dask Actor on one worker and the handle is an
        :class:`~daskglm.engine.parameter_holders.ActorHolder`, on which the driver holds a
        :class:`~daskglm.engine.parameter_holders.HolderLease` until the holder is closed; in
        this process the handle is the holder itself.  Its traffic is written to the
        ledger by :meth:`close_holder` (or :meth:`close`).
        """
        handle = self._make_holder(np.asarray(params, dtype=np.float64))
        self._holders.append(handle)
        if isinstance(handle, ActorHolder):
            try:
                handle.lease = HolderLease(handle)
            except BaseException:
                self.close_holder(handle)
                raise
        return handle

    def close_holder(self, handle, last_stats=None):
        """Release a holder and write its traffic to the ledger: one ``push`` and one
        ``pull`` record (tasks = calls, bytes as :meth:`ParameterHolder.stats` counts them,
        ``seconds`` 0: the calls ran inside other rounds' tasks or on the driver); the
        ``push`` record carries the staleness histogram.

        Parameters
        ----------
        handle
            An open holder of this engine.
        last_stats : dict, optional
            The holder's :meth:`ParameterHolder.stats` as last seen: what is recorded
            when the holder was lost with its worker, its ``push`` record then naming
            that worker in ``holder_lost``.

        Returns
        -------
        dict or None
            The final stats (``last_stats`` when the holder was lost); None when it was
            lost and no ``last_stats`` was given (nothing is then recorded).
        """
        if not any(h is handle for h in self._holders):
            raise ValueError(f"{handle!r} is not an open holder of this engine.")
        self._holders = [h for h in self._holders if h is not handle]
        lost = None
        try:
            lease = getattr(handle, "lease", None)
            if lease is not None:
                lease.close()
                handle.lease = None
            stats = handle.stats()
        except HolderLostError:
            stats, lost = last_stats, handle.address
        finally:
            self._release_holder(handle)
        if stats is None:
            return None
        push = self.ledger.record(Kind.PUSH, stats["pushes"], stats["bytes_pushed"], 0, 0.0)
        push.staleness = dict(stats["staleness"])
        push.holder_lost = lost
        self.ledger.record(Kind.PULL, stats["pulls"], 0, stats["bytes_pulled"], 0.0)
        return stats

    def _close_holders(self):
        for handle in list(self._holders):
            self.close_holder(handle)

    def _make_holder(self, params):
        raise NotImplementedError

    def _release_holder(self, handle):
        """Let go of a holder (nothing to do in this process)."""
