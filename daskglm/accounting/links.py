"""The network a cost prediction prices messages on: latency and bandwidth of one link.

:func:`~daskglm.accounting.choice.predict_methods` prices a round's messages with a
:class:`Link`: the figures measured on the cluster at hand
(:func:`daskglm.engine.link_probe.measure_link`, once per client), the figures a user
fixed in the Dask configuration (``daskglm.link.latency`` in seconds and
``daskglm.link.bandwidth`` in bytes per second: the same choice on every run), or, in
this process with no cluster, :data:`IN_PROCESS` (nothing crosses a network).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["Link", "IN_PROCESS", "link_from_config"]


@dataclass(frozen=True)
class Link:
    """One link of the cluster's network, as the cost model sees it.

    Parameters
    ----------
    latency : float
        One-way seconds of a small message between the driver and a worker.
    bandwidth : float
        Bytes per second one process's network card sends or receives.
    nodes : int
        Worker processes: each holds a network card, and a round's broadcast and
        gather cross the driver's card once per process it calls.
    source : str
        Where the figures come from (``"measured"``, ``"configuration"``,
        ``"in process"``).
    """

    latency: float
    bandwidth: float
    nodes: int = 0
    source: str = "measured"

    def as_dict(self):
        """The figures as a plain dict (what a fitted model records)."""
        return asdict(self)

    @property
    def networked(self):
        """Whether rounds cross a network (worker processes beside the driver)."""
        return self.nodes > 0


#: Rounds in this process: no message crosses a network; a partial result still costs
#: its bytes at memory speed.
IN_PROCESS = Link(latency=0.0, bandwidth=1e9, nodes=0, source="in process")


def link_from_config(settings, nodes):
    """The :class:`Link` the configuration ``settings`` (a dict with ``latency`` and
    ``bandwidth``) fixes for ``nodes`` worker processes, or None when it fixes none."""
    if not settings or "bandwidth" not in settings:
        return None
    bandwidth, latency = float(settings["bandwidth"]), float(settings.get("latency", 0.0))
    if not bandwidth > 0 or latency < 0:
        raise ValueError(f"daskglm.link needs a bandwidth > 0 and a latency >= 0; got "
                         f"{settings!r}")
    return Link(latency, bandwidth, int(nodes), "configuration")
