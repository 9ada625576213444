"""Column shards of the parameters on the workers, and the rounds that reach them.

:func:`make_shards` places one :class:`~daskglm.compute.column_shards.ColumnShard` per
worker (by default) and one :class:`~daskglm.compute.worker_columns.WorkerColumns` on
every worker (its partitions' one pull and one push per round): on a cluster each is a
Dask Actor pinned to its worker (calls are direct worker-to-worker messages, no
scheduler, no task per call, and calls to the worker's own are plain method calls); in
this process they are plain objects shared by the engine's threads (one
``WorkerColumns`` for all partitions).  The :class:`ShardSet` the driver holds runs the
coordinator's commands on every shard and writes each as one ledger record; the
:class:`ShardClients` handle travels to the partition tasks (it pickles to references to
the actors) and reaches the ``WorkerColumns`` of their worker.

Rounds written to the ledger (:class:`~daskglm.accounting.kinds.Kind`):

* ``shard_op`` -- one coordinator command on every shard: tasks = shards, sent = the
  command's arguments (scalars, slot numbers, ``2 m`` coefficients), returned = the
  shards' answers (scalars, dot products);
* ``shard_load`` / ``shard_fetch`` -- the whole parameter vector to the shards at the
  start, from them at the end (the only rounds whose size is ``d``);
* ``shard_register`` -- once, :meth:`ShardSet.seal`: every ``WorkerColumns`` registers
  the union of its partitions' touched columns with the shards (``8`` bytes per column
  index, ``16`` bytes of identifiers per call, one call per worker and shard reached);
* ``shard_pull``, ``shard_push`` -- the workers' traffic with the shards during an
  evaluation round, written by :meth:`ShardSet.record_traffic` from the counts the
  kernels return: ``8`` bytes per coefficient pulled and per gradient entry pushed (the
  union of a worker's touched columns, once per worker), plus ``16`` bytes of identifiers
  per call; ``seconds`` 0 (the calls run inside the evaluation round).

When a shard's worker is lost, the shard's part of the iterate is gone: every call then
raises :class:`ShardLostError` within about a second (and
:func:`~daskglm.solvers.sharded_lbfgs.solve_sharded` makes the shards again on the
workers left, from :meth:`ShardSet.salvage`).  The shards and the ``WorkerColumns`` are
released with the fit's client: when the driver's process dies, Dask drops them, and a
call that a task or a partition holder was making to one of them ends within about a
second with :class:`ShardLostError` (:func:`~daskglm.engine.parameter_holders.actor_alive`),
where Dask itself would wait for its answer forever.
"""

from __future__ import annotations

import time
import uuid

import numpy as np

from ..accounting.bytemodel import nbytes
from ..accounting.kinds import Kind
from ..compute.column_shards import ColumnShard, shard_bounds
from ..compute.worker_columns import TRAFFIC_FIELDS, UnknownPartition, WorkerColumns
from .dask_compat import cluster_workers
from .measure import Timer
from .parameter_holders import HolderLostError, actor_alive

__all__ = ["ShardLostError", "ShardClients", "ShardSet", "make_shards", "CALL_ID_BYTES"]

#: Errors a shard raises on its own arguments (anything else a call raises means the
#: shard's worker is gone: Dask says so with RuntimeError, OSError or a time-out).
_SHARD_CHECKS = (ValueError, TypeError, LookupError)

#: Identifiers a pull or a push carries besides its values (partition, round or step).
CALL_ID_BYTES = 16


#: What a :class:`ShardLostError` tells the caller to do.
LOST_ADVICE = ("A sharded fit keeps its iterate and its L-BFGS memory on the workers, so it "
               "cannot go on: fit again (on the workers left, or after replacing the lost "
               "one), or fit with solver_options={'sharded': False}.")


class ShardLostError(HolderLostError):
    """A worker holding a column shard was lost, and that part of the parameters with it."""


class ShardClients:
    """What partition tasks use to reach the shards: the ranges, one handle per shard and
    one per worker's :class:`~daskglm.compute.worker_columns.WorkerColumns`.

    Attributes
    ----------
    bounds : ndarray of int64
        Shard ``k`` holds parameters ``bounds[k]`` to ``bounds[k + 1] - 1``.
    addresses : list of str or None
        The shards' workers on a cluster; None in this process.
    hubs, hub_addresses : list
        The ``WorkerColumns`` and their workers (None in this process); empty in the
        handle the ``WorkerColumns`` themselves hold.
    """

    #: Seconds between checks, while a call waits, that the shard's worker is alive.
    poll = 1.0

    def __init__(self, bounds, shards, addresses=None, hubs=(), hub_addresses=None):
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.shards = list(shards)
        self.addresses = None if addresses is None else list(addresses)
        self.hubs = list(hubs)
        self.hub_addresses = None if hub_addresses is None else list(hub_addresses)

    def call_each(self, method, calls):
        """``[shards[k].method(*args) for k, args in calls]``, the calls made concurrently
        (those to a shard in the calling task's own worker directly)."""
        return self._call_each(self.shards, self.addresses, method, calls, self._shard_lost)

    def call_hub(self, k, method, *args):
        """``hubs[k].method(*args)``: from the driver, or directly from a task on its
        worker.

        Raises
        ------
        ShardLostError
            From a task on another worker (its partition moved, or the worker joined
            after the shards were made): the ``WorkerColumns`` of a worker are only
            reached there, where their calls to the shards cannot wait on each other;
            and for a partition its ``WorkerColumns`` does not know.
        """
        here = _this_worker()
        if here is not None and self.hub_addresses is not None \
                and self.hub_addresses[k] != here.address:
            raise ShardLostError(
                f"A partition registered with worker {self.hub_addresses[k]} ran on "
                f"{here.address}: the partitions have moved since the shards were made.  "
                f"{LOST_ADVICE}")
        try:
            return self._call_each(self.hubs, self.hub_addresses, method, [(k, args)],
                                   self._hub_lost)[0]
        except UnknownPartition as exc:
            raise ShardLostError(f"{exc}  {LOST_ADVICE}") from exc

    def local_hub(self):
        """The ``WorkerColumns`` of the worker running this task (the first in this
        process, and on a worker that joined after the shards were made, where
        :meth:`call_hub` then raises)."""
        here = _this_worker()
        if here is None or self.hub_addresses is None:
            return 0
        return next((k for k, a in enumerate(self.hub_addresses) if a == here.address), 0)

    def _call_each(self, targets, addresses, method, calls, lost):
        if addresses is None:
            return [getattr(targets[k], method)(*args) for k, args in calls]
        pending, local = {}, []
        here = _this_worker()
        for i, (k, args) in enumerate(calls):
            if here is not None and addresses[k] == here.address:
                # it lives in this process: a direct call, nothing serialised (its
                # methods called from tasks are safe alongside each other), made once
                # the calls to other workers are on their way
                actor = here.state.actors.get(targets[k].key)
                if actor is not None:
                    local.append((i, actor, args))
                    continue
            try:
                pending[i] = getattr(targets[k], method)(*args)
            except _SHARD_CHECKS:
                raise
            except Exception as exc:
                raise lost(k, exc) from exc
        for i, actor, args in local:
            pending[i] = _Done(getattr(actor, method)(*args))
        return [self._result(pending[i], targets[k].key, addresses[k],
                             lambda exc, k=k: lost(k, exc))
                for i, (k, _) in enumerate(calls)]

    def _result(self, future, key, address, lost):
        # a dead worker refuses connections at once but Dask retries them for its connect
        # timeout (30 s), and an actor released with the driver's client never answers:
        # ask the scheduler every ``poll`` seconds whether the actor is still there
        try:
            while True:
                try:
                    return future.result(timeout=self.poll)
                except TimeoutError:
                    if not actor_alive(key, address):
                        raise TimeoutError(f"the actor is no longer on worker {address} "
                                           f"(the worker left the cluster, or the fit's "
                                           f"client did)") from None
        except _SHARD_CHECKS:
            raise
        except Exception as exc:
            raise lost(exc) from exc

    def _shard_lost(self, k, exc):
        return ShardLostError(
            f"The column shard holding parameters {self.bounds[k]} to {self.bounds[k + 1] - 1} "
            f"on worker {self.addresses[k]} is unreachable (its worker was lost): "
            f"{type(exc).__name__}: {exc}.  {LOST_ADVICE}"
        )

    def _hub_lost(self, k, exc):
        return ShardLostError(
            f"The worker {self.hub_addresses[k]} that pulls and pushes for its partitions "
            f"is unreachable (it was lost, and its column shard with it): "
            f"{type(exc).__name__}: {exc}.  {LOST_ADVICE}"
        )

    def __reduce__(self):
        if self.addresses is None:
            raise TypeError("In-process shards cannot be pickled; they are shared by threads.")
        return (ShardClients, (self.bounds, self.shards, self.addresses, self.hubs,
                               self.hub_addresses))


class _Done:
    """The answer of a call made in this process, shaped as an actor's future."""

    def __init__(self, value):
        self.value = value

    def result(self, timeout=None):
        return self.value


def _this_worker():
    """The Dask worker running the current task, or None (on the driver, in tests)."""
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


class ShardSet:
    """The driver's side of the shards: commands, loading and fetching, the ledger.

    Made by :func:`make_shards`; close it (or use ``with``) to release the shards.
    """

    def __init__(self, engine, clients, futures=()):
        self.engine = engine
        self.clients = clients
        self._futures = list(futures)

    @property
    def n_shards(self):
        return len(self.clients.shards)

    @property
    def bounds(self):
        return self.clients.bounds

    def command(self, method, *args, kind=Kind.SHARD_OP):
        """One round: ``shard.method(*args)`` on every shard; the answers, in shard order."""
        return self._round(method, [args] * self.n_shards, kind)

    def _round(self, method, per_shard, kind):
        calls = list(enumerate(per_shard))
        with Timer() as timer:
            answers = self.clients.call_each(method, calls)
        n = self.n_shards
        self.engine.ledger.record(kind, n, sum(nbytes(a) for a in per_shard), nbytes(answers),
                                  timer.seconds, partitions=n, groups=n)
        return answers

    def load(self, params):
        """One round: every shard starts from its range of ``params``."""
        params = np.asarray(params, dtype=np.float64)
        b = self.bounds
        self._round("load", [(params[b[k]:b[k + 1]],) for k in range(self.n_shards)],
                    Kind.SHARD_LOAD)

    def values(self):
        """One round: the parameters, gathered from the shards."""
        return np.concatenate(self._round("values", [()] * self.n_shards, Kind.SHARD_FETCH))

    def seal(self):
        """One round: every ``WorkerColumns`` takes the union of its partitions' columns
        (given in the registration round) and registers it with the shards."""
        hubs = self.clients.hubs
        with Timer() as timer:
            # one at a time: a ``WorkerColumns`` called from the driver runs in its
            # worker's single actor thread, which another one's call to the shard there
            # would wait for
            answers = [self.clients.call_hub(k, "seal") for k in range(len(hubs))]
        columns, calls = (int(v) for v in np.sum(answers, axis=0))
        partitions = self.engine.n_partitions
        self.engine.ledger.record(Kind.SHARD_REGISTER, calls, 8 * columns + CALL_ID_BYTES * calls,
                                  0, timer.seconds, partitions=partitions, groups=len(hubs))

    def lost(self):
        """What the workers that left the cluster held: a sentence naming each lost
        shard's worker and range (empty in this process or when none left)."""
        addresses = self.clients.addresses
        if addresses is None:
            return ""
        client = self.engine.client
        alive = cluster_workers(client)
        b = self.bounds
        return "; ".join(f"worker {a} left with the shard of parameters {b[k]} to "
                         f"{b[k + 1] - 1}" for k, a in enumerate(addresses) if a not in alive)

    def salvage(self, fallback):
        """One round: the parameters from the shards still reachable, and the ranges of
        those lost with their workers from ``fallback``."""
        b, pieces, fetched = self.bounds, [], 0
        with Timer() as timer:
            for k in range(self.n_shards):
                try:
                    (values,) = self.clients.call_each("values", [(k, ())])
                    fetched += nbytes(values)
                except ShardLostError:
                    values = np.array(fallback[b[k]:b[k + 1]], dtype=np.float64)
                pieces.append(values)
        self.engine.ledger.record(Kind.SHARD_FETCH, self.n_shards, 0, fetched, timer.seconds,
                                  partitions=self.n_shards, groups=self.n_shards)
        return np.concatenate(pieces)

    def record_traffic(self, traffic):
        """Write the pulls and pushes that an evaluation round's kernels counted
        (``traffic``: the tree sum of :data:`TRAFFIC_FIELDS`)."""
        counts = dict(zip(TRAFFIC_FIELDS, np.asarray(traffic, dtype=np.float64)))
        calls = int(counts["calls"])
        ledger = self.engine.ledger
        partitions = self.engine.n_partitions
        ledger.record(Kind.SHARD_PULL, calls, CALL_ID_BYTES * calls, 8 * int(counts["pulled"]),
                      0.0, partitions=partitions, groups=partitions)
        ledger.record(Kind.SHARD_PUSH, calls,
                      8 * int(counts["pushed"]) + CALL_ID_BYTES * calls, 0, 0.0,
                      partitions=partitions, groups=partitions)

    def close(self):
        """Release the shards and the ``WorkerColumns`` (their vectors are dropped)."""
        futures, self._futures = self._futures, []
        for future in futures:
            future.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def make_shards(engine, n_params, n_features, penalty, memory, n_shards=None,
                criterion_scales=None, units=None, means=None):
    """Column shards of ``n_params`` parameters for a fit on ``engine``.

    Parameters
    ----------
    engine : Engine
    n_params, n_features : int
        Parameters (coefficients and intercept) and coefficients.
    penalty : Penalty
        Smooth and separable; applied by each shard to its coefficients.
    memory : int
        Correction pairs each shard keeps.
    n_shards : int, optional
        One per worker on a cluster (placed round-robin when more), one per engine
        thread in this process, by default.  Besides them, one ``WorkerColumns`` per
        worker (one in this process).
    criterion_scales : ndarray, optional
        Each parameter's factor in the optimality test (each shard gets its range's).
    units : ndarray, optional
        Each parameter's unit of iteration (:class:`ColumnShard`; each shard gets its
        range's).
    means : ndarray, optional
        The columns' weighted means, for an iteration centred on them (a fit with an
        intercept; :class:`ColumnShard`; each shard gets its range's).

    Returns
    -------
    ShardSet
    """
    client = getattr(engine, "client", None)
    if client is None:
        n_shards = n_shards or max(1, getattr(engine, "n_threads", 1))
        bounds = shard_bounds(n_params, n_shards)
        shards = [ColumnShard(bounds[k], bounds[k + 1], n_features, penalty, memory,
                              _range(criterion_scales, bounds, k), _range(units, bounds, k),
                              _range(means, bounds, k))
                  for k in range(len(bounds) - 1)]
        hubs = [WorkerColumns(0, ShardClients(bounds, shards))]
        return ShardSet(engine, ShardClients(bounds, shards, hubs=hubs))
    workers = sorted(cluster_workers(client))
    bounds = shard_bounds(n_params, n_shards or len(workers))
    futures, addresses = [], []
    token = uuid.uuid4().hex
    for k in range(len(bounds) - 1):
        worker = workers[k % len(workers)]
        # pinned to its worker: Dask must never recreate it, empty, elsewhere
        futures.append(client.submit(ColumnShard, bounds[k], bounds[k + 1], n_features, penalty,
                                     memory, _range(criterion_scales, bounds, k),
                                     _range(units, bounds, k), _range(means, bounds, k),
                                     actor=True,
                                     workers=[worker], allow_other_workers=False, pure=False,
                                     key=f"daskglm-shard-{token}-{k}"))
        addresses.append(worker)
    start = time.monotonic()

    def actors_of(futures):
        return [future.result(timeout=max(1.0, 60 - (time.monotonic() - start)))
                for future in futures]

    shard_clients = ShardClients(bounds, actors_of(futures), addresses)
    hub_futures = [client.submit(WorkerColumns, k, shard_clients, actor=True, workers=[worker],
                                 allow_other_workers=False, pure=False,
                                 key=f"daskglm-worker-columns-{token}-{k}")
                   for k, worker in enumerate(workers)]
    clients = ShardClients(bounds, shard_clients.shards, addresses, actors_of(hub_futures),
                           workers)
    return ShardSet(engine, clients, futures + hub_futures)


def _range(values, bounds, k):
    """The ``k``-th shard's range of ``values`` (None stays None)."""
    return None if values is None else np.asarray(values)[bounds[k]:bounds[k + 1]]
