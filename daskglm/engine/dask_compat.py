"""What the engine needs of ``distributed`` beyond its public API, in one place.

Direct rounds (:mod:`.direct`) call partition holders (Dask actors) straight from the
driver with a short connect timeout, let one holder relay a call to others, and run a
holder's groups on its worker's task threads.  An actor's public handle offers none of
that, so they use four internals of ``distributed``:

* ``distributed.core.send_recv`` with ``op="actor_execute"`` -- the message a public
  actor handle sends, here on a connection from a pool with a short connect timeout;
* ``distributed.actor.ProxyRPC`` -- the same message through the scheduler, for workers
  the driver cannot reach;
* ``distributed.protocol.to_serialize`` -- the payload's frame;
* ``Worker.executors["default"]`` -- the worker's task thread pool.

:func:`direct_rounds_supported` checks that the first three are there, with the
signatures used, in the installed ``distributed``; where they are not, the engine runs
every round as tasks and warns once (:func:`warn_without_direct_rounds`).  A worker
without the fourth makes no holder (:func:`worker_executor` raises), which the engine
takes as it takes any holder that fails: its rounds run as tasks.  CI runs the suite against
the oldest ``dask``/``distributed`` that ``pyproject.toml`` allows and the newest.

Scattering partitions (:func:`~daskglm.engine.partitions.scatter_partitions`) asks the
scheduler which workers are running, and whether one is still known while a scatter to it
runs, through two of the scheduler's handlers (:func:`running_worker_threads`,
:func:`worker_known`): ``ncores_running`` (no public ``Client`` method says which workers
are running rather than paused or closing) and ``ncores``, which the public
``Client.nthreads`` wraps but cannot be awaited inside ``Client.sync``.

Which workers the cluster has, with their memory limits, comes from the scheduler's
``identity`` handler (:func:`cluster_workers`).  ``Client.scheduler_info()`` returns the
client's cached copy of it, which newer ``distributed`` releases refresh in the background
without per-worker information: a call that races the refresh sees no workers.

The module also holds the differences between the supported versions that the engine
meets (:func:`cancel`).
"""

from __future__ import annotations

import functools
import inspect
import warnings

__all__ = ["direct_rounds_supported", "warn_without_direct_rounds", "actor_call",
           "worker_executor", "running_worker_threads", "worker_known", "cluster_workers", "cancel"]


@functools.cache
def direct_rounds_supported():
    """``(True, "")`` when the internals direct rounds use are there, else ``(False,
    reason)``."""
    try:
        import distributed
        from distributed.actor import ProxyRPC  # noqa: F401
        from distributed.core import send_recv
        from distributed.protocol import to_serialize  # noqa: F401
    except ImportError as exc:
        return False, f"distributed lacks an internal direct rounds use ({exc})"
    parameters = inspect.signature(send_recv).parameters
    if not {"comm", "reply", "serializers", "deserializers"} <= set(parameters):
        return False, (f"distributed {distributed.__version__}: send_recv takes "
                       f"{sorted(parameters)}")
    return True, ""


@functools.cache
def warn_without_direct_rounds():
    """Say once per process why every round runs as tasks."""
    supported, reason = direct_rounds_supported()
    if not supported:
        warnings.warn(f"daskglm runs every round as scheduler tasks (a few ms slower each): "
                      f"{reason}.", RuntimeWarning, stacklevel=3)
    return supported


async def actor_call(pool, scheduler, address, key, method, args, kwargs, *, straight,
                     connect_seconds):
    """Call ``method`` of the actor ``key`` on the worker at ``address``: its response
    dict (``status``, ``result`` or ``exception``).

    Straight to the worker through the connection ``pool`` (connecting for at most
    ``connect_seconds``), or through the ``scheduler``'s proxy.
    """
    from distributed.actor import ProxyRPC
    from distributed.core import send_recv
    from distributed.protocol import to_serialize

    message = {"function": method, "actor": key, "args": [to_serialize(a) for a in args],
               "kwargs": kwargs}
    if not straight:
        return await ProxyRPC(scheduler, address).actor_execute(**message)
    comm = await pool.connect(address, timeout=connect_seconds)
    try:
        return await send_recv(comm=comm, op="actor_execute", **message)
    finally:
        pool.reuse(address, comm)


def worker_executor(worker):
    """The thread pool that runs ``worker``'s tasks.

    Raises
    ------
    RuntimeError
        Where this version's workers keep it elsewhere (the holder is then not made, and
        the engine runs its rounds as tasks).
    """
    executor = getattr(worker, "executors", {}).get("default")
    if executor is None:
        raise RuntimeError("this version of distributed keeps no 'default' executor on its "
                           "workers")
    return executor


def running_worker_threads(client):
    """``{address: threads}`` of the workers the scheduler lists as running now (not paused,
    not closing)."""
    return client.sync(client.scheduler.ncores_running)


async def worker_known(client, worker):
    """Whether the scheduler still knows ``worker`` (awaited inside ``client.sync``)."""
    return bool(await client.scheduler.ncores(workers=[worker]))


def cluster_workers(client):
    """``{address: info}`` of every worker the scheduler knows, asked of it now.

    ``info`` is the scheduler's record of the worker (``memory_limit``, ``nthreads``,
    ``metrics``...), as in ``Client.scheduler_info()["workers"]``, without that method's
    race with the client's background refresh (see the module's notes).
    """
    return client.sync(client.scheduler.identity, n_workers=-1)["workers"]


def cancel(client, futures, reason):
    """``client.cancel(futures)``, with the ``reason`` where the version takes one
    (``distributed`` >= 2024.2)."""
    if "reason" in inspect.signature(client.cancel).parameters:
        client.cancel(futures, reason=reason)
    else:
        client.cancel(futures)
