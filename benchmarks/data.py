"""Synthetic data sets, generated with a fixed seed and persisted on the workers.

One :class:`DataSpec` describes a design matrix ``X`` split into row partitions, dense
(standard normal float64) or sparse (scipy CSR chunks), and the three targets drawn from
it by :mod:`daskglm.datasets`: ``"binary"`` (``make_classification``, no intercept),
``"continuous"`` (``make_regression``) and ``"counts"`` (``make_poisson``).  The makers
derive ``X`` from the seed and the chunking alone, so every target of a spec is drawn from
the very same ``X`` (the Dask graphs even share their keys).  :func:`make_data` persists
the Dask arrays on the workers (spread by ``client.rebalance``) and keeps an in-memory
copy (numpy, or a CSR matrix, fetched chunk by chunk) for the in-memory peers and for the
shared objective.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["DataSpec", "Data", "make_data", "TARGETS", "memory_needed", "choose_storage"]

#: Kinds of target every data set carries, and the daskglm maker (and intercept) of each.
TARGETS = {
    "binary": ("make_classification", 0.0),
    "continuous": ("make_regression", 0.5),
    "counts": ("make_poisson", 0.5),
}

#: Bytes of memory a data set needs per byte of ``X``: one copy persisted on the workers,
#: the in-memory copy, which is concatenated on one worker, received here and copied into
#: an aligned array, and room for the reference solver's blocks and the methods' own work
#: arrays.  At 3, the 8 GB 1,000,000 x 1,000 dense set was attempted with 23.6 GiB
#: available and its copy killed the workers.
MEMORY_FACTOR = 4.0

#: Partitions of ``X`` a run on a zarr store holds in memory at once, over all workers:
#: the one each worker thread reads and decodes, its packed copy, and the next one read.
ZARR_PARTITIONS_IN_FLIGHT = 8


@dataclass(frozen=True)
class DataSpec:
    """A synthetic data set.

    Attributes
    ----------
    n_samples, n_features : int
        Shape of ``X``.
    n_partitions : int
        Row partitions (Dask chunks) of ``X`` and of the targets.
    seed : int
        Seed of every random draw.
    density : float or None
        None for dense ``X``; else the fraction of entries drawn per row (CSR chunks, see
        :func:`daskglm.datasets.make_classification`).
    storage : {"memory", "zarr", "auto"}
        ``"memory"``: the arrays are persisted on the workers.  ``"zarr"``: they are written
        to a zarr store, which the methods read (as a user whose data do not fit in memory
        would).  ``"auto"``: memory where the set fits (:func:`memory_needed`), else zarr.
    """

    n_samples: int
    n_features: int
    n_partitions: int
    seed: int = 0
    density: float | None = None
    storage: str = "memory"

    @property
    def sparse(self):
        """Whether ``X`` is sparse."""
        return self.density is not None

    @property
    def chunk_rows(self):
        """Rows per partition (the last one may be shorter)."""
        return math.ceil(self.n_samples / self.n_partitions)

    @property
    def label(self):
        """Short description, e.g. ``"1000000x50 dense / 8 partitions"``."""
        layout = "dense" if self.density is None else f"CSR {self.density:g}"
        return f"{self.n_samples}x{self.n_features} {layout} / {self.n_partitions} partitions"

    @property
    def nbytes(self):
        """Size of ``X`` in bytes (values and column indices for CSR)."""
        if self.density is None:
            return 8 * self.n_samples * self.n_features
        per_row = max(1, round(self.density * self.n_features))
        return 12 * self.n_samples * per_row + 8 * (self.n_samples + 1)

    def to_dict(self):
        """The spec, its label and the size of ``X``, as a plain dict."""
        return {**asdict(self), "label": self.label, "X_bytes": self.nbytes}


def memory_needed(spec: DataSpec, storage="memory"):
    """Bytes of memory a run on ``spec`` is expected to need, stored as ``storage``.

    In memory, :data:`MEMORY_FACTOR` times ``X``.  In a zarr store, the targets and, per
    worker, a few partitions in flight (:data:`ZARR_PARTITIONS_IN_FLIGHT`); the
    reference's copy of ``X`` is a memory-mapped file, paged in and out by the system.
    """
    targets = 8 * spec.n_samples * len(TARGETS) * 2
    if storage == "zarr":
        partition = spec.nbytes / spec.n_partitions
        return int(ZARR_PARTITIONS_IN_FLIGHT * partition + targets)
    return int(MEMORY_FACTOR * spec.nbytes + targets)


def choose_storage(spec: DataSpec, available):
    """Where ``spec``'s arrays are kept: ``"memory"``, ``"zarr"``, or None where neither
    fits in ``available`` bytes."""
    candidates = ("memory", "zarr") if spec.storage == "auto" else (spec.storage,)
    for storage in candidates:
        if memory_needed(spec, storage) <= available:
            return storage
    return None


@dataclass
class Data:
    """A data set persisted on the workers, with an in-memory copy.

    Attributes
    ----------
    spec : DataSpec
    X : dask.array.Array
        Persisted; one chunk per row partition, all columns in each.
    targets : dict of str to dask.array.Array
        Persisted, chunked like ``X``'s rows.
    X_local : numpy.ndarray or scipy.sparse.csr_matrix
        The same ``X`` in this process (C-contiguous and aligned when dense).
    targets_local : dict of str to numpy.ndarray
    true_coef : numpy.ndarray
        The coefficients the targets were drawn with.
    seconds : float
        Time taken to generate, persist and copy the data set.
    storage : {"memory", "zarr"}
        Where ``X`` and the targets are: persisted on the workers, or read from a zarr
        store (``X_local`` is then a read-only memory-mapped ``.npy`` file).
    directory : str or None
        The temporary directory of the zarr store and the ``.npy`` file, removed by
        :meth:`close`.
    placement : list of int or None
        Chunks of the persisted ``X`` per worker, most first, after
        ``client.rebalance`` (None for a zarr store, whose chunks are read by the fits).
    """

    spec: DataSpec
    X: object
    targets: dict
    X_local: object
    targets_local: dict
    true_coef: np.ndarray
    seconds: float = 0.0
    storage: str = "memory"
    directory: str | None = None
    placement: list | None = None

    def close(self):
        """Remove the zarr store and the memory-mapped file, if any."""
        if self.directory is not None:
            import shutil

            self.X_local = None
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def target(self, kind):
        """The persisted Dask target of one kind (a key of :data:`TARGETS`)."""
        return self.targets[kind]

    def target_local(self, kind):
        """The in-memory numpy target of one kind."""
        return self.targets_local[kind]


def _draw(spec: DataSpec):
    """Lazy Dask arrays ``X`` and targets of ``spec``, and the true coefficients."""
    from daskglm import datasets

    X = coef = None
    targets = {}
    for kind, (maker, intercept) in TARGETS.items():
        X_kind, y, coef = getattr(datasets, maker)(
            spec.n_samples, spec.n_features, chunks=spec.chunk_rows, random_state=spec.seed,
            density=spec.density, intercept=intercept)
        if X is None:
            X = X_kind
        elif X_kind.name != X.name:  # the makers promise the same X for the same seed
            raise RuntimeError(f"{maker} drew a different X; the targets would not share it.")
        targets[kind] = y
    return X, targets, coef


def make_data(spec: DataSpec, client, local=None, storage="memory", directory=None):
    """Generate ``spec``'s arrays, persist them on ``client``'s workers and wait; or, with
    ``storage="zarr"``, write them to a zarr store that the returned arrays read.

    Parameters
    ----------
    spec : DataSpec
    client : distributed.Client
    local : Data, optional
        A data set of the same spec made earlier (on another cluster) whose in-memory
        copies (and store) are reused instead of making new ones.
    storage : {"memory", "zarr"}
    directory : str, optional
        Where the zarr store's temporary directory is made (the system's default).

    Returns
    -------
    Data
    """
    import time

    from distributed import wait

    start = time.perf_counter()
    if storage == "zarr":
        return _make_zarr(spec, client, local, directory, start)
    X, targets, coef = _draw(spec)
    names = list(targets)
    persisted = client.persist([X, *(targets[k] for k in names)])
    wait(persisted)
    # the scheduler may put every chunk on one worker (seen with 16 chunks of 1e7 x 50);
    # a fit would then move half of them first, as data read by many tasks are not
    client.rebalance(persisted)
    X, targets = persisted[0], dict(zip(names, persisted[1:], strict=True))
    placement = chunks_per_worker(client, X)
    if local is not None:
        if local.spec != spec:
            raise ValueError(f"local copies of {local.spec.label} do not match {spec.label}.")
        return Data(spec, X, targets, local.X_local, local.targets_local, coef,
                    seconds=time.perf_counter() - start, placement=placement)
    X_local = _owned(_gathered(client, X))
    targets_local = {k: _owned(_gathered(client, targets[k])) for k in names}
    return Data(spec, X, targets, X_local, targets_local, coef,
                seconds=time.perf_counter() - start, placement=placement)


def chunks_per_worker(client, X):
    """How many of the persisted ``X``'s chunks each worker holds, most first."""
    counts = {}
    for holders in client.who_has(X).values():
        for worker in holders[:1]:
            counts[worker] = counts.get(worker, 0) + 1
    return sorted(counts.values(), reverse=True)


def _make_zarr(spec, client, local, directory, start):
    """:func:`make_data` for data read from a zarr store."""
    import tempfile
    import time

    import dask.array as da

    if spec.sparse:
        raise ValueError("zarr storage is for dense data sets.")
    if local is not None and local.directory is not None:
        directory = local.directory
        coef = local.true_coef
    else:
        directory = tempfile.mkdtemp(prefix="daskglm-bench-", dir=directory)
        X, targets, coef = _draw(spec)
        arrays = {"X": X, **targets}
        client.compute([da.to_zarr(a, f"{directory}/{name}.zarr", compute=False)
                        for name, a in arrays.items()], sync=True)
        _write_npy(f"{directory}/X.npy", f"{directory}/X.zarr")
    X = da.from_zarr(f"{directory}/X.zarr")
    targets = {kind: da.from_zarr(f"{directory}/{kind}.zarr") for kind in TARGETS}
    X_local = np.load(f"{directory}/X.npy", mmap_mode="r")
    targets_local = {kind: np.asarray(targets[kind].compute()) for kind in TARGETS}
    return Data(spec, X, targets, X_local, targets_local, coef,
                seconds=time.perf_counter() - start, storage="zarr", directory=directory)


def _write_npy(path, store):
    """Copy the zarr array at ``store`` into the ``.npy`` file ``path``, a chunk at a time."""
    import zarr

    source = zarr.open_array(store, mode="r")
    target = np.lib.format.open_memmap(path, mode="w+", dtype=source.dtype,
                                       shape=source.shape)
    rows = source.chunks[0]
    for begin in range(0, source.shape[0], rows):
        target[begin:begin + rows] = source[begin:begin + rows]
    target.flush()
    del target


def _gathered(client, array):
    """The persisted Dask ``array`` (chunked over rows) in this process, its chunks fetched
    one by one and joined here.

    ``client.compute(array)`` would join them in a task on one worker: every chunk is
    copied there, and Dask's memory manager then drops the other workers' copies, so that
    all the data sit on one worker and the next fit moves half of them back.
    """
    from dask.core import flatten
    from distributed import futures_of

    if array.ndim == 2 and array.numblocks[1] != 1:
        raise ValueError("expected an array chunked over rows only")
    by_key = {future.key: future for future in futures_of(array)}
    blocks = client.gather([by_key[key] for key in flatten(array.__dask_keys__())])
    if sp.issparse(blocks[0]):
        return sp.vstack(blocks, format="csr")
    return np.concatenate(blocks)


def _owned(a):
    """A fresh copy of ``a``: aligned and C-contiguous when dense, canonical CSR when sparse.

    Arrays received from the workers may live at an unaligned offset inside a network
    buffer; numpy's ``matmul`` does not hand those to BLAS and falls back to loops several
    times slower, which would penalise every in-memory method.
    """
    if sp.issparse(a):
        a = sp.csr_matrix(a, dtype=np.float64, copy=True)
        a.sum_duplicates()
        return a
    return np.array(a, dtype=np.float64, order="C", copy=True)
