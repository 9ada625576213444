"""The store's chunk files and the page cache: residency (``mincore``), eviction,
dropping the cache, and plain sequential reads of the files.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import pathlib
import time

import numpy as np

from benchmarks.out_of_core.units import rate

#: Names of the metadata files of zarr formats 2 and 3, never chunks.
METADATA_FILES = frozenset({"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"})


def store_files(path, name):
    """The chunk files of the array ``name`` of a zarr store, in chunk order.

    Parameters
    ----------
    path : str or os.PathLike
        Directory of the store (zarr format 2 or 3).
    name : str
        Array in the store's root group, e.g. ``"X"``.

    Returns
    -------
    list of pathlib.Path
        Every file under the array's directory except zarr's metadata files.
    """
    root = pathlib.Path(path) / name

    def order(file):
        parts = file.relative_to(root).parts
        return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)

    files = [p for p in root.rglob("*") if p.is_file() and p.name not in METADATA_FILES]
    return sorted(files, key=order)


def file_bytes(files):
    """Total size of ``files`` in bytes."""
    return sum(os.path.getsize(f) for f in files)


def _libc():
    """``mmap``, ``munmap`` and ``mincore`` of the C library, with their signatures."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    return libc


def resident_bytes(files):
    """Bytes of ``files`` held in the page cache, from ``mincore(2)``.

    Mapping a file and asking the kernel which of its pages are resident reads nothing
    and changes nothing in the cache.

    Parameters
    ----------
    files : iterable of path-like

    Returns
    -------
    int or None
        None where the residency cannot be measured (no ``mincore``, a failed call).
    """
    try:
        libc = _libc()
    except (OSError, AttributeError):
        return None
    failed = ctypes.c_void_p(-1).value
    page = mmap.PAGESIZE
    total = 0
    for file in files:
        size = os.path.getsize(file)
        if size == 0:
            continue
        with open(file, "rb") as handle:
            address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, handle.fileno(), 0)
        if address is None or address == failed:
            return None
        try:
            pages = -(-size // page)
            vector = (ctypes.c_ubyte * pages)()
            if libc.mincore(address, size, vector) != 0:
                return None
            resident = int(np.count_nonzero(np.frombuffer(vector, dtype=np.uint8) & 1))
        finally:
            libc.munmap(address, size)
        total += min(size, resident * page)
    return total


def resident_share(files):
    """Share of the bytes of ``files`` in the page cache, or None."""
    resident, size = resident_bytes(files), file_bytes(files)
    return None if resident is None or not size else resident / size


def evict(files):
    """Evict ``files`` from the page cache: write back dirty pages, then drop theirs.

    Uses ``posix_fadvise(POSIX_FADV_DONTNEED)`` file by file, which needs no privileges
    and leaves every other file's pages alone.

    Parameters
    ----------
    files : iterable of path-like

    Returns
    -------
    float or None
        Share of the files' bytes still in the page cache afterwards.
    """
    files = list(files)
    os.sync()
    for file in files:
        fd = os.open(file, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return resident_share(files)


def drop_page_cache():
    """Try to drop the whole page cache (``echo 3 > /proc/sys/vm/drop_caches``).

    Needs root; on a shared machine it slows other processes' next reads for a while.

    Returns
    -------
    dict
        ``ok`` (whether the kernel accepted the write) and ``note`` (the error, if any).
    """
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as handle:
            handle.write("3\n")
    except OSError as exc:
        return {"ok": False, "note": f"{type(exc).__name__}: {exc}"}
    return {"ok": True, "note": "page cache dropped (sync; echo 3 > /proc/sys/vm/drop_caches)"}


def sequential_read(files, label):
    """Read every file whole with ``open().read()``, one after the other.

    Parameters
    ----------
    files : list of path-like
    label : str
        What this read is (``"as found"``, ``"cold"``, ``"warm"``).

    Returns
    -------
    dict
        ``read``, ``resident_before`` (share of the bytes in the page cache before the
        read), ``bytes``, ``seconds``, ``gb_per_s``.
    """
    resident = resident_share(files)
    total = 0
    start = time.perf_counter()
    for file in files:
        with open(file, "rb") as handle:
            total += len(handle.read())
    seconds = time.perf_counter() - start
    return {"read": label, "resident_before": resident, "bytes": total, "seconds": seconds,
            "gb_per_s": rate(total, seconds)}


def disk_reads(files, drop=True):
    """Sequential reads of ``files``: as found, cold and warm.

    Parameters
    ----------
    files : list of path-like
    drop : bool
        Before the cold read, try to drop the whole page cache (:func:`drop_page_cache`)
        as well as evicting ``files`` (:func:`evict`).

    Returns
    -------
    dict
        ``reads`` (one dict per read, see :func:`sequential_read`), ``drop_caches`` (the
        outcome of the attempt, or None when not tried), ``resident_after_drop`` and
        ``resident_after_evict`` (shares of the files still cached after each step).
    """
    reads = [sequential_read(files, "as found")]
    dropped = drop_page_cache() if drop else None
    after_drop = resident_share(files) if drop else None
    after_evict = evict(files)
    reads.append(sequential_read(files, "cold"))
    reads.append(sequential_read(files, "warm"))
    return {"reads": reads, "drop_caches": dropped, "resident_after_drop": after_drop,
            "resident_after_evict": after_evict}
