"""The driver's side of parameter-server SGD (``solver="async"``).

:class:`ParameterServer` is the holder (:mod:`daskglm.engine.parameter_holders`), a
checkpoint of its parameters after every generation, and the rebuild of a holder lost
with its worker from that checkpoint; :func:`close_parameter_server` writes the holder's
ledger records with the clocks' histograms (:mod:`daskglm.engine.clocks`) and waits.
"""

from __future__ import annotations

import warnings

import numpy as np

from .parameter_holders import HolderLostError

__all__ = ["ParameterServer", "close_parameter_server", "MAX_HOLDER_REBUILDS"]

#: Times a parameter-server fit rebuilds a holder lost with its worker before it gives up.
MAX_HOLDER_REBUILDS = 3


def _no_traffic(version):
    """The stats of a holder at ``version`` that no call has reached yet."""
    return {"version": int(version), "pushes": 0, "pulls": 0, "staleness": {},
            "bytes_pushed": 0, "bytes_pulled": 0, "clock_staleness": {},
            "seconds_waiting": 0.0, "waits": 0}


def close_parameter_server(engine, handle, last_stats=None):
    """:meth:`Engine.close_holder`, with the clocks' records: the ``push`` record also
    carries ``clock_staleness`` (the histogram of clock lags) and ``seconds_blocked``
    (seconds tasks waited at the staleness bound).  Returns the holder's final stats
    (``last_stats`` when it was lost with its worker), or None when it was lost and
    ``last_stats`` is None."""
    stats = engine.close_holder(handle, last_stats)
    if stats is not None:
        push = engine.ledger.records[-2]
        push.clock_staleness = dict(stats["clock_staleness"])
        push.seconds_blocked = float(stats["seconds_waiting"])
    return stats


class ParameterServer:
    """The driver's side of parameter-server SGD: the holder, its checkpoint, and the
    rebuild of a holder lost with its worker.

    The driver takes a :meth:`checkpoint` after every generation (one call: the run's
    progress, the parameters and the holder's traffic).  When the holder's worker is lost,
    :meth:`rebuild` writes the lost holder's traffic up to that checkpoint to the ledger
    (its ``push`` record names the worker in ``holder_lost``), makes a new holder from the
    checkpoint's parameters, continuing its versions (so the step rule goes on where it
    was), on a worker still there, and warns with a RuntimeWarning; the updates pushed
    after the checkpoint are lost.

    Parameters
    ----------
    engine : Engine
    params : ndarray
        The starting parameters.
    """

    def __init__(self, engine, params):
        self.engine = engine
        self.params = np.array(params, dtype=np.float64, copy=True)
        self.version = 0
        self.stats = _no_traffic(0)
        #: one sentence per rebuild: the lost worker and the version rebuilt from
        self.rebuilds = []
        self.holder = engine.parameter_holder(self.params)

    def checkpoint(self):
        """The run's progress (see :meth:`ClockedHolder.progress`), keeping the parameters
        and the traffic for a rebuild."""
        progress, self.version, self.params, self.stats = self.holder.checkpoint()
        return progress

    def alive(self):
        """Whether the holder still answers (then the checkpoint is renewed)."""
        try:
            self.checkpoint()
        except HolderLostError:
            return False
        return True

    def rebuild(self, error):
        """Replace the lost holder by one made from the checkpoint on a worker still there.

        Parameters
        ----------
        error : HolderLostError
            What the fit met; raised again after :data:`MAX_HOLDER_REBUILDS` rebuilds, or
            without a cluster.
        """
        lost = getattr(self.holder, "address", None)
        if lost is None or len(self.rebuilds) >= MAX_HOLDER_REBUILDS:
            raise error
        close_parameter_server(self.engine, self.holder, self.stats)
        self.holder = self.engine.parameter_holder(self.params)
        self.holder.resume(self.version)
        self.stats = _no_traffic(self.version)
        self.rebuilds.append(f"worker {lost} was lost with the parameter holder; a new "
                             f"holder on worker {self.holder.address} went on from the "
                             f"parameters of version {self.version}, the driver's last "
                             f"checkpoint (the updates pushed after it were lost)")
        warnings.warn(f"A parameter-server fit lost a worker: {self.rebuilds[-1]}.",
                      RuntimeWarning, stacklevel=3)

    def close(self):
        """Close the holder and write its traffic to the ledger; its final stats."""
        return close_parameter_server(self.engine, self.holder, self.stats)
