"""How a cluster round's partials are summed: a tree, a parameter server, or a ring.

``make_engine(..., topology=...)`` sets it for the tree rounds (``reduce``,
``reduce_each``) of the distributed backend; every other round, and every round in this
process (where nothing crosses a process), is unchanged.

``"tree"``
    The fixed-order tree of fan-in ``split_every`` (:mod:`daskglm.compute.tree`): combine
    tasks wherever Dask puts them, ``ceil(log_k G)`` levels.
``"server"``
    A central server: every group's partial goes to one worker (the first group's), where
    one task sums them in the same fixed-order tree, then to the driver.  The same bits
    as ``"tree"``; one level, but all ``G - 1`` remote partials arrive over the server's
    link.
``"ring"``
    Ring allreduce over the groups' partials (:mod:`daskglm.compute.ring`): each member
    flattens its partial into ``G`` chunks; ``G - 1`` reduce-scatter steps, then ``G - 1``
    all-gather steps, each a task pinned to the next member that receives one chunk, so
    every member sends ``2 (G - 1) / G`` of a partial and ends holding the sum; the first
    member rebuilds it for the driver.  Equal to the tree sum up to round-off (the
    additions happen in another order).  Applied to the rounds whose results are
    additive vectors (:data:`RING_KINDS`); the others use the tree.

The tasks of a server or a ring carry the round's combine keys, so the bytes they move are
measured as the round's; the probe marks the record with its topology and the bytes the
topology returns (:func:`returned_bytes`).
"""

from __future__ import annotations

from ..accounting.kinds import Kind
from ..compute.ring import ring_add, ring_assemble, ring_pick, ring_prepare
from ..compute.tree import combine_nodes, tree_root
from .tasks import identity

__all__ = ["TOPOLOGIES", "RING_KINDS", "check_topology", "server_sum", "ring_sum",
           "returned_bytes"]

#: The aggregation topologies of cluster rounds.
TOPOLOGIES = ("tree", "server", "ring")

#: Round kinds whose results are sums of numbers and arrays, which a ring can cut into
#: chunks (a validation summary, with its label sets and messages, cannot be).
RING_KINDS = frozenset({Kind.GRADIENT, Kind.HESSIAN, Kind.GRAM, Kind.SGD_BATCH,
                        Kind.LOCAL_SGD})


def check_topology(topology):
    """``topology`` if it is one of :data:`TOPOLOGIES`, else a ValueError."""
    if not isinstance(topology, str) or topology not in TOPOLOGIES:
        raise ValueError(f"topology must be one of {list(TOPOLOGIES)}; got {topology!r}.")
    return topology


def returned_bytes(topology, result_bytes, groups):
    """Payload bytes a tree round moves back under ``topology``, ``r`` = one result.

    ``"server"``: ``G`` partials to the server and the sum to the driver, ``(G + 1) r``;
    ``"ring"``: ``G - 1`` reduce-scatter and ``G - 1`` all-gather steps of ``G`` chunks of
    ``r / G`` each, and the sum to the driver, ``(2 (G - 1) + 1) r``.  (A tree's is
    counted by the engine: ``T r``.)
    """
    if topology == "server":
        return (groups + 1) * result_bytes
    if topology == "ring":
        return (2 * (groups - 1) + 1) * result_bytes
    raise ValueError(f"No returned-bytes rule for topology {topology!r}.")


def server_sum(engine, group_futures, probe, created):
    """Every group's nodes to one task on the first group's worker: ``(sum, tasks)``."""
    n = engine.n_partitions
    place = engine._placement([engine.groups[0][0]])[0]
    future = engine.client.submit(combine_nodes, n, *group_futures, pure=False,
                                  key=probe.combine_key(), **place)
    created.append(future)
    return future.result()[tree_root(n)], 1


def ring_sum(engine, group_futures, probe, created):
    """Ring allreduce of the groups' partials, members pinned to the groups' workers:
    ``(sum, tasks)``."""
    client = engine.client
    members = len(group_futures)
    places = engine._placement([group[0] for group in engine.groups])

    def submit(fn, *args, member):
        future = client.submit(fn, *args, pure=False, key=probe.combine_key(),
                               **places[member])
        created.append(future)
        return future

    prepared = [submit(ring_prepare, f, members, member=i)
                for i, f in enumerate(group_futures)]
    # reduce-scatter: member i starts with its own chunk i; at step s it passes the
    # running sum of chunk (i - s) mod W to member i + 1, which adds its own
    running = [submit(ring_pick, prepared[i], i, member=i) for i in range(members)]
    for step in range(members - 1):
        running = [
            submit(ring_add, running[(i - 1) % members], prepared[i],
                   (i - 1 - step) % members, member=i)
            for i in range(members)
        ]
    # member i now holds the whole sum of chunk (i + 1) mod W; all-gather passes them on
    held = [{(i + 1) % members: running[i]} for i in range(members)]
    moving = list(running)
    for step in range(members - 1):
        moving = [submit(identity, moving[(i - 1) % members], member=i)
                  for i in range(members)]
        for i in range(members):
            held[i][(i - step) % members] = moving[i]
    chunks = [held[0][c] for c in range(members)]
    total = submit(ring_assemble, prepared[0], *chunks, member=0)
    tasks = 2 * members + 2 * members * (members - 1) + 1  # prepare, pick, steps, assemble
    return total.result(), tasks
