"""The environment of a run: library versions and a description of the machine."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata

__all__ = ["library_versions", "machine_info", "load_average", "load_text"]

#: Distributions whose versions every result records.
LIBRARIES = ("daskglm", "dask", "distributed", "dask-glm", "dask-ml", "scikit-learn", "pyspark",
             "numpy", "scipy", "pyarrow")


def library_versions(names=LIBRARIES):
    """Installed version of each distribution, or None where it is not installed.

    Parameters
    ----------
    names : iterable of str
        Distribution names as on the package index.

    Returns
    -------
    dict
    """
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _total_memory_bytes():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def _blas():
    import numpy  # noqa: F401  (loads the BLAS that threadpoolctl reports)
    from threadpoolctl import threadpool_info

    return [
        {key: pool.get(key) for key in ("internal_api", "version", "num_threads", "architecture")}
        for pool in threadpool_info()
    ]


def _java():
    from benchmarks.methods.spark_mllib import java_version

    return java_version()


def load_average():
    """The 1-, 5- and 15-minute load averages, or None where unavailable.

    A load well above the number of cores means the timings were taken on a busy machine.
    """
    try:
        return list(os.getloadavg())
    except (OSError, AttributeError):
        return None


def load_text():
    """The load averages as ``"1.02 / 0.98 / 0.75"`` (``"unknown"`` where unavailable)."""
    averages = load_average()
    return "unknown" if averages is None else " / ".join(f"{a:.2f}" for a in averages)


def machine_info():
    """Cores, CPU model, memory, Python, platform, BLAS and Java of this machine.

    Returns
    -------
    dict
    """
    return {
        "cpu_count": os.cpu_count(),
        "usable_cores": _usable_cores(),
        "cpu_model": _cpu_model(),
        "memory_bytes": _total_memory_bytes(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "blas": _blas(),
        "java": _java(),
    }
