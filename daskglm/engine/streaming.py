"""The streaming cluster backend: partitions read from their source in every round.

Used when the data do not fit in the workers' memory: each round's tasks load their
partitions from the Dask graph of the input (zarr chunks, for example) instead of
persisted futures, and drop them when done.
"""

from __future__ import annotations

import numpy as np

from . import tasks as task_functions
from .distributed import DistributedEngine
from .tasks import run_streamed_task, run_task, sources_of


def _validated(engine, family):
    try:
        engine.validate(family)
    except BaseException:
        engine.close()
        raise
    return engine


class StreamingDistributedEngine(DistributedEngine):
    """Partitions read from their source in every round, on the workers (``cache="none"``).

    A tree round runs :data:`~daskglm.engine.tasks.STREAM_RUNS_PER_THREAD` tasks per
    worker thread, each over a contiguous run of the partitions: it reads each partition
    from the partition's own (small) graph in a thread of its own while its kernel runs
    on the one before, so the disk and the cores work at once, and keeps at most two
    partitions in memory.  The runs' complete subtrees are summed in the engine's tree,
    so the sums are those of one task per partition, to the bit.  Other rounds compute
    one task per partition, whose reads Dask runs before it; Dask's queuing of root tasks
    keeps only about one partition per worker thread in memory.
    """

    cache = "none"
    streamed_share = 1.0
    keeps_states = False

    def __init__(self, client, delayed_parts, n_features, **kwargs):
        super().__init__(client, delayed_parts, n_features, group_partitions=False, **kwargs)
        self.reads_source = True
        self._sources = None  # of the partitions as they are now (:func:`sources_of`)

    def _submit(self, fn, args, each, tree, probe, created):
        import dask

        sent = self._broadcast(args, created)
        if tree and task_functions.STREAM_RUNS_PER_THREAD and self.topology == "tree":
            return self._submit_runs(fn, sent, each, probe, created)
        keys = probe.keys(self.n_partitions)
        n = self.n_partitions
        run = dask.delayed(run_task, pure=False)
        tasks = [
            run(fn, [part], None if each is None else [each[i]], sent,
                ([i], n) if tree else (), dask_key_name=keys[i])
            for i, part in enumerate(self.parts)
        ]
        futures = self.client.compute(tasks)
        created.extend(futures)
        if tree:
            return self._tree(futures, probe, created)
        return [group_results[0] for group_results in self.client.gather(futures)], 0

    def _submit_runs(self, fn, sent, each, probe, created):
        """A tree round over runs of streamed partitions read ahead of their kernel, and a
        task for each partition that is kept in memory or made from data on the cluster
        (a persisted collection's chunks: its reads are the task's dependencies):
        ``(sum, combine tasks)``."""
        import dask

        n = self.n_partitions
        if self._sources is None:
            self._sources = sources_of(self.parts)
        sources = self._sources
        groups = [[i] for i in range(n) if sources[i] is None]  # in memory, or needing it
        streamed = [i for i in range(n) if sources[i] is not None]
        if streamed:
            threads = max(1, sum(self.client.nthreads().values()))
            runs = min(len(streamed), task_functions.STREAM_RUNS_PER_THREAD * threads)
            groups.extend(run.tolist() for run in np.array_split(np.array(streamed), runs))
        groups.sort()
        probe.groups = len(groups)
        keys = probe.keys(len(groups))
        tasks = []
        for key, group in zip(keys, groups):
            items = None if each is None else [each[i] for i in group]
            if sources[group[0]] is None:
                tasks.append(dask.delayed(run_task, pure=False)(
                    fn, [self.parts[group[0]]], items, sent, (group, n), dask_key_name=key))
            else:
                tasks.append(dask.delayed(run_streamed_task, pure=False)(
                    fn, [sources[i] for i in group], items, sent, (group, n),
                    dask_key_name=key))
        futures = self.client.compute(tasks)
        created.extend(futures)
        return self._tree(futures, probe, created, groups)

    def _partition_futures(self, fn, sent, probe, each=None):
        import dask

        keys = probe.keys(self.n_partitions)
        run = dask.delayed(run_task, pure=False)
        return self.client.compute([run(fn, [part], None if each is None else [each[i]], sent,
                                        (), dask_key_name=keys[i])
                                    for i, part in enumerate(self.parts)])

    def _execute_stateful(self, fn, states, args, tree, probe, name=None):
        raise NotImplementedError(
            f"Partition state lives next to a partition kept in memory; with "
            f"cache={self.cache!r} partitions are read again in every round and live "
            "nowhere.  Use cache='memory'."
        )

    def _lost_parts(self):
        return []  # read from their source in every round

    def kept_part(self, family):
        """An engine of the partitions kept in memory (``cache="partial"``) and nothing
        else, validated by a round of its own over them (no read from the source) and
        writing its rounds to this engine's ledger; None when no partition is kept.

        Its futures are new references to the same keys, so closing it leaves this
        engine's partitions where they are.
        """
        from distributed import Future

        kept = [Future(part.key, self.client) for part in self.parts
                if isinstance(part, Future)]
        if not kept:
            return None
        engine = DistributedEngine(self.client, kept, self.n_features, ledger=self.ledger,
                                   split_every=self.split_every)
        return _validated(engine, family)

    def _replace_parts(self, fn, arg, probe):
        import dask
        from distributed import Future

        new = []
        for part in self.parts:
            if isinstance(part, Future):  # kept in memory (cache="partial"): stays there
                new.append(self.client.submit(fn, part, arg, pure=False))
                part.release()
            else:
                new.append(dask.delayed(fn, pure=False)(part, arg))
        self.parts = new
        self._sources = None

    def close(self):
        self._close_holders()
        self.collect_measurements()
        self.parts = []
