"""The cache policy: keep the partitions in memory, or read them from their source every round."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..backend import is_sparse
from ..compute.categorical_matrix import is_categorical_matrix
from ..compute.summaries import stored_bytes
from .dask_compat import cluster_workers
from .partitions import is_dask

#: ``cache="auto"`` keeps the data in memory when they take at most this share of the
#: memory free on the workers (or in this process), leaving room for the rounds' work.
CACHE_SAFETY = 0.5

#: Dask's config key for the copies that ``cache="auto"`` keeps in memory: ``"exact"`` (the
#: default) keeps partitions as they are read; ``"float32"`` keeps float32 copies of a dense
#: float64 ``X`` when the data do not all fit as they are, so that up to twice as many rows
#: stay in memory and fewer are read from their source in every round.
KEPT_COPIES_KEY = "daskglm.kept-copies"


class CacheChoice(NamedTuple):
    """What :func:`choose_cache` chose."""

    policy: str
    """``"memory"``, ``"partial"`` or ``"none"``."""
    reason: str
    """Why, in a sentence (logged by the estimators)."""
    kept: int
    """How many leading row chunks of ``X`` are kept in memory."""
    float32: bool
    """Whether the kept chunks of ``X`` are float32 copies of float64 data."""


def data_nbytes(X, y, sample_weight=None):
    """Bytes of ``(X, y, sample_weight)`` once in memory.

    For a Dask array with sparse chunks or categorical blocks, the stored size of its
    first chunk scaled to all its rows (one chunk is read); an array whose length is not
    known yet counts as 0.
    """
    total = 0
    for a in (X, y, sample_weight):
        if a is None or any(math.isnan(size) for size in np.shape(a)):
            continue
        if sp.issparse(a):
            total += stored_bytes(a)
        elif is_dask(a) and _stored_apart(getattr(a, "_meta", None)) and a.numblocks[0]:
            first = a.blocks[0].compute()
            total += stored_bytes(first) * a.shape[0] // max(1, first.shape[0])
        else:
            total += int(np.prod(np.shape(a))) * np.dtype(a.dtype).itemsize
    return total


def _stored_apart(meta):
    """Whether chunks of the type of ``meta`` take other bytes than their shape says:
    sparse matrices and arrays (scipy, ``cupyx``, pydata ``sparse``: one of 1e5 x 2^20
    with 20 non-zeros a row takes 24 MB, where its shape says 840 GB) and categorical
    blocks."""
    return (is_sparse(meta) or hasattr(meta, "to_scipy_sparse")
            or is_categorical_matrix(meta))


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


def kept_copies():
    """The copies that ``cache="auto"`` keeps (Dask's config key :data:`KEPT_COPIES_KEY`).

    Raises
    ------
    ValueError
        For a value other than ``"exact"`` and ``"float32"``.
    """
    import dask

    value = dask.config.get(KEPT_COPIES_KEY, "exact")
    if value not in ("exact", "float32"):
        raise ValueError(f"The Dask config key {KEPT_COPIES_KEY!r} must be 'exact' or "
                         f"'float32'; got {value!r}.")
    return value


def _float32_copies_apply(X):
    """Whether float32 copies of ``X``'s partitions are smaller than the partitions: a
    Dask array of dense numpy float64 chunks."""
    return (is_dask(X) and X.dtype == np.float64
            and type(getattr(X, "_meta", None)) is np.ndarray)


def choose_cache(cache, X, y, sample_weight, client):
    """The cache policy for a fit, why, how many partitions to keep in memory, and whether
    as float32 copies (a :class:`CacheChoice`).

    ``"auto"`` keeps every partition when the data fit in :data:`CACHE_SAFETY` of the
    free memory; otherwise the leading partitions that fit there (``"partial"``, when at
    least one does), the others read from their source in every round; ``kept`` is the
    number of leading row chunks of ``X`` kept (all of them for ``"memory"``, none for
    ``"none"``).  When the data do not all fit and :func:`kept_copies` is ``"float32"``,
    the kept chunks of a dense float64 ``X`` are float32 copies, and as many are kept
    as fit at their size (all of them when they all fit: ``"memory"``).

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
    copies = kept_copies()
    chunks = _row_chunks(X)
    if not any(is_dask(a) for a in (X, y, sample_weight)):
        return CacheChoice("memory", "the data are already in memory", len(chunks), False)
    if cache != "auto":
        return CacheChoice(cache, f"cache={cache!r} was asked for",
                           len(chunks) if cache == "memory" else 0, False)
    need = data_nbytes(X, y, sample_weight)
    free = free_memory(client)
    where = "on the workers" if client is not None else "in this process"
    room = CACHE_SAFETY * free
    exceed = (f"the data ({need / 1e9:.2f} GB) exceed {CACHE_SAFETY:.0%} of the "
              f"{free / 1e9:.2f} GB free {where}")
    if need <= room:
        return CacheChoice("memory", (f"the data ({need / 1e9:.2f} GB) fit in "
                                      f"{CACHE_SAFETY:.0%} of the {free / 1e9:.2f} GB free "
                                      f"{where}"), len(chunks), False)
    float32 = copies == "float32" and _float32_copies_apply(X)
    if float32:
        need -= X.nbytes // 2
        exceed += f" ({need / 1e9:.2f} GB with float32 copies of X)"
        if need <= room:
            return CacheChoice("memory", (f"{exceed[:-1]}, which fit): keeping float32 "
                                          f"copies of X ({KEPT_COPIES_KEY}='float32')"),
                               len(chunks), True)
    kept = _leading_chunks_within(chunks, need, room)
    if kept == 0:
        return CacheChoice("none", (f"{exceed}, and so does their first partition: "
                                    "streaming them from their source"), 0, False)
    share = sum(chunks[:kept]) / sum(chunks)
    copies = " as float32 copies" if float32 else ""
    return CacheChoice("partial", (f"{exceed}: keeping the first {kept} of {len(chunks)} "
                                   f"partitions ({share:.0%} of the rows) in memory{copies} "
                                   "and streaming the others from their source"),
                       kept, float32)


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
