"""Synthetic data sets, generated with a fixed seed and persisted on the workers.

One :class:`DataSpec` describes a design matrix ``X`` (standard normal features, float64,
split into row partitions) and the targets drawn from it: ``"binary"`` (Bernoulli with a
logistic link) and ``"continuous"`` (linear plus unit Gaussian noise).  Every problem on
the same spec therefore uses the very same ``X``.  :func:`make_data` persists the Dask
arrays on the workers and keeps an in-memory numpy copy for in-memory peers and for the
shared objective.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["DataSpec", "Data", "make_data", "TARGETS"]

#: Kinds of target every data set carries.
TARGETS = ("binary", "continuous")


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
    signal : float
        Standard deviation of the true linear predictor ``X @ coef``.
    """

    n_samples: int
    n_features: int
    n_partitions: int
    seed: int = 0
    signal: float = 2.0

    @property
    def label(self):
        """Short description, e.g. ``"1000000x50 float64 / 8 partitions"``."""
        return f"{self.n_samples}x{self.n_features} float64 / {self.n_partitions} partitions"

    @property
    def nbytes(self):
        """Size of ``X`` in bytes."""
        return 8 * self.n_samples * self.n_features

    def to_dict(self):
        """The spec, its label and the size of ``X``, as a plain dict."""
        return {**asdict(self), "label": self.label, "X_bytes": self.nbytes}


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
    X_local : numpy.ndarray
        The same ``X`` in this process (C-contiguous, aligned, owning its memory).
    targets_local : dict of str to numpy.ndarray
    true_coef : numpy.ndarray
        The coefficients the targets were drawn with.
    """

    spec: DataSpec
    X: object
    targets: dict
    X_local: np.ndarray
    targets_local: dict
    true_coef: np.ndarray

    def target(self, kind):
        """The persisted Dask target of one kind (``"binary"`` or ``"continuous"``)."""
        return self.targets[kind]

    def target_local(self, kind):
        """The in-memory numpy target of one kind."""
        return self.targets_local[kind]


def _draw(spec: DataSpec):
    """Lazy Dask arrays ``X``, targets, and the true coefficients of ``spec``."""
    import dask.array as da

    chunk = math.ceil(spec.n_samples / spec.n_partitions)
    coef = np.random.default_rng(spec.seed).standard_normal(spec.n_features)
    coef *= spec.signal / math.sqrt(spec.n_features)
    rng = da.random.default_rng(spec.seed)
    X = rng.standard_normal((spec.n_samples, spec.n_features), chunks=(chunk, spec.n_features))
    eta = X @ coef
    uniform = rng.random(spec.n_samples, chunks=chunk)
    noise = rng.standard_normal(spec.n_samples, chunks=chunk)
    targets = {
        "binary": (uniform < 1.0 / (1.0 + da.exp(-eta))).astype(np.float64),
        "continuous": eta + noise,
    }
    return X, targets, coef


def make_data(spec: DataSpec, client):
    """Generate ``spec``'s arrays, persist them on ``client``'s workers and wait.

    Parameters
    ----------
    spec : DataSpec
    client : distributed.Client

    Returns
    -------
    Data
    """
    from distributed import wait

    X, targets, coef = _draw(spec)
    names = list(targets)
    persisted = client.persist([X, *(targets[k] for k in names)])
    wait(persisted)
    X, targets = persisted[0], dict(zip(names, persisted[1:], strict=True))
    local = client.compute([X, *(targets[k] for k in names)], sync=True)
    X_local, *targets_local = (_owned(a) for a in local)
    targets_local = dict(zip(names, targets_local, strict=True))
    return Data(spec, X, targets, X_local, targets_local, coef)


def _owned(a):
    """A fresh, aligned, C-contiguous copy of ``a``.

    Arrays received from the workers may live at an unaligned offset inside a network
    buffer; numpy's ``matmul`` does not hand those to BLAS and falls back to loops several
    times slower, which would penalise every in-memory method.
    """
    return np.array(a, dtype=np.float64, order="C", copy=True)
