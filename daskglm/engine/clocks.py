"""Clocks on a parameter holder, for parameter-server SGD (``solver="async"``).

Tasks ``join`` a run of the holder (each gets a slot with a clock: the updates it has
pushed), read and update through ``pull_for`` and ``push_from``, and with a staleness
bound ``s`` wait their turn (``wait_turn``): a task whose clock is more than ``s`` ahead
of the slowest other running task waits, polling the holder, and the seconds are
counted.  The clock lag of every push (how far its task was ahead when it read) goes
into a histogram, which therefore never exceeds ``s``.  A task that joins late starts at
the slowest running clock and one that leaves (or whose worker is lost, see
``retire_workers``) stops counting, so no task ever waits for one that is gone.  Nor does
any task work for a driver that is gone: the driver renews a lease on the holder
(``renew``, from :class:`~daskglm.engine.parameter_holders.HolderLease`), and once it lapses
every call of a task answers ``stop``.

:class:`ClockedHolder` holds these methods for
:class:`~daskglm.engine.parameter_holders.ParameterHolder` (the same object on the driver, in
threads, or as a Dask Actor on a worker) and :class:`ActorClocks` their calls through an
:class:`~daskglm.engine.parameter_holders.ActorHolder` handle.  The driver's side (the
holder's checkpoints and rebuilds, its ledger records with the clocks' histograms) is
:mod:`daskglm.engine.parameter_server`.
"""

from __future__ import annotations

import time

import numpy as np

from ..accounting.bytemodel import nbytes
from .dask_compat import cluster_workers

__all__ = ["ClockedHolder", "ActorClocks", "Run", "WAIT_FIRST", "WAIT_LONGEST"]


class ClockedHolder:
    """The clock methods of :class:`~daskglm.engine.parameter_holders.ParameterHolder` (a mixin:
    it uses the holder's lock, parameters and counters)."""

    def renew(self, seconds):
        """Renew the driver's lease for ``seconds``: once that long passes without a
        renewal, every task of the run is told to stop (the ``stop`` of
        :meth:`pull_for`, :meth:`push_from`, :meth:`may_proceed`, :meth:`report`).
        Before the first renewal there is no lease."""
        seconds = float(seconds)
        if not seconds > 0:
            raise ValueError(f"seconds must be > 0; got {seconds!r}.")
        with self._lock:
            self._lease_until = time.monotonic() + seconds

    def _stop_now(self, run):
        lease = self._lease_until
        return run.stop_now() or (lease is not None and time.monotonic() > lease)

    def start_run(self, rows_target, staleness=None):
        """Begin a run of tasks (one generation of parameter-server SGD).

        Clocks start afresh: every task that :meth:`join` s gets one.  The run asks its
        tasks to stop (the ``stop`` of :meth:`pull_for` and :meth:`push_from`) once the
        rows they report reach ``rows_target``, or after :meth:`stop`.

        Parameters
        ----------
        rows_target : int
            Rows to process in the run, over all tasks.
        staleness : int or None
            The bound :meth:`may_proceed` enforces (None: none).
        """
        if staleness is not None and not (isinstance(staleness, (int, np.integer))
                                          and staleness >= 0):
            raise ValueError(f"staleness must be None or an integer >= 0; got {staleness!r}.")
        with self._lock:
            self._run = Run(int(rows_target), None if staleness is None else int(staleness))

    def stop(self):
        """Ask the tasks of the current run to stop at their next call."""
        with self._lock:
            self._run.stopped = True

    def join(self, address=None):
        """A new slot (clock) in the current run, starting at the slowest running clock
        (so that a late task never holds the others back); ``address`` names the worker
        the task runs on, for :meth:`retire_workers`."""
        with self._lock:
            run = self._run
            running = [run.clocks[s] for s in run.running]
            slot = len(run.clocks)
            run.clocks.append(min(running) if running else 0)
            run.pulled_lag.append(0)
            run.addresses.append(address)
            run.running.add(slot)
            return slot

    def leave(self, slot):
        """The task of ``slot`` is done: its clock no longer holds others back."""
        with self._lock:
            self._run.running.discard(int(slot))

    def retire_workers(self, alive):
        """Slots of tasks on workers not in ``alive`` stop counting (their worker was lost);
        returns the slots retired."""
        alive = set(alive)
        with self._lock:
            run = self._run
            gone = [s for s in sorted(run.running)
                    if run.addresses[s] is not None and run.addresses[s] not in alive]
            run.running.difference_update(gone)
            return gone

    def _slowest_other(self, run, slot):
        others = [run.clocks[s] for s in run.running if s != slot]
        return min(others) if others else run.clocks[slot]

    def may_proceed(self, slot):
        """``(whether the task of slot may start its next update, stop)``: with a bound
        ``s``, whether its clock is at most ``s`` ahead of the slowest other running
        task."""
        with self._lock:
            run = self._run
            stop = self._stop_now(run)
            if run.staleness is None or stop:
                return True, stop
            return run.clocks[slot] - self._slowest_other(run, slot) <= run.staleness, stop

    def pull_for(self, slot):
        """:meth:`pull` for the task of ``slot``: ``(version, params, running tasks,
        stop)``; remembers how far ahead of the slowest other task the slot reads."""
        with self._lock:
            run = self._run
            slot = int(slot)
            run.pulled_lag[slot] = max(0, run.clocks[slot] - self._slowest_other(run, slot))
            self._pulls += 1
            self._bytes_pulled += nbytes(self._params)
            return self._version, self._params.copy(), len(run.running), self._stop_now(run)

    def push_from(self, slot, delta, based_on_version, rows=0, loss=0.0, weight=0.0,
                  penalty=0.0, seconds_waiting=0.0):
        """:meth:`push` for the task of ``slot``, advancing its clock by one.

        Also records the push's clock staleness (how far the slot's clock was ahead of
        the slowest other running task when it last pulled, 0 when it was not ahead), the progress the task
        reports (``rows`` processed, sums of their ``loss``, ``weight`` and weighted
        ``penalty``) and the seconds it waited at the bound.  Returns ``(version, stop)``.
        """
        delta = self._checked_delta(delta)
        with self._lock:
            run = self._run
            slot = int(slot)
            version = self._apply(delta, int(based_on_version))
            lag = run.pulled_lag[slot]
            self._clock_staleness[lag] = self._clock_staleness.get(lag, 0) + 1
            run.clocks[slot] += 1
            self._note(run, rows, loss, weight, penalty, seconds_waiting)
            return version, self._stop_now(run)

    def report(self, rows=0, loss=0.0, weight=0.0, penalty=0.0, seconds_waiting=0.0):
        """Progress without an update (a task's last rows); returns ``stop``."""
        with self._lock:
            self._note(self._run, rows, loss, weight, penalty, seconds_waiting)
            return self._stop_now(self._run)

    def _note(self, run, rows, loss, weight, penalty, seconds_waiting):
        run.rows += int(rows)
        run.loss += float(loss)
        run.weight += float(weight)
        run.penalty += float(penalty)
        if seconds_waiting > 0:
            self._seconds_waiting += float(seconds_waiting)
            self._waits += 1

    def progress(self):
        """The current run: ``{"rows", "loss", "weight", "penalty", "version",
        "running"}``."""
        with self._lock:
            return self._progress()

    def _progress(self):
        run = self._run
        return {"rows": run.rows, "loss": run.loss, "weight": run.weight,
                "penalty": run.penalty, "version": self._version, "running": len(run.running)}

    def checkpoint(self):
        """:meth:`progress`, :meth:`pull` and :meth:`stats` in one call (counted as a pull):
        ``(progress, version, params, stats)``, what the driver keeps to rebuild a holder
        lost with its worker."""
        with self._lock:
            self._pulls += 1
            self._bytes_pulled += nbytes(self._params)
            return self._progress(), self._version, self._params.copy(), self._stats()

    def wait_turn(self, slot, timeout=None):
        """Wait until :meth:`may_proceed` (polling); ``(seconds waited, stop)``.

        Raises TimeoutError after ``timeout`` seconds (None: no limit).
        """
        return _wait_turn(self, slot, timeout)


class Run:
    """The clocks and progress of one run of tasks on a holder."""

    def __init__(self, rows_target, staleness):
        self.rows_target = rows_target
        self.staleness = staleness
        self.stopped = False
        self.clocks, self.pulled_lag, self.addresses = [], [], []
        self.running = set()
        self.rows = 0
        self.loss = self.weight = self.penalty = 0.0

    def stop_now(self):
        return self.stopped or (self.rows_target > 0 and self.rows >= self.rows_target)


#: First and longest pause between two checks of a task waiting at the staleness bound.
WAIT_FIRST, WAIT_LONGEST = 0.0005, 0.02


def _wait_turn(holder, slot, timeout=None, every=None, on_check=None):
    """Poll ``holder.may_proceed(slot)`` with growing pauses until it allows the slot to
    go on or says stop; ``on_check()`` runs every ``every`` seconds of waiting.  Returns
    ``(seconds waited, stop)``; raises TimeoutError after ``timeout`` seconds."""
    ok, stop = holder.may_proceed(slot)
    if ok:
        return 0.0, stop
    start = last_check = time.monotonic()
    pause = WAIT_FIRST
    while not ok:
        time.sleep(pause)
        pause = min(2 * pause, WAIT_LONGEST)
        now = time.monotonic()
        if timeout is not None and now - start > timeout:
            raise TimeoutError(f"slot {slot} waited more than {timeout} s at the staleness "
                               f"bound")
        if on_check is not None and now - last_check > every:
            on_check()
            last_check = now
        ok, stop = holder.may_proceed(slot)
    return time.monotonic() - start, stop


class ActorClocks:
    """The clock methods of an :class:`~daskglm.engine.parameter_holders.ActorHolder` handle,
    one message to the holder each (a mixin: it uses the handle's ``_call``)."""

    def renew(self, seconds):
        """See :meth:`ParameterHolder.renew`."""
        return self._call("renew", seconds)

    def start_run(self, rows_target, staleness=None):
        """See :meth:`ParameterHolder.start_run`."""
        return self._call("start_run", rows_target, staleness)

    def stop(self):
        """See :meth:`ParameterHolder.stop`."""
        return self._call("stop")

    def join(self, address=None):
        """:meth:`ParameterHolder.join`, naming the worker this runs on."""
        if address is None:
            address = _current_worker()
        return self._call("join", address)

    def leave(self, slot):
        """See :meth:`ParameterHolder.leave`."""
        return self._call("leave", slot)

    def retire_workers(self, alive):
        """See :meth:`ParameterHolder.retire_workers`."""
        return self._call("retire_workers", list(alive))

    def may_proceed(self, slot):
        """See :meth:`ParameterHolder.may_proceed`."""
        return self._call("may_proceed", slot)

    def pull_for(self, slot):
        """See :meth:`ParameterHolder.pull_for`."""
        return self._call("pull_for", slot)

    def push_from(self, slot, delta, based_on_version, rows=0, loss=0.0, weight=0.0,
                  penalty=0.0, seconds_waiting=0.0):
        """See :meth:`ParameterHolder.push_from`."""
        return self._call("push_from", slot, delta, based_on_version, rows, loss, weight,
                          penalty, seconds_waiting)

    def report(self, rows=0, loss=0.0, weight=0.0, penalty=0.0, seconds_waiting=0.0):
        """See :meth:`ParameterHolder.report`."""
        return self._call("report", rows, loss, weight, penalty, seconds_waiting)

    def progress(self):
        """See :meth:`ParameterHolder.progress`."""
        return self._call("progress")

    def checkpoint(self):
        """See :meth:`ParameterHolder.checkpoint`."""
        return self._call("checkpoint")

    def wait_turn(self, slot, timeout=None):
        """Wait at the staleness bound, one message per check (see
        :meth:`ParameterHolder.wait_turn`).  Every :attr:`poll` seconds of waiting the
        slots of workers that left the cluster are retired, so that a lost worker never
        holds the others back."""
        return _wait_turn(self, slot, timeout, self.poll, self._retire_lost)

    def _retire_lost(self):
        from distributed import get_client

        try:
            alive = cluster_workers(get_client())
        except Exception:  # no client to ask: nothing to retire
            return
        self.retire_workers(alive)


def _current_worker():
    """The address of the worker running this task, or None outside a worker."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return None
