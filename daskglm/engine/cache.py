"""The cache policy: keep the partitions in memory, or read them from their source every round."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..compute.summaries import stored_bytes
from .dask_compat import cluster_workers
from .partitions import is_dask

#: ``cache="auto"`` keeps the data in memory when they take at most this share of the
#: memory free on the workers (or in this process), leaving room for the rounds' work.
CACHE_SAFETY = 0.5


def data_nbytes(X, y, sample_weight=None):
    """Bytes of ``(X, y, sample_weight)`` once in memory.

    For a Dask array with sparse chunks, the stored size of its first chunk scaled to all
    its rows (one chunk is read); an array whose length is not known yet counts
    as 0.
    """
    total = 0
    for a in (X, y, sample_weight):
        if a is None or any(math.isnan(size) for size in np.shape(a)):
            continue
        if sp.issparse(a):
            total += stored_bytes(a)
        elif is_dask(a) and sp.issparse(getattr(a, "_meta", None)) and a.numblocks[0]:
            first = a.blocks[0].compute()
            total += stored_bytes(first) * a.shape[0] // max(1, first.shape[0])
        else:
            total += int(np.prod(np.shape(a))) * np.dtype(a.dtype).itemsize
    return total


def free_memory(client):
    """Bytes of memory free for data: on the workers of ``client``, or in this process.

    A worker with a memory limit has that limit less what it uses; workers without one
    (``memory_limit=0`` or None) may use their machine's available memory, counted once
    per machine however many such workers share it.
    """
    if client is None:
        return _available_memory()
    workers = cluster_workers(client)
    free = 0
    unlimited = []
    for address, info in workers.items():
        limit = info.get("memory_limit") or 0
        if not limit:
            unlimited.append(address)
            continue
        used = (info.get("metrics") or {}).get("memory", 0) or 0
        free += max(0, int(limit) - int(used))
    if unlimited:
        available = client.run(_available_memory, workers=unlimited)
        by_host = {}
        for address, value in available.items():
            host = workers[address].get("host") or address
            by_host[host] = max(by_host.get(host, 0), int(value))
        free += sum(by_host.values())
    return free


def _available_memory():
    """Memory available on this machine, in bytes."""
    import psutil

    return int(psutil.virtual_memory().available)


def choose_cache(cache, X, y, sample_weight, client):
    """The cache policy for a fit, why, and how many partitions to keep in memory:
    ``("memory" | "none" | "partial", reason, kept)``.

    ``"auto"`` keeps every partition when the data fit in :data:`CACHE_SAFETY` of the
    free memory; otherwise the leading partitions that fit there (``"partial"``, when at
    least one does), the others read from their source in every round; ``kept`` is the
    number of leading row chunks of ``X`` kept (all of them for ``"memory"``, none for
    ``"none"``).

    Parameters
    ----------
    cache : {"auto", "memory", "none"}
    X, y, sample_weight : the data
    client : distributed.Client or None

    Raises
    ------
    ValueError
        For an unknown policy.
    """
    if cache not in ("auto", "memory", "none"):
        raise ValueError(f"cache must be 'auto', 'memory' or 'none'; got {cache!r}.")
    chunks = _row_chunks(X)
    if not any(is_dask(a) for a in (X, y, sample_weight)):
        return "memory", "the data are already in memory", len(chunks)
    if cache != "auto":
        return cache, f"cache={cache!r} was asked for", len(chunks) if cache == "memory" else 0
    need = data_nbytes(X, y, sample_weight)
    free = free_memory(client)
    where = "on the workers" if client is not None else "in this process"
    room = CACHE_SAFETY * free
    if need <= room:
        return "memory", (f"the data ({need / 1e9:.2f} GB) fit in {CACHE_SAFETY:.0%} of the "
                          f"{free / 1e9:.2f} GB free {where}"), len(chunks)
    kept = _leading_chunks_within(chunks, need, room)
    if kept == 0:
        return "none", (f"the data ({need / 1e9:.2f} GB) exceed {CACHE_SAFETY:.0%} of the "
                        f"{free / 1e9:.2f} GB free {where}, and so does their first "
                        "partition: streaming them from their source"), 0
    share = sum(chunks[:kept]) / sum(chunks)
    return "partial", (f"the data ({need / 1e9:.2f} GB) exceed {CACHE_SAFETY:.0%} of the "
                       f"{free / 1e9:.2f} GB free {where}: keeping the first {kept} of "
                       f"{len(chunks)} partitions ({share:.0%} of the rows) in memory and "
                       "streaming the others from their source"), kept


def _row_chunks(X):
    """Rows of each row chunk of ``X`` (one chunk for in-memory input)."""
    if is_dask(X):
        return [int(rows) for rows in X.chunks[0]] if not any(
            math.isnan(rows) for rows in X.chunks[0]) else []
    return [int(np.shape(X)[0])]


def _leading_chunks_within(chunks, need, room):
    """How many leading chunks hold at most ``room`` bytes, the data's ``need`` bytes
    spread over the rows."""
    per_row = need / max(1, sum(chunks))
    used, kept = 0.0, 0
    for rows in chunks:
        used += rows * per_row
        if used > room:
            break
        kept += 1
    return kept
