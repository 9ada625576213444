"""Whether a deadline pays: deadline rounds against waiting rounds, measured in the fit.

A deadline round (:meth:`~daskglm.engine.Engine.reduce_by_deadline`) runs as a task round
that may start backup copies of late partitions on replicas; where no worker is late
enough, that costs more than a plain round that waits for every partition.  The guard
times both kinds in the fit itself: the first ``deadline_trials`` rounds use the
deadline (the first of them sets up the backups), the next ``waiting_trials`` wait, and
from then on the fit keeps the deadline only if
its fastest round beat the fastest waiting round (the fastest, so that one-off costs such
as copying a partition to a replica do not count against either kind).  The decision and
the figures go to the ledger's choices (``comm_.choices["deadline"]``).
"""

from __future__ import annotations

import time

__all__ = ["DeadlineGuard"]


class DeadlineGuard:
    """Times rounds of both kinds and decides once whether the deadline pays.

    Parameters
    ----------
    ledger : Ledger or None
        Where the decision is noted (``note_choice("deadline", ...)``).
    deadline_trials, waiting_trials : int
        Rounds of each kind measured before deciding.
    """

    def __init__(self, ledger=None, deadline_trials=4, waiting_trials=2):
        self.ledger = ledger
        self.deadline_trials, self.waiting_trials = deadline_trials, waiting_trials
        self.seconds = {"wait": [], "deadline": []}
        #: None until decided; then whether the rest of the fit waits.
        self.waits = None

    def next_round_waits(self) -> bool:
        """Whether the next round should wait for every partition."""
        if self.waits is not None:
            return self.waits
        if len(self.seconds["deadline"]) < self.deadline_trials:
            return False
        if len(self.seconds["wait"]) < self.waiting_trials:
            return True
        return self._decide()

    def timed(self, waits, run, *args, **kwargs):
        """``run(*args, **kwargs)``, its seconds recorded as a round of the kind ``waits``
        says."""
        started = time.perf_counter()
        result = run(*args, **kwargs)
        if self.waits is None:
            self.seconds["wait" if waits else "deadline"].append(time.perf_counter() - started)
        return result

    def _decide(self):
        waiting, deadline = min(self.seconds["wait"]), min(self.seconds["deadline"])
        self.waits = not deadline < waiting
        if self.ledger is not None:
            verdict = ("waits: the deadline does not pay here" if self.waits
                       else "keeps the deadline")
            self.ledger.note_choice(
                "deadline", "wait" if self.waits else "deadline",
                f"{verdict} (fastest of {len(self.seconds['deadline'])} deadline rounds "
                f"{deadline * 1e3:.1f} ms, of {len(self.seconds['wait'])} waiting rounds "
                f"{waiting * 1e3:.1f} ms)")
        return self.waits
