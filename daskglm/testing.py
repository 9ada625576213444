"""Helpers for tests and demos on a real cluster.

:func:`slow_worker` makes one worker a straggler, to show what deadline rounds
(:meth:`daskglm.engine.Engine.reduce_by_deadline`) do with it::

    from daskglm.testing import slow_worker

    worker = sorted(client.nthreads())[1]
    with slow_worker(client, worker, 3.0):
        round_ = engine.reduce_by_deadline(loss_grad, params, family, True,
                                           kind="gradient", deadline=1.0)
    round_.dropped  # the partitions that worker holds

Nothing here is used by a fit.
"""

from __future__ import annotations

from contextlib import contextmanager

from .engine.dask_compat import cluster_workers

__all__ = ["slow_worker"]


def _set_delay(address, seconds):
    from daskglm.engine import tasks as engine

    if seconds:
        engine.TASK_DELAYS[address] = float(seconds)
    else:
        engine.TASK_DELAYS.pop(address, None)


@contextmanager
def slow_worker(client, worker_address, seconds):
    """Make every daskglm kernel task on one worker sleep ``seconds`` before it runs.

    Kernel tasks are the tasks that run a kernel on partitions (those of every engine
    verb, and each group of partitions a direct round runs on that worker: see
    :mod:`daskglm.engine.direct`); the combine tasks of the reduction tree and the tasks
    that fetch results are not slowed.  The delay is a module-level setting in the worker's process, set with
    ``client.run`` on entry and removed on exit (also when the block raises); while no
    worker is slowed, a task's check of it costs one test of an empty dict.

    Parameters
    ----------
    client : distributed.Client
    worker_address : str
        The worker to slow, as in ``client.nthreads()``.
    seconds : float
        Extra seconds each kernel task on that worker sleeps (per task: a task that runs
        a group of partitions sleeps once).

    Notes
    -----
    A task already sleeping when the block exits finishes its sleep; tasks that start
    afterwards run at full speed.  Workers in the same process (a ``LocalCluster`` with
    ``processes=False``) share the setting's table but are told apart by address.
    """
    if not seconds >= 0:
        raise ValueError(f"seconds must be >= 0; got {seconds!r}.")
    if worker_address not in cluster_workers(client):
        raise ValueError(f"No worker {worker_address!r} in the cluster.")
    client.run(_set_delay, worker_address, float(seconds), workers=[worker_address])
    try:
        yield
    finally:
        # the worker may be gone by now (a test that kills it): nothing left to undo there,
        # and no call to wait on while Dask tries to connect to it
        if worker_address in cluster_workers(client):
            try:
                client.run(_set_delay, worker_address, 0.0, workers=[worker_address],
                           on_error="ignore")
            except Exception:
                if worker_address in cluster_workers(client):
                    raise
