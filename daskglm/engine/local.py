"""The in-process backend: partitions held in this process, rounds on a thread pool."""

from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, as_completed
from concurrent.futures import wait as wait_threads

import numpy as np

from ..compute.tree import (
    combine_nodes,
    is_row_additive,
    run_group,
    run_stateful_group,
    tree_root,
)
from ..native_threads import one_thread
from . import tasks as task_functions
from .base import Engine
from .deadline import Arrivals
from .device_rows import DeviceRows
from .measure import LocalProbe
from .tasks import Computed, Ready, run_streamed_task, sources_of


class LocalEngine(Engine):
    """Partitions held in this process; rounds run on a thread pool.

    Each partition's kernel runs single-threaded (BLAS limited to one thread) and the
    partitions run concurrently, as on single-threaded workers.  Dense CuPy partitions on
    one GPU run one after another in the calling thread (one task: threads would only
    contend for the device's queue) and are stacked in one buffer (:class:`DeviceRows`),
    on which a row-additive kernel runs once per round.
    """

    def __init__(self, parts, n_features, n_threads=None, ledger=None, split_every=8):
        super().__init__(n_features, ledger, split_every)
        self.parts = list(parts)
        self.n_partitions = len(self.parts)
        self.device_rows = DeviceRows.of(self.parts)
        if self.device_rows is None:
            self.groups = [[i] for i in range(self.n_partitions)]
        else:
            self.groups = [list(range(self.n_partitions))]
            n_threads = 1
        self.n_threads = max(1, min(n_threads or os.cpu_count() or 1, self.n_partitions))
        self._pool = ThreadPoolExecutor(self.n_threads) if self.n_threads > 1 else None
        self._deadline_pool = None  # the pool, or one thread when there is no pool

    def _probe(self, kind):
        return LocalProbe(self.n_threads)

    def _execute(self, fn, args, each, tree, probe):
        run = probe.timed(run_group)
        n = self.n_partitions
        if tree and each is None and self.device_rows is not None and is_row_additive(fn):
            whole, self.parts = self.device_rows.whole(self.parts)
            if whole is not None:
                return run(fn, [whole], None, args)[0], 0
        jobs = [
            (fn, [self.parts[i] for i in group], None if each is None else [each[i] for i in group],
             args) + ((group, n) if tree else ())
            for group in self.groups
        ]
        results = self._run_jobs(run, jobs)
        if tree:
            root = combine_nodes(n, *results)[tree_root(n)]
            return root, self._tree_tasks(len(self.groups))
        return [item for group_results in results for item in group_results], 0

    def _run_jobs(self, run, jobs):
        if self._pool is None:
            return [run(*job) for job in jobs]
        with one_thread():
            return list(self._pool.map(lambda job: run(*job), jobs))

    def _execute_stateful(self, fn, states, args, tree, probe, name=None):
        run = probe.timed(run_stateful_group)
        n = self.n_partitions
        jobs = [
            (fn, [self.parts[i] for i in group], [states[i] for i in group], args)
            + ((group, n) if tree else ())
            for group in self.groups
        ]
        outputs = self._run_jobs(run, jobs)
        new_states = [None] * n
        for group, (_, group_states) in zip(self.groups, outputs):
            for index, item in zip(group, group_states):
                new_states[index] = item
        if tree:
            root = combine_nodes(n, *(out for out, _ in outputs))[tree_root(n)]
            return root, new_states, self._tree_tasks(len(self.groups)), 0
        return [item for out, _ in outputs for item in out], new_states, 0, 0

    def _execute_deadline(self, fn, args, probe, cutoff, each=None):
        # in one process there is nothing to copy: no backups
        if self._deadline_pool is None:
            self._deadline_pool = self._pool or ThreadPoolExecutor(self.n_threads)
        run = probe.timed(run_group)
        with one_thread():
            futures = [self._deadline_pool.submit(run, fn, [part],
                                                  None if each is None else [each[i]], args)
                       for i, part in enumerate(self.parts)]
            first = self._await_arrivals(
                [[future] for future in futures], cutoff,
                lambda pending, timeout: wait_threads(pending, timeout, FIRST_COMPLETED).done,
            )
        for future in futures:
            future.cancel()  # those not started; a running one finishes and is dropped
        return Arrivals({i: future.result()[0] for i, future in first.items()})

    def _submit_as_completed(self, fn, args, probe):
        # the kernels run with the process's BLAS threads: the limit of the other rounds
        # is process wide, and the consumer runs between the results
        if self._deadline_pool is None:
            self._deadline_pool = self._pool or ThreadPoolExecutor(self.n_threads)
        run = probe.timed(run_group)
        futures = [self._deadline_pool.submit(run, fn, [part], None, args)
                   for part in self.parts]
        index = {future: i for i, future in enumerate(futures)}

        def stream():
            for future in as_completed(futures):
                yield index[future], True, future.result()[0]

        def cancel():
            for future in futures:
                future.cancel()  # those not started; a running one finishes, dropped

        return stream(), cancel

    def _make_holder(self, params):
        from .parameter_holders import ParameterHolder

        return ParameterHolder(params)

    def _replace_parts(self, fn, arg, probe):
        run = probe.timed(fn)
        self.parts = [run(part, arg) for part in self.parts]

    def close(self):
        self._close_holders()
        for pool in {id(p): p for p in (self._pool, self._deadline_pool) if p}.values():
            pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._deadline_pool = None
        self._states = {}
        self.parts = []
        self.device_rows = None


class _Loading:
    """``fn`` called on a partition loaded from its source first (streaming rounds)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, part, *args):
        if not isinstance(part, tuple):  # a tuple: kept in memory (cache="partial")
            part = part.compute(scheduler="sync")
        return self.fn(part, *args)


class StreamingLocalEngine(LocalEngine):
    """Partitions read from their source in every round, in this process (``cache="none"``).

    ``parts`` are delayed partitions (and, with ``cache="partial"``, partitions kept in
    memory).  A tree round runs :data:`~daskglm.engine.tasks.STREAM_RUNS_PER_THREAD` runs
    of the partitions per thread, each reading its next partition in a thread of its own
    while the kernel runs on the last (:func:`~daskglm.engine.tasks.run_streamed_task`),
    so at most two partitions per run are in memory at a time; the sums are those of one
    partition at a time, to the bit.  Other rounds load each partition in the thread that
    uses it.
    """

    cache = "none"
    streamed_share = 1.0

    def __init__(self, parts, n_features, **kwargs):
        super().__init__(parts, n_features, **kwargs)
        self.reads_source = True
        self._readers = None  # of the partitions as they are now

    def _execute(self, fn, args, each, tree, probe):
        if tree and task_functions.STREAM_RUNS_PER_THREAD:
            return self._execute_runs(fn, args, each, probe)
        return super()._execute(_Loading(fn), args, each, tree, probe)

    def _execute_runs(self, fn, args, each, probe):
        n = self.n_partitions
        if self._readers is None:
            self._readers = [
                Ready(part) if isinstance(part, tuple) else source or Computed(part)
                for part, source in zip(self.parts, sources_of(self.parts))
            ]
        runs = min(n, task_functions.STREAM_RUNS_PER_THREAD * self.n_threads)
        groups = [run.tolist() for run in np.array_split(np.arange(n), runs)]
        probe.groups = len(groups)
        run = probe.timed(run_streamed_task)
        jobs = [(fn, [self._readers[i] for i in group],
                 None if each is None else [each[i] for i in group], args, (group, n))
                for group in groups]
        results = self._run_jobs(run, jobs)
        return combine_nodes(n, *results)[tree_root(n)], self._tree_tasks(len(groups))

    def _execute_stateful(self, fn, states, args, tree, probe, name=None):
        return super()._execute_stateful(_Loading(fn), states, args, tree, probe, name)

    def _execute_deadline(self, fn, args, probe, cutoff, each=None):
        return super()._execute_deadline(_Loading(fn), args, probe, cutoff, each)

    def _submit_as_completed(self, fn, args, probe):
        return super()._submit_as_completed(_Loading(fn), args, probe)

    def kept_part(self, family):
        """An engine of the partitions kept in memory (``cache="partial"``) and nothing
        else, validated by a round of its own over them (no read from the source) and
        writing its rounds to this engine's ledger; None when no partition is kept."""
        kept = [part for part in self.parts if isinstance(part, tuple)]
        if not kept:
            return None
        engine = LocalEngine(kept, self.n_features, ledger=self.ledger,
                             split_every=self.split_every)
        engine.validate(family)
        return engine

    def _replace_parts(self, fn, arg, probe):
        import dask

        self.parts = [fn(part, arg) if isinstance(part, tuple)
                      else dask.delayed(fn, pure=False)(part, arg) for part in self.parts]
        self._readers = None
