"""Sparsifying codecs: the top-k entries by magnitude."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import ClassVar, NamedTuple

import numpy as np

from .base import SCALAR_BYTES, Codec, as_vector, index_dtype

__all__ = ["TopK", "TopKMessage"]


class TopKMessage(NamedTuple):
    """A vector sparsified by :class:`TopK`.

    Attributes
    ----------
    length : int
        d.
    indices : ndarray
        The kept entries in increasing order, in the dtype of :func:`index_dtype`.
    values : ndarray of float64
        Their values.
    """

    length: int
    indices: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class TopK(Codec):
    """The fraction ``k`` of entries of largest magnitude, as indices and float64 values.

    Parameters
    ----------
    k : float, 0 < k <= 1
        Fraction of the entries kept: :meth:`count` of them.
    """

    k: float = 0.01

    name: ClassVar[str] = "topk"
    unbiased: ClassVar[bool] = False
    needs_error_feedback: ClassVar[bool] = True
    message_type: ClassVar[type] = TopKMessage

    def __post_init__(self):
        if (
            not isinstance(self.k, Real)
            or isinstance(self.k, bool)
            or not math.isfinite(self.k)
            or not 0 < self.k <= 1
        ):
            raise ValueError(f"topk k must be a fraction with 0 < k <= 1; got {self.k!r}.")
        object.__setattr__(self, "k", float(self.k))

    def count(self, length):
        """Entries kept of ``length``: ``ceil(k d)``, at least 1.

        ``k d`` is rounded to 9 decimals first, so that k = 0.07 keeps 7 of 100 entries
        although ``0.07 * 100`` is 7.000000000000001 in floating point.

        Parameters
        ----------
        length : int

        Returns
        -------
        int
        """
        return min(int(length), max(1, math.ceil(round(self.k * int(length), 9))))

    def encode(self, vector, rng=None):
        """Keep the :meth:`count` entries of largest magnitude.

        Ties are broken deterministically (by :func:`numpy.argpartition`).

        Parameters
        ----------
        vector : array_like, 1-D
        rng : ignored

        Returns
        -------
        TopKMessage
        """
        vector = as_vector(vector)
        length = vector.size
        kept = self.count(length)
        if kept == length:
            indices = np.arange(length)
        else:
            indices = np.sort(np.argpartition(-np.abs(vector), kept - 1)[:kept])
        return TopKMessage(length, indices.astype(index_dtype(length)), vector[indices])

    def decode(self, message):
        """The sparse vector, dense: zero outside the kept entries.

        Parameters
        ----------
        message : TopKMessage

        Returns
        -------
        ndarray of float64
        """
        self._check_message(message)
        decoded = np.zeros(message.length, dtype=np.float64)
        decoded[message.indices.astype(np.intp)] = message.values
        return decoded

    def model_bytes(self, length):
        """Length (8 bytes) and, per kept entry, an index and an 8-byte value.

        Parameters
        ----------
        length : int

        Returns
        -------
        int
        """
        length = int(length)
        return SCALAR_BYTES + self.count(length) * (index_dtype(length).itemsize + 8)

    @property
    def spec(self):
        """The dict that :func:`get_codec` turns back into this codec."""
        return {"name": self.name, "k": self.k}
