"""One engine round's record: :class:`RoundRecord`, what its partials keep local
(:func:`kept_local`) and its timings from its tasks' times (:func:`round_timing`).

A fit's rounds are kept in order by its :class:`~daskglm.accounting.ledger.CommReport`,
whose module says what is modelled, what is measured and how.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .bytemodel import top_partials, tree_depth

__all__ = ["RoundRecord", "kept_local", "round_timing"]


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
        Modelled payload sent to the workers (broadcast arguments times partitions, plus
        per-partition items).
    bytes_returned : int
        Modelled payload of the partial results moved up the tree and back to the driver.
    seconds : float
        Wall time of the round, as seen by the driver.
    partitions : int
        Partitions the round mapped over.
    groups : int
        Tasks the partitions ran in: one per worker thread on a cluster (all the
        partitions a thread holds, in one task), one per partition in this process.
    split_every : int or None
        Fan-in of the reduction tree; None for a gather round (``map``).
    bytes_overhead : int
        Modelled control traffic Dask adds: ``TASK_BYTES`` per task on a cluster, 0 in
        this process.
    bytes_kept_local : int
        Modelled payload of partials combined on the worker that computed them, so never
        sent (:func:`kept_local`); 0 in this process, where the model counts every
        partial as a worker on its own would.
    bytes_measured : int or None
        Bytes measured from Dask's counters: the sum of the three below.  0 in this
        process; None until measured.
    bytes_submitted, bytes_dispatched, bytes_transferred : int or None
        Client to scheduler; scheduler streams to workers and clients; workers' answers to
        data requests (see the module docstring).
    bytes_read : int
        Bytes read from storage by the round (counted apart from network traffic).
    seconds_compute : float or None
        Sum over the round's tasks of their compute time.
    seconds_waiting : float or None
        Thread-seconds worker threads spent idle waiting for the round's slowest
        partition (see the module docstring).
    seconds_span : float or None
        From the start of the round's first partition task to the end of its last one.
    seconds_tree : float or None
        From the end of the last partition task to the end of the last combine task: the
        time the combine tasks on the workers added (distributed tree rounds with
        combine tasks only; the driver's sum of the top partials is not in it).
    transfers : int or None
        Data requests the workers answered for the round (0 in this process).
    seconds_transferring : float or None
        Their summed durations, from the workers' transfer logs: sending the data and
        receiving the acknowledgement, so a round trip each.
    dropped : tuple of int or None
        Deadline rounds (``reduce_by_deadline``): the partitions whose result did not
        arrive in time and was left out of the sum; None for other rounds.
    backups : tuple of int or None
        Deadline rounds on a cluster: the partitions that also ran as a backup task on
        a replica on a worker that met an earlier deadline (the first copy to finish
        counts); None for other rounds.
    bytes_replicated : int
        Deadline rounds: the bytes of the partitions the round started copying to a
        worker for backups (Dask's size of each partition, modelled: Dask logs the copy
        under the partition's key, not the round's).
    state_reset : tuple of int or None
        Stateful rounds (``reduce_stateful``, ``map_stateful``): the partitions whose
        state was lost with a worker and started again from None; None for other rounds.
    staleness : dict or None
        ``push`` records of a parameter holder: ``{staleness: pushes}``, staleness being
        the versions applied between a pusher's pull and its push; None for other rounds.
    clock_staleness : dict or None
        ``push`` records of parameter-server SGD: ``{clock lag: pushes}``, the clock lag
        being how many updates the pushing task was ahead of the slowest other running
        task when it read the parameters (at most the staleness bound); None otherwise.
    seconds_blocked : float or None
        ``push`` records of parameter-server SGD: seconds tasks waited at the staleness
        bound, summed over tasks; None otherwise.
    holder_lost : str or None
        ``push`` records of a parameter holder lost with its worker: that worker (the
        record then holds the holder's traffic up to the driver's last checkpoint of it);
        None otherwise.
    route : str or None
        How a cluster round reached the workers: ``"tasks"`` (scheduler tasks) or
        ``"direct"`` (one call per worker to its partition holder, past the scheduler:
        :mod:`daskglm.engine.direct`); None in this process.
    holders : int
        Partition holders the round started making on the workers, for the direct rounds
        after it (their tasks are measured with the round, and modelled in
        ``bytes_overhead``); 0 for most rounds.
    partials : int
        Tree rounds: the partial sums the round's tasks returned, ``bytes_returned``
        being this many results.  A task returns one sum per whole subtree of the
        reduction tree among its inputs: one in all when a worker's partitions are
        neighbours in the tree, one per partition when they are interleaved with another
        worker's.  0 for gather rounds.
    gathered : int
        Tree rounds: those of the ``partials`` that the driver gathered (the rest fed
        combine tasks on the workers, or were merged on their own worker); 0 for gather
        rounds.
    """

    kind: str
    tasks: int
    bytes_sent: int
    bytes_returned: int
    seconds: float
    partitions: int = 0
    split_every: int | None = None
    bytes_overhead: int = 0
    bytes_kept_local: int = 0
    bytes_measured: int | None = None
    bytes_submitted: int | None = None
    bytes_dispatched: int | None = None
    bytes_transferred: int | None = None
    bytes_read: int = 0
    seconds_compute: float | None = None
    seconds_waiting: float | None = None
    seconds_span: float | None = None
    seconds_tree: float | None = None
    transfers: int | None = None
    seconds_transferring: float | None = None
    groups: int = 0
    dropped: tuple | None = None
    backups: tuple | None = None
    bytes_replicated: int = 0
    state_reset: tuple | None = None
    staleness: dict | None = None
    topology: str | None = None
    clock_staleness: dict | None = None
    seconds_blocked: float | None = None
    holder_lost: str | None = None
    route: str | None = None
    holders: int = 0
    partials: int = 0
    gathered: int = 0

    @property
    def bytes_modelled(self) -> int:
        """Modelled network bytes: payload both ways, less the partials expected to be
        combined on the worker that made them, plus Dask's per-task control traffic."""
        return self.bytes_sent + self.bytes_returned - self.bytes_kept_local + self.bytes_overhead

    @property
    def depth(self) -> int:
        """Levels of combine tasks on the workers (0 for a gather round, and for a tree
        round whose partials the driver sums at once)."""
        tasks = self.groups or self.partitions
        return 0 if self.split_every is None else tree_depth(tasks, self.split_every)

    def to_dict(self):
        """The record's fields and ``bytes_modelled`` as a plain dict."""
        return {**dataclasses.asdict(self), "bytes_modelled": self.bytes_modelled}


def kept_local(record, workers):
    """Modelled bytes of a tree round's partials that never leave their worker.

    With the partitions spread evenly over ``W`` workers, Dask runs each combine task on
    the worker holding most of its ``k`` inputs, so about ``1 / min(W, k)`` of every
    combine's inputs are already there.  Every partial but the ``m`` the driver gathers
    feeds a combine task: ``(T - m) * r / min(W, k)`` bytes stay local, ``T`` being the
    record's ``partials`` and ``r`` one partial (``bytes_returned / T``); without them,
    ``T`` is the tasks and ``m`` :func:`~daskglm.accounting.bytemodel.top_partials`.
    Gather rounds send every result to the driver: 0.
    """
    partials = record.partials or record.tasks
    if record.split_every is None or not workers or partials <= 1:
        return 0
    result = record.bytes_returned / partials
    top = record.gathered or top_partials(record.groups or record.partitions,
                                          record.split_every)
    feeding_combines = max(0, partials - top)
    return int(round(feeding_combines * result / min(int(workers), record.split_every)))


def round_timing(spans):
    """Compute, waiting, span and tree seconds of a round from its tasks' times.

    ``spans`` holds ``(is_partition, thread, start, stop)`` per task.

    Returns
    -------
    dict
        ``seconds_compute``, ``seconds_waiting``, ``seconds_span`` (first partition task's
        start to the last one's end) and ``seconds_tree`` (the last partition task's end
        to the last combine task's end; None without combine tasks).
    """
    compute = float(sum(stop - start for _, _, start, stop in spans))
    last, first, combined = {}, None, None
    for is_partition, thread, start, stop in spans:
        if is_partition:
            last[thread] = max(last.get(thread, stop), stop)
            first = start if first is None else min(first, start)
        else:
            combined = stop if combined is None else max(combined, stop)
    if not last:
        return {"seconds_compute": compute, "seconds_waiting": 0.0}
    end = max(last.values())
    return {
        "seconds_compute": compute,
        "seconds_waiting": float(sum(end - stop for stop in last.values())),
        "seconds_span": float(end - first),
        "seconds_tree": None if combined is None else max(0.0, float(combined - end)),
    }

