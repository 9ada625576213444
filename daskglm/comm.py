"""The communication ledger: one record per engine round.

Only the engine writes here.  A round is one map over the partitions followed by the
fixed-order tree reduction (or a gather of one result per partition).  Bytes are modelled
from the sizes of the objects actually sent and returned: the broadcast arguments go to
every partition's task, and every task's result travels up the tree.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

__all__ = ["RoundRecord", "CommLedger", "nbytes"]


def nbytes(obj) -> int:
    """Payload bytes of ``obj``: arrays, numbers and containers or dataclasses of them."""
    if obj is None:
        return 0
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (int, float, np.number, bool)):
        return 8
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(item) for item in obj)
    if isinstance(obj, dict):
        return sum(nbytes(item) for item in obj.values())
    if dataclasses.is_dataclass(obj):
        return sum(nbytes(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    data = getattr(obj, "data", None)
    if isinstance(data, np.ndarray):  # scipy.sparse / pydata sparse
        return int(data.nbytes) + sum(
            int(getattr(obj, name).nbytes)
            for name in ("indices", "indptr", "coords")
            if isinstance(getattr(obj, name, None), np.ndarray)
        )
    return 0


@dataclass
class RoundRecord:
    """One engine round.

    Attributes
    ----------
    kind : str
        What the round computed: ``"validate"``, ``"gradient"``, ``"gram"``, ``"hessian"``...
    tasks : int
        Tasks run: one per partition plus the tree's combine tasks.
    bytes_sent : int
        Modelled bytes sent to the workers (broadcast arguments times partitions).
    bytes_returned : int
        Modelled bytes of the partial results moved up the tree and back to the driver.
    seconds : float
        Wall time of the round, as seen by the driver.
    """

    kind: str
    tasks: int
    bytes_sent: int
    bytes_returned: int
    seconds: float


class CommLedger:
    """The rounds of one fit, in order."""

    def __init__(self):
        self.records: list[RoundRecord] = []

    def record(self, kind, tasks, bytes_sent, bytes_returned, seconds):
        self.records.append(RoundRecord(kind, tasks, bytes_sent, bytes_returned, seconds))

    @property
    def rounds(self) -> int:
        """Number of rounds."""
        return len(self.records)

    def count(self, kind) -> int:
        """Number of rounds of one kind."""
        return sum(1 for r in self.records if r.kind == kind)

    @property
    def bytes_modelled(self) -> int:
        """Total modelled bytes, both directions."""
        return sum(r.bytes_sent + r.bytes_returned for r in self.records)

    @property
    def seconds(self) -> float:
        """Total wall time spent in rounds."""
        return sum(r.seconds for r in self.records)

    def to_dict(self):
        """Totals and the per-round records as plain Python objects."""
        return {
            "rounds": self.rounds,
            "bytes_modelled": self.bytes_modelled,
            "seconds": self.seconds,
            "records": [dataclasses.asdict(r) for r in self.records],
        }

    def __repr__(self):
        kinds = {}
        for r in self.records:
            kinds.setdefault(r.kind, [0, 0, 0.0])
            kinds[r.kind][0] += 1
            kinds[r.kind][1] += r.bytes_sent + r.bytes_returned
            kinds[r.kind][2] += r.seconds
        lines = [f"{'kind':<12}{'rounds':>8}{'bytes':>14}{'seconds':>10}"]
        for kind, (n, b, s) in kinds.items():
            lines.append(f"{kind:<12}{n:>8}{b:>14,}{s:>10.3f}")
        lines.append(f"{'total':<12}{self.rounds:>8}{self.bytes_modelled:>14,}{self.seconds:>10.3f}")
        return "\n".join(lines)


class Timer:
    """Wall-clock stopwatch for a round."""

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
