"""The streaming cluster backend: partitions read from their source in every round.

Used when the data do not fit in the workers' memory: each round's tasks load their
partitions from the Dask graph of the input (zarr chunks, for example) instead of
persisted futures, and drop them when done.
"""

from __future__ import annotations

from .distributed import DistributedEngine
from .tasks import _run_task


def _validated(engine, family):
    try:
        engine.validate(family)
    except BaseException:
        engine.close()
        raise
    return engine


class StreamingDistributedEngine(DistributedEngine):
    """Partitions read from their source in every round, on the workers (``cache="none"``).

    Each round computes one task per partition from the partition's own (small) graph,
    so the workers read, use and drop it; Dask's queuing of root tasks keeps only about
    one partition per worker thread in memory.
    """

    cache = "none"
    streamed_share = 1.0

    def __init__(self, client, delayed_parts, n_features, **kwargs):
        super().__init__(client, delayed_parts, n_features, group_partitions=False, **kwargs)
        self.reads_source = True

    def _submit(self, fn, args, each, tree, probe, created):
        import dask

        sent = self._broadcast(args, created)
        keys = probe.keys(self.n_partitions)
        n = self.n_partitions
        run = dask.delayed(_run_task, pure=False)
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

    def _partition_futures(self, fn, sent, probe, each=None):
        import dask

        keys = probe.keys(self.n_partitions)
        run = dask.delayed(_run_task, pure=False)
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

    def close(self):
        self._close_holders()
        self.collect_measurements()
        self.parts = []
