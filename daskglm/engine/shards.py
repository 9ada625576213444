"""Column shards of the parameters on the workers, and the rounds that reach them.

:func:`make_shards` places one :class:`~daskglm.compute.column_shards.ColumnShard` per
worker (by default): on a cluster each is a Dask Actor pinned to its worker (calls are
direct worker-to-worker messages, no scheduler, no task per call); in this process they
are plain objects shared by the engine's threads.  The :class:`ShardSet` the driver
holds runs the coordinator's commands on every shard and writes each as one ledger
record; the :class:`ShardClients` handle travels to the partition tasks (it pickles to
references to the actors) and makes their pulls and pushes.

Rounds written to the ledger (:class:`~daskglm.accounting.kinds.Kind`):

* ``shard_op`` -- one coordinator command on every shard: tasks = shards, sent = the
  command's arguments (scalars, slot numbers, ``2 m`` coefficients), returned = the
  shards' answers (scalars, dot products);
* ``shard_load`` / ``shard_fetch`` -- the whole parameter vector to the shards at the
  start, from them at the end (the only rounds whose size is ``d``);
* ``shard_register``, ``shard_pull``, ``shard_push`` -- the partitions' traffic with the
  shards during an evaluation round, written by :meth:`ShardSet.record_traffic` from the
  counts the kernels return: ``8`` bytes per column index registered (once), per
  coefficient pulled and per gradient entry pushed, plus ``16`` bytes of identifiers per
  call; ``seconds`` 0 (the calls run inside the evaluation round).

When a shard's worker is lost, the shard's part of the iterate is gone: every call then
raises :class:`ShardLostError` within about a second.
"""

from __future__ import annotations

import time
import uuid

import numpy as np

from ..accounting.bytemodel import nbytes
from ..accounting.kinds import Kind
from ..compute.column_shards import TRAFFIC_FIELDS, ColumnShard, shard_bounds
from .asynchronous import HolderLostError
from .measure import Timer

__all__ = ["ShardLostError", "ShardClients", "ShardSet", "make_shards", "CALL_ID_BYTES"]

#: Errors a shard raises on its own arguments (anything else a call raises means the
#: shard's worker is gone: Dask says so with RuntimeError, OSError or a time-out).
_SHARD_CHECKS = (ValueError, TypeError, LookupError)

#: Identifiers a pull or a push carries besides its values (partition, round or step).
CALL_ID_BYTES = 16


class ShardLostError(HolderLostError):
    """A worker holding a column shard was lost, and that part of the parameters with it."""


class ShardClients:
    """What partition tasks use to reach the shards: the ranges and one handle per shard.

    Attributes
    ----------
    bounds : ndarray of int64
        Shard ``k`` holds parameters ``bounds[k]`` to ``bounds[k + 1] - 1``.
    addresses : list of str or None
        The shards' workers on a cluster; None in this process.
    """

    #: Seconds between checks, while a call waits, that the shard's worker is alive.
    poll = 1.0

    def __init__(self, bounds, shards, addresses=None):
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.shards = list(shards)
        self.addresses = None if addresses is None else list(addresses)

    def call_each(self, method, calls):
        """``[shards[k].method(*args) for k, args in calls]``, the calls made concurrently
        (those to a shard in the calling task's own worker directly)."""
        if self.addresses is None:
            return [getattr(self.shards[k], method)(*args) for k, args in calls]
        pending = []
        here = _this_worker()
        for k, args in calls:
            if here is not None and self.addresses[k] == here.address:
                # the shard lives in this process: a direct call, nothing serialised
                # (its methods called from tasks are safe alongside each other)
                local = here.state.actors.get(self.shards[k].key)
                if local is not None:
                    pending.append((k, _Done(getattr(local, method)(*args))))
                    continue
            try:
                pending.append((k, getattr(self.shards[k], method)(*args)))
            except _SHARD_CHECKS:
                raise
            except Exception as exc:
                raise self._lost(k, exc) from exc
        return [self._result(k, future) for k, future in pending]

    def _result(self, k, future):
        # a dead worker refuses connections at once but Dask retries them for its connect
        # timeout (30 s): ask the scheduler every ``poll`` seconds whether it is there
        try:
            while True:
                try:
                    return future.result(timeout=self.poll)
                except TimeoutError:
                    if not self._alive(self.addresses[k]):
                        raise TimeoutError(f"worker {self.addresses[k]} left the cluster") \
                            from None
        except _SHARD_CHECKS:
            raise
        except Exception as exc:
            raise self._lost(k, exc) from exc

    @staticmethod
    def _alive(address):
        from distributed import get_client

        try:
            return address in get_client().scheduler_info(n_workers=-1)["workers"]
        except Exception:  # no client to ask: only the call itself can tell
            return True

    def _lost(self, k, exc):
        return ShardLostError(
            f"The column shard holding parameters {self.bounds[k]} to {self.bounds[k + 1] - 1} "
            f"on worker {self.addresses[k]} is unreachable (its worker was lost): "
            f"{type(exc).__name__}: {exc}.  A sharded fit keeps its iterate and its L-BFGS "
            f"memory on the workers, so it cannot go on: fit again."
        )

    def __reduce__(self):
        if self.addresses is None:
            raise TypeError("In-process shards cannot be pickled; they are shared by threads.")
        return (ShardClients, (self.bounds, self.shards, self.addresses))


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

    def record_traffic(self, traffic):
        """Write the pulls, pushes and registrations that an evaluation round's kernels
        counted (``traffic``: the tree sum of :data:`TRAFFIC_FIELDS`)."""
        counts = dict(zip(TRAFFIC_FIELDS, np.asarray(traffic, dtype=np.float64)))
        calls = int(counts["calls"])
        ledger = self.engine.ledger
        partitions = self.engine.n_partitions
        if counts["registered"]:
            ledger.record(Kind.SHARD_REGISTER, calls,
                          8 * int(counts["registered"]) + CALL_ID_BYTES * calls, 0, 0.0,
                          partitions=partitions, groups=partitions)
        ledger.record(Kind.SHARD_PULL, calls, CALL_ID_BYTES * calls, 8 * int(counts["pulled"]),
                      0.0, partitions=partitions, groups=partitions)
        ledger.record(Kind.SHARD_PUSH, calls,
                      8 * int(counts["pushed"]) + CALL_ID_BYTES * calls, 0, 0.0,
                      partitions=partitions, groups=partitions)

    def close(self):
        """Release the shards (their vectors are dropped)."""
        futures, self._futures = self._futures, []
        for future in futures:
            future.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def make_shards(engine, n_params, n_features, penalty, memory, n_shards=None):
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
        thread in this process, by default.

    Returns
    -------
    ShardSet
    """
    client = getattr(engine, "client", None)
    if client is None:
        n_shards = n_shards or max(1, getattr(engine, "n_threads", 1))
        bounds = shard_bounds(n_params, n_shards)
        shards = [ColumnShard(bounds[k], bounds[k + 1], n_features, penalty, memory)
                  for k in range(len(bounds) - 1)]
        return ShardSet(engine, ShardClients(bounds, shards))
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    bounds = shard_bounds(n_params, n_shards or len(workers))
    futures, addresses = [], []
    token = uuid.uuid4().hex
    for k in range(len(bounds) - 1):
        worker = workers[k % len(workers)]
        # pinned to its worker: Dask must never recreate it, empty, elsewhere
        futures.append(client.submit(ColumnShard, bounds[k], bounds[k + 1], n_features, penalty,
                                     memory, actor=True, workers=[worker],
                                     allow_other_workers=False, pure=False,
                                     key=f"daskglm-shard-{token}-{k}"))
        addresses.append(worker)
    start = time.monotonic()
    actors = [future.result(timeout=max(1.0, 60 - (time.monotonic() - start)))
              for future in futures]
    return ShardSet(engine, ShardClients(bounds, actors, addresses), futures)
