"""The codec interface, the identity codec, and what every codec shares: input checks,
bit packing, index dtypes and message sizes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

__all__ = ["Codec", "NoCompression", "index_dtype", "message_nbytes", "SCALAR_BYTES",
           "as_vector", "as_generator", "norm2", "mean_abs", "packed_bytes", "unpack_signs",
           "pack_codes", "unpack_codes"]

#: Bytes that :func:`message_nbytes` counts for a Python scalar field (a float64 or int64).
SCALAR_BYTES = 8

def index_dtype(length):
    """The smallest integer dtype of uint16, uint32 and int64 that indexes ``length`` entries.

    Parameters
    ----------
    length : int
        Number of entries, d.

    Returns
    -------
    numpy.dtype
    """
    if length <= 2**16:
        return np.dtype(np.uint16)
    if length <= 2**32:
        return np.dtype(np.uint32)
    return np.dtype(np.int64)


def message_nbytes(message):
    """Payload bytes of a message: its arrays' ``nbytes`` plus 8 bytes per scalar field.

    Parameters
    ----------
    message : ndarray or message tuple
        What a codec's ``encode`` returned.

    Returns
    -------
    int
        What :meth:`Codec.model_bytes` predicts, without the pickling overhead (about
        100 to 150 bytes per array and some 60 for the message's type).
    """
    if isinstance(message, np.ndarray):
        return int(message.nbytes)
    return sum(
        int(field.nbytes) if isinstance(field, np.ndarray) else SCALAR_BYTES
        for field in message
    )


def as_vector(vector):
    """``vector`` as a 1-D float64 array with at least one entry, all finite: what every
    codec's ``encode`` takes.

    Parameters
    ----------
    vector : array_like
        Real numbers (floats or integers).

    Returns
    -------
    ndarray of float64, 1-D
        ``vector`` itself when it was one already.

    Raises
    ------
    ValueError
        For a vector that is not 1-D, is empty, is not of real numbers, or holds NaN or
        infinity.
    """
    array = np.asarray(vector)
    if array.ndim != 1:
        raise ValueError(f"vector must be 1-D; got shape {array.shape}.")
    if array.size == 0:
        raise ValueError("vector must have at least one entry.")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"vector must hold real numbers; got dtype {array.dtype}.")
    array = array.astype(np.float64, copy=False)
    if not np.all(np.isfinite(array)):
        raise ValueError("vector must be finite; got NaN or infinity.")
    return array


def as_generator(rng, codec_name):
    """The random generator of a stochastic codec's ``encode``.

    Parameters
    ----------
    rng : numpy.random.Generator or int
        A generator (returned as it is) or an integer seed.
    codec_name : str
        The codec's name, for the error message.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    ValueError
        For anything else (None included): a stochastic codec needs its draws given.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    raise ValueError(
        f"codec {codec_name!r} draws random numbers: rng must be a numpy Generator or an "
        f"integer seed; got {rng!r}."
    )


def norm2(vector):
    r""":math:`\|v\|_2`, without overflow or underflow of the squares.

    Parameters
    ----------
    vector : ndarray of float64, 1-D, at least one entry

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When the norm itself overflows float64.
    """
    largest = float(np.max(np.abs(vector)))
    if largest == 0.0:
        return 0.0
    norm = largest * float(np.sqrt(np.dot(vector / largest, vector / largest)))
    if not math.isfinite(norm):
        raise ValueError("the vector's 2-norm overflows float64.")
    return norm


def mean_abs(vector):
    r""":math:`\|v\|_1 / d`, without overflow of the sum.

    Parameters
    ----------
    vector : ndarray of float64, 1-D, at least one entry

    Returns
    -------
    float
    """
    largest = float(np.max(np.abs(vector)))
    if largest == 0.0:
        return 0.0
    return largest * float(np.mean(np.abs(vector) / largest))


def packed_bytes(n_bits):
    """The bytes that :func:`numpy.packbits` makes of ``n_bits`` bits.

    Parameters
    ----------
    n_bits : int

    Returns
    -------
    int
        ``ceil(n_bits / 8)``.
    """
    return -(-n_bits // 8)


def unpack_signs(packed, count):
    """The signs packed one bit each (0 for ``+``, 1 for ``-``) as ``+1.0`` and ``-1.0``.

    Parameters
    ----------
    packed : ndarray of uint8
        The bits, as :func:`numpy.packbits` packs them.
    count : int
        The number of signs.

    Returns
    -------
    ndarray of float64
    """
    return 1.0 - 2.0 * np.unpackbits(packed, count=count)


def pack_codes(codes, width):
    """Pack uint8 ``codes`` < 2**width into ``width`` bits each, most significant first.

    Parameters
    ----------
    codes : ndarray of uint8, 1-D
    width : int
        Bits per code, 1 to 8.

    Returns
    -------
    ndarray of uint8
        ``packed_bytes(codes.size * width)`` bytes; :func:`unpack_codes` reads them back.
    """
    bit_rows = np.unpackbits(codes[:, None], axis=1)[:, 8 - width:]
    return np.packbits(bit_rows)


def unpack_codes(packed, count, width):
    """The codes that :func:`pack_codes` packed.

    Parameters
    ----------
    packed : ndarray of uint8
    count : int
        The number of codes.
    width : int
        Bits per code.

    Returns
    -------
    ndarray of uint8
    """
    bit_rows = np.unpackbits(packed, count=count * width).reshape(count, width)
    place_values = np.left_shift(1, np.arange(width - 1, -1, -1)).astype(np.uint8)
    return bit_rows @ place_values


class Codec:
    """A compressor of float vectors into messages, and its decoder.

    Subclasses set the class attributes and implement :meth:`encode`, :meth:`decode`,
    :meth:`model_bytes` and :attr:`spec`.

    Attributes
    ----------
    name : str
        The name :func:`get_codec` knows it by.
    unbiased : bool
        Whether :math:`E[D(C(v))] = v` for every v.
    needs_error_feedback : bool
        Whether it is biased enough that it should be used with :class:`ErrorFeedback`.
    message_type : type
        The type of its messages.
    """

    name: ClassVar[str]
    unbiased: ClassVar[bool]
    needs_error_feedback: ClassVar[bool]
    message_type: ClassVar[type]

    def encode(self, vector, rng=None):
        """Compress a vector into a message.

        Parameters
        ----------
        vector : array_like, 1-D, length d >= 1
            Finite real numbers; float32 or integers are read as float64.
        rng : numpy.random.Generator or int, optional
            The random draws of a stochastic codec (required for those); ignored by the
            deterministic ones.

        Returns
        -------
        message
            An instance of :attr:`message_type`.
        """
        raise NotImplementedError

    def decode(self, message):
        """The dense float64 vector of length d that a message stands for.

        Parameters
        ----------
        message
            What :meth:`encode` returned.

        Returns
        -------
        ndarray of float64
        """
        raise NotImplementedError

    def variance(self, length):
        r"""The factor :math:`\omega` of an unbiased codec:
        :math:`E\|D(C(v)) - v\|^2 \le \omega \|v\|^2` for every v of ``length`` entries.

        Parameters
        ----------
        length : int
            d.

        Returns
        -------
        float
            0 for the identity; codecs that are not unbiased have none (NotImplementedError).
        """
        raise NotImplementedError(f"codec {self.name!r} is not unbiased: it has no variance.")

    def shift_rate(self, length):
        r"""The step of a difference-compression shift, ``h <- h + rate D(C(v - h))``.

        ``1 / (1 + omega)`` for an unbiased codec (:meth:`variance`): then the shift's
        expected squared error shrinks by ``omega / (1 + omega)`` per message, where a
        step of 1 would multiply it by ``omega``, which diverges for ``omega > 1``.  1 for
        a biased codec, which is contractive (it never sends more than the vector).

        Parameters
        ----------
        length : int

        Returns
        -------
        float in (0, 1]
        """
        if not self.unbiased:
            return 1.0
        return 1.0 / (1.0 + float(self.variance(length)))

    def model_bytes(self, length):
        """Payload bytes of one message for a vector of ``length`` entries.

        Parameters
        ----------
        length : int
            d.

        Returns
        -------
        int
            Equal to :func:`message_nbytes` of every message for deterministic-size
            codecs; an upper bound for ``"stochastic"``.
        """
        raise NotImplementedError

    @property
    def spec(self):
        """The dict that :func:`get_codec` turns back into this codec."""
        return {"name": self.name}

    def _check_message(self, message):
        if not isinstance(message, self.message_type):
            raise ValueError(
                f"codec {self.name!r} decodes a {self.message_type.__name__}; "
                f"got {type(message).__name__}."
            )


@dataclass(frozen=True)
class NoCompression(Codec):
    """The identity: the message is the vector as float64."""

    name: ClassVar[str] = "none"
    unbiased: ClassVar[bool] = True
    needs_error_feedback: ClassVar[bool] = False
    message_type: ClassVar[type] = np.ndarray

    def encode(self, vector, rng=None):
        """The vector itself, as a float64 array (a copy when it was float64 already).

        Parameters
        ----------
        vector : array_like, 1-D
        rng : ignored

        Returns
        -------
        ndarray of float64
        """
        return np.array(as_vector(vector), dtype=np.float64, copy=True)

    def decode(self, message):
        """The message, as float64.

        Parameters
        ----------
        message : ndarray

        Returns
        -------
        ndarray of float64
        """
        self._check_message(message)
        return np.asarray(message, dtype=np.float64)

    def variance(self, length):
        """0: the identity adds no variance."""
        return 0.0

    def model_bytes(self, length):
        """``8 * length``.

        Parameters
        ----------
        length : int

        Returns
        -------
        int
        """
        return 8 * int(length)
