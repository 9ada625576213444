"""The functions the distributed backend's tasks run on the workers.

A group task runs a kernel on the partitions one worker thread holds and returns the
complete subtrees of its run (:func:`daskglm.compute.tree.run_group`); stateful rounds
split a group's output into the result and the new state on the worker.  A streamed
run reads its partitions one ahead of its kernel (:func:`run_streamed_task`, from
:class:`Source`, :class:`Ready` or :class:`Computed` readers); the in-process streaming
engine runs the same runs on its threads.
"""

from __future__ import annotations

import time

from ..compute.tree import (
    complete_nodes,
    run_group,
    run_stateful_group,
)

#: Extra seconds that kernel tasks sleep on a worker, by worker address.  Set in a worker
#: process only by :func:`daskglm.testing.slow_worker`; while it is empty (always, outside
#: tests and demos), a task's check of it costs one test of an empty dict.
TASK_DELAYS: dict[str, float] = {}


def _delay_task():
    """Sleep as :data:`TASK_DELAYS` says for the worker running this task."""
    try:
        from distributed import get_worker

        seconds = TASK_DELAYS.get(get_worker().address, 0.0)
    except (ImportError, ValueError):  # not in a worker
        return
    if seconds:
        time.sleep(seconds)


def complete_node_keys(indices, n_leaves):
    """The tree nodes that a group task on the partitions ``indices`` returns.

    Parameters
    ----------
    indices : sequence of int
        The group's partitions, by position.
    n_leaves : int
        The partitions of the round: the leaves of its reduction tree.

    Returns
    -------
    list of tuple
        The nodes of :func:`~daskglm.compute.tree.run_group`'s result, in order of
        position (:func:`~daskglm.compute.tree.complete_nodes`), without their sums.
    """
    return list(complete_nodes({(0, i): 0 for i in indices}, n_leaves))


def run_task(fn, parts, items, args, reduce_args):
    """A group's task: :func:`~daskglm.compute.tree.run_group`, reducing when
    ``reduce_args``; slowed as :func:`pause_if_slowed` says.

    Parameters
    ----------
    fn : callable
        The kernel, ``fn(part, *args)`` or ``fn(part, item, *args)``.
    parts : list
        The partitions of the group, in order.
    items : list or None
        One item per partition, or None.
    args : tuple
        The arguments every call shares.
    reduce_args : tuple
        ``(indices, n_leaves)`` to return the complete nodes of the reduction tree, or
        ``()`` for the list of results.

    Returns
    -------
    list or dict
        What :func:`~daskglm.compute.tree.run_group` returns.
    """
    if TASK_DELAYS:
        _delay_task()
    return run_group(fn, parts, items, args, *reduce_args)


#: A tree round of streamed partitions runs this many tasks per worker thread, each on a
#: contiguous run of partitions that it reads one ahead of its kernel
#: (:func:`run_streamed_task`); 0 runs one task per partition, whose reads come first.
STREAM_RUNS_PER_THREAD = 2


class Source:
    """A partition still to be read, carried into a task as an argument rather than as
    a dependency, so that the task reads it itself when it chooses.

    Parameters
    ----------
    graph : dict
        The tasks that make the partition (its reads from the store, its packing), and
        only those: see :func:`sources_of`.
    key
        The partition's key in ``graph``.
    """

    def __init__(self, graph, key):
        self.graph, self.key = graph, key

    def read(self):
        """The partition, read from its source in this thread."""
        from dask.local import get_sync

        return get_sync(self.graph, self.key)


class Ready:
    """A partition already in memory, read as a :class:`Source` is (a kept partition)."""

    def __init__(self, part):
        self.part = part

    def read(self):
        """The partition itself."""
        return self.part


class Computed:
    """A delayed partition with no :class:`Source`, read by computing it in this thread."""

    def __init__(self, delayed):
        self.delayed = delayed

    def read(self):
        """The partition, computed by the synchronous scheduler."""
        return self.delayed.compute(scheduler="sync")


def sources_of(parts):
    """A :class:`Source` for each delayed partition whose graph holds every task it
    needs (a store's reads); None for a partition that needs data already on the cluster
    (a persisted collection's chunks), or that is not delayed.

    The partitions' graphs share their layers (those of ``X`` and ``y``): each layer is
    read once, and each partition keeps only its own tasks.
    """
    from dask.core import istask

    tasks, seen = {}, set()
    for part in parts:
        graph = getattr(part, "__dask_graph__", lambda: None)()
        for name, layer in (getattr(graph, "layers", None) or {id(graph): graph or {}}).items():
            if name not in seen:
                seen.add(name)
                tasks.update(layer)
    sources = []
    for part in parts:
        key = getattr(part, "key", None)
        own, pending = {}, [] if key is None else [key]
        while pending:
            name = pending.pop()
            if name in own:
                continue
            task = tasks.get(name)
            # computed elsewhere (or an old-style task, whose needs are not listed): read
            # as a dependency of the round's task
            if name not in tasks or (istask(task) and not hasattr(task, "dependencies")):
                own = None
                break
            own[name] = task
            pending.extend(getattr(task, "dependencies", ()))
        sources.append(Source(own, key) if own else None)
    return sources


def run_streamed_task(fn, sources, items, args, reduce_args):
    """A run of streamed partitions in one task, each read while the one before is used.

    One thread reads the next partition (file reads and most decoding release the GIL)
    while this one runs the kernel on the last, so a worker thread's reads and kernels
    overlap instead of taking turns; at most two of the run's partitions are in memory
    at once.

    Parameters
    ----------
    fn, items, args, reduce_args
        As :func:`run_task` takes them.
    sources : list
        The run's partitions as readers (:class:`Source`, :class:`Ready` or
        :class:`Computed`), in order.

    Returns
    -------
    list or dict
        What :func:`~daskglm.compute.tree.run_group` returns for the run.
    """
    from concurrent.futures import ThreadPoolExecutor

    if TASK_DELAYS:
        _delay_task()
    results = []
    with ThreadPoolExecutor(1) as reader:
        ahead = reader.submit(sources[0].read)
        for k in range(len(sources)):
            part = ahead.result()
            if k + 1 < len(sources):
                ahead = reader.submit(sources[k + 1].read)
            results.append(fn(part, *args) if items is None else fn(part, items[k], *args))
            del part
    if not reduce_args:
        return results
    indices, n_leaves = reduce_args
    return complete_nodes({(0, i): r for i, r in zip(indices, results)}, n_leaves)


def run_stateful_task(fn, parts, states, args, reduce_args):
    """A group's task of a stateful round: :func:`~daskglm.compute.tree.run_stateful_group`;
    slowed as :func:`pause_if_slowed` says.

    Parameters
    ----------
    fn : callable
        The stateful kernel, ``fn(part, state, *args) -> (result, new state)``.
    parts : list
        The partitions of the group, in order.
    states : list
        Each partition's state from the previous round (None on the first).
    args, reduce_args
        As :func:`run_task` takes them.

    Returns
    -------
    tuple
        ``(out, new_states)``, as :func:`~daskglm.compute.tree.run_stateful_group`
        returns them; :func:`pick_output` and :func:`pick_state` take them apart.
    """
    if TASK_DELAYS:
        _delay_task()
    return run_stateful_group(fn, parts, states, args, *reduce_args)


def pick_output(output):
    """The results (or tree nodes) of a stateful group task's output.

    Parameters
    ----------
    output : tuple
        What :func:`run_stateful_task` returned.

    Returns
    -------
    list or dict
    """
    return output[0]


def pick_state(output, position):
    """The new state of the ``position``-th partition of a stateful group task's output.

    Parameters
    ----------
    output : tuple
        What :func:`run_stateful_task` returned.
    position : int
        The partition's position in its group.

    Returns
    -------
    object
    """
    return output[1][position]


def identity(item):
    """``item`` itself: a task that puts a copy of a value on the worker that runs it.

    Parameters
    ----------
    item : object

    Returns
    -------
    object
    """
    return item


def pause_if_slowed():
    """Sleep as :data:`TASK_DELAYS` says for this worker: what a long-lived task calls
    before each of its updates (and a task of its own before it runs), so that
    :func:`daskglm.testing.slow_worker` slows it per update as it slows other tasks per
    task."""
    if TASK_DELAYS:
        _delay_task()
