"""Exchanges between partition states along a graph: the verb of gossip.

:func:`exchange_with_neighbours` is ONE round in which each partition's state (kept by
the engine under a name, see :meth:`Engine.reduce_stateful`) is replaced by
``mix(own state, [its neighbours' states], item)``.  On a cluster each partition's task
runs on the worker holding it and takes its neighbours' state futures as inputs, so the
states move worker to worker (Dask's transfers) and never through the driver; in this
process the states are passed directly.  The record counts, as sent, the per-partition
items and ``message_bytes`` for every neighbour state a partition receives (the state's
size, which the caller knows), and nothing returned; its ``state_reset`` lists the states
found lost with a worker (passed to ``mix`` as None).
"""

from __future__ import annotations

from ..accounting.bytemodel import nbytes
from .measure import Timer

__all__ = ["exchange_with_neighbours"]


def _mix_task(mix, own, neighbour_states, item):
    from .tasks import pause_if_slowed

    pause_if_slowed()
    return mix(own, list(neighbour_states), item)


def exchange_with_neighbours(engine, state, mix, neighbours, each, *, kind, message_bytes=0):
    """One round: ``state_i <- mix(state_i, [state_j for j in neighbours[i]], each[i])``.

    Parameters
    ----------
    engine : Engine
    state : str
        The name of the partition states (they must exist).
    mix : callable
        ``mix(own, neighbour_states, item) -> new state``; a state lost with a worker is
        passed as None.
    neighbours : sequence of sequence of int
        The partitions whose states partition ``i`` receives.
    each : sequence
        One item per partition, sent to that partition only.
    kind : str
    message_bytes : int
        Bytes of one state, counted once per neighbour state received.
    """
    each = engine._check_each(each)
    neighbours = [tuple(int(j) for j in links) for links in neighbours]
    if len(neighbours) != engine.n_partitions:
        raise ValueError(f"Need the neighbours of every partition: got {len(neighbours)} "
                         f"for {engine.n_partitions} partitions.")
    states = list(engine._states_of(state, must_exist=True))
    n = engine.n_partitions
    lost = set(engine._unrecoverable_states(states))
    with Timer() as timer, engine._probe(kind) as probe:
        if hasattr(engine, "client"):
            def attempt():
                # a worker lost during the exchange: its states restart, as lost ones do
                lost.update(engine._unrecoverable_states(states))
                return _exchange_on_cluster(engine, states, lost, mix, neighbours, each,
                                            probe)

            new_states = engine._recovering(attempt)
        else:
            run = probe.timed(_mix_task)
            new_states = [run(mix, states[i], [states[j] for j in neighbours[i]], each[i])
                          for i in range(n)]
    engine._states[state] = new_states
    engine._release_states(states)
    received = sum(len(links) for links in neighbours)
    record = engine.ledger.record(kind, n, nbytes(each) + received * int(message_bytes), 0,
                                  timer.seconds, partitions=n, groups=n, probe=probe)
    record.state_reset = tuple(sorted(lost))


def _exchange_on_cluster(engine, states, lost, mix, neighbours, each, probe):
    lost = set(lost)
    inputs = [None if i in lost else future for i, future in enumerate(states)]
    keys = probe.keys(engine.n_partitions)
    places = engine._placement(range(engine.n_partitions))
    created = []
    try:
        for i in range(engine.n_partitions):
            created.append(engine.client.submit(
                _mix_task, mix, inputs[i], [inputs[j] for j in neighbours[i]], each[i],
                key=keys[i], pure=False, **places[i]))
        from distributed import wait

        wait(created)
        for future in created:
            if future.status == "error":
                future.result()  # raises the mix's error
    except BaseException:
        for future in created:
            future.release()
        raise
    return created
