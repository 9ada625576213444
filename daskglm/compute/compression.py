r"""Compression codecs for the vectors that workers send: gradients and model deltas.

Communication-efficient distributed SGD sends, from each worker, a compressed *message*
instead of a dense float64 vector ``v`` of length ``d``; the receiver decodes it back to a
dense float64 vector.  A message is a small :class:`~typing.NamedTuple` of numpy arrays and
Python scalars (bits packed with :func:`numpy.packbits`, indices in the smallest of uint16,
uint32 and int64 that holds them), so that it is small when pickled.  The codecs:

``"none"``
    The identity: the message is the vector itself, as float64.  8 d bytes.
``"stochastic"``
    Unbiased stochastic quantization to ``{-||v||_2, 0, +||v||_2}``:

    .. math:: Q(v)_i = \|v\|_2 \, \operatorname{sgn}(v_i) \, \xi_i, \qquad
              \xi_i \sim \operatorname{Bernoulli}(|v_i| / \|v\|_2),

    so that :math:`E[Q(v)] = v`.  On average :math:`\|v\|_1 / \|v\|_2 \le \sqrt d`
    entries are selected; the message holds the norm, the selected entries (a packed
    bitmap of d bits or their indices, whichever is smaller) and the signs of the selected
    entries only, packed.
``"qsgd"``
    QSGD's s-level stochastic quantization (Alistarh et al., 2017) with ``bits`` bits per
    entry, 2 <= bits <= 8: one sign bit and ``bits - 1`` bits for a level
    :math:`l_i \in \{0, ..., s\}`, :math:`s = 2^{bits-1} - 1`.  With
    :math:`r_i = s |v_i| / \|v\|_2`, the level is :math:`\lfloor r_i \rfloor + 1` with
    probability :math:`r_i - \lfloor r_i \rfloor` and :math:`\lfloor r_i \rfloor`
    otherwise, and

    .. math:: Q(v)_i = \|v\|_2 \, \operatorname{sgn}(v_i) \, l_i / s,

    unbiased.  ``bits=2`` (s = 1) is the ternary quantization of ``"stochastic"`` with a
    sign bit for every entry.
``"sign"``
    1-bit signs with one scale, as in EF-SignSGD (Karimireddy et al., 2019):

    .. math:: C(v)_i = \frac{\|v\|_1}{d} \operatorname{sgn}(v_i),

    where a zero entry is sent as ``+``.  Biased: use it with error feedback.
``"topk"``
    The ``ceil(k d)`` entries of largest magnitude, 0 < k <= 1, as their indices and
    float64 values; the others decode to zero.  Biased: use it with error feedback.

Error feedback (Seide et al., 2014; Karimireddy et al., 2019) keeps, on each sender, the
residual ``r`` that compression lost and adds it to the next vector before compressing:

.. math:: m_t = C(v_t + r_t), \qquad r_{t+1} = v_t + r_t - D(m_t),

so that :math:`\sum_{t<T} D(m_t) = \sum_{t<T} v_t - r_T`: what is received tracks what
was meant to be sent, up to one bounded residual.

Every codec takes a :class:`numpy.random.Generator` (or an integer seed) for its random
draws, so that a message depends only on the vector and the generator's state.  Nothing
here imports dask: a tree reduction decodes the partials it combines with
:func:`sum_messages`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import ClassVar, NamedTuple

import numpy as np

__all__ = [
    "Codec",
    "NoCompression",
    "StochasticQuantization",
    "QSGD",
    "SignCompression",
    "TopK",
    "StochasticMessage",
    "QSGDMessage",
    "SignMessage",
    "TopKMessage",
    "ErrorFeedback",
    "CODECS",
    "get_codec",
    "message_nbytes",
    "index_dtype",
    "sum_messages",
]

#: Bytes that :func:`message_nbytes` counts for a Python scalar field (a float64 or int64).
_SCALAR_BYTES = 8


class StochasticMessage(NamedTuple):
    r"""A vector quantized by :class:`StochasticQuantization`.

    Attributes
    ----------
    norm : float
        :math:`\|v\|_2`.
    length : int
        d.
    selected : ndarray
        The selected entries: a packed bitmap of d bits (dtype uint8), or their indices in
        increasing order (dtype uint16 or wider, see :func:`index_dtype`), whichever has
        fewer bytes.
    signs : ndarray of uint8
        One bit per selected entry, in increasing index order, packed; 1 for negative.
    """

    norm: float
    length: int
    selected: np.ndarray
    signs: np.ndarray


class QSGDMessage(NamedTuple):
    r"""A vector quantized by :class:`QSGD`.

    Attributes
    ----------
    norm : float
        :math:`\|v\|_2`.
    length : int
        d.
    signs : ndarray of uint8
        One bit per entry, packed; 1 for negative.
    levels : ndarray of uint8
        The level of each entry in ``bits - 1`` bits, most significant first, packed.
    """

    norm: float
    length: int
    signs: np.ndarray
    levels: np.ndarray


class SignMessage(NamedTuple):
    r"""A vector compressed by :class:`SignCompression`.

    Attributes
    ----------
    scale : float
        :math:`\|v\|_1 / d`.
    length : int
        d.
    signs : ndarray of uint8
        One bit per entry, packed; 1 for negative.
    """

    scale: float
    length: int
    signs: np.ndarray


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
        int(field.nbytes) if isinstance(field, np.ndarray) else _SCALAR_BYTES
        for field in message
    )


def _as_vector(vector):
    """``vector`` as a 1-D float64 array with at least one entry, all finite."""
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


def _generator(rng, codec_name):
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    raise ValueError(
        f"codec {codec_name!r} draws random numbers: rng must be a numpy Generator or an "
        f"integer seed; got {rng!r}."
    )


def _norm2(vector):
    r""":math:`\|v\|_2`, without overflow or underflow of the squares."""
    largest = float(np.max(np.abs(vector)))
    if largest == 0.0:
        return 0.0
    norm = largest * float(np.sqrt(np.dot(vector / largest, vector / largest)))
    if not math.isfinite(norm):
        raise ValueError("the vector's 2-norm overflows float64.")
    return norm


def _mean_abs(vector):
    r""":math:`\|v\|_1 / d`, without overflow of the sum."""
    largest = float(np.max(np.abs(vector)))
    if largest == 0.0:
        return 0.0
    return largest * float(np.mean(np.abs(vector) / largest))


def _packed_bytes(n_bits):
    return -(-n_bits // 8)


def _unpack_signs(packed, count):
    return 1.0 - 2.0 * np.unpackbits(packed, count=count)


def _pack_codes(codes, width):
    """Pack uint8 ``codes`` < 2**width into ``width`` bits each, most significant first."""
    bit_rows = np.unpackbits(codes[:, None], axis=1)[:, 8 - width:]
    return np.packbits(bit_rows)


def _unpack_codes(packed, count, width):
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
        return np.array(_as_vector(vector), dtype=np.float64, copy=True)

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


@dataclass(frozen=True)
class StochasticQuantization(Codec):
    r"""Unbiased quantization of each entry to ``{-||v||_2, 0, +||v||_2}``.

    Entry i is kept, as :math:`\|v\|_2 \operatorname{sgn}(v_i)`, with probability
    :math:`|v_i| / \|v\|_2`.  On average :math:`\|v\|_1 / \|v\|_2` entries are kept.
    """

    name: ClassVar[str] = "stochastic"
    unbiased: ClassVar[bool] = True
    needs_error_feedback: ClassVar[bool] = False
    message_type: ClassVar[type] = StochasticMessage

    def encode(self, vector, rng=None):
        """Quantize a vector.

        Parameters
        ----------
        vector : array_like, 1-D
        rng : numpy.random.Generator or int
            Draws one uniform number per entry.

        Returns
        -------
        StochasticMessage
        """
        vector = _as_vector(vector)
        rng = _generator(rng, self.name)
        length = vector.size
        norm = _norm2(vector)
        uniforms = rng.random(length)
        if norm == 0.0:
            chosen = np.zeros(length, dtype=bool)
        else:
            chosen = uniforms < np.minimum(np.abs(vector) / norm, 1.0)
        selected_indices = np.flatnonzero(chosen)
        dtype = index_dtype(length)
        if selected_indices.size * dtype.itemsize < _packed_bytes(length):
            selected = selected_indices.astype(dtype)
        else:
            selected = np.packbits(chosen)
        signs = np.packbits(vector[selected_indices] < 0)
        return StochasticMessage(norm, length, selected, signs)

    def decode(self, message):
        """The quantized vector.

        Parameters
        ----------
        message : StochasticMessage

        Returns
        -------
        ndarray of float64
        """
        self._check_message(message)
        if message.selected.dtype == np.uint8:
            chosen = np.unpackbits(message.selected, count=message.length).astype(bool)
            selected_indices = np.flatnonzero(chosen)
        else:
            selected_indices = message.selected.astype(np.intp)
        decoded = np.zeros(message.length, dtype=np.float64)
        decoded[selected_indices] = message.norm * _unpack_signs(
            message.signs, selected_indices.size
        )
        return decoded

    def model_bytes(self, length):
        """Bytes of the bitmap form with every entry selected: an upper bound.

        The norm and the length (8 bytes each), the bitmap, ``ceil(d / 8)`` bytes (the
        index form is used only when smaller), and at most ``ceil(d / 8)`` bytes of signs.

        Parameters
        ----------
        length : int

        Returns
        -------
        int
        """
        return 2 * _SCALAR_BYTES + 2 * _packed_bytes(int(length))


@dataclass(frozen=True)
class QSGD(Codec):
    r"""QSGD: unbiased stochastic rounding of :math:`|v_i| / \|v\|_2` to levels ``l / s``.

    Parameters
    ----------
    bits : int, 2 <= bits <= 8
        Bits per entry: one for the sign and ``bits - 1`` for the level, so that
        ``s = 2**(bits - 1) - 1`` (1, 3, 7, ..., 127).
    """

    bits: int = 4

    name: ClassVar[str] = "qsgd"
    unbiased: ClassVar[bool] = True
    needs_error_feedback: ClassVar[bool] = False
    message_type: ClassVar[type] = QSGDMessage

    def __post_init__(self):
        if (
            not isinstance(self.bits, (int, np.integer))
            or isinstance(self.bits, bool)
            or not 2 <= self.bits <= 8
        ):
            raise ValueError(f"qsgd bits must be an integer from 2 to 8; got {self.bits!r}.")
        object.__setattr__(self, "bits", int(self.bits))

    @property
    def levels(self):
        """s, the number of non-zero levels: ``2**(bits - 1) - 1``."""
        return 2 ** (self.bits - 1) - 1

    def encode(self, vector, rng=None):
        """Quantize a vector.

        Parameters
        ----------
        vector : array_like, 1-D
        rng : numpy.random.Generator or int
            Draws one uniform number per entry.

        Returns
        -------
        QSGDMessage
        """
        vector = _as_vector(vector)
        rng = _generator(rng, self.name)
        length = vector.size
        norm = _norm2(vector)
        uniforms = rng.random(length)
        if norm == 0.0:
            level_codes = np.zeros(length, dtype=np.uint8)
        else:
            scaled = np.minimum(np.abs(vector) / norm, 1.0) * self.levels
            lower = np.floor(scaled)
            rounded_up = uniforms < scaled - lower
            level_codes = np.minimum(lower + rounded_up, self.levels).astype(np.uint8)
        signs = np.packbits(vector < 0)
        return QSGDMessage(norm, length, signs, _pack_codes(level_codes, self.bits - 1))

    def decode(self, message):
        """The quantized vector.

        Parameters
        ----------
        message : QSGDMessage

        Returns
        -------
        ndarray of float64
        """
        self._check_message(message)
        level_codes = _unpack_codes(message.levels, message.length, self.bits - 1)
        signs = _unpack_signs(message.signs, message.length)
        return (message.norm / self.levels) * signs * level_codes

    def model_bytes(self, length):
        """Norm and length (8 bytes each), then sign and level bytes.

        ``ceil(d / 8)`` bytes of signs and ``ceil(d (bits - 1) / 8)`` bytes of levels.

        Parameters
        ----------
        length : int

        Returns
        -------
        int
        """
        length = int(length)
        return (
            2 * _SCALAR_BYTES + _packed_bytes(length) + _packed_bytes(length * (self.bits - 1))
        )

    @property
    def spec(self):
        """The dict that :func:`get_codec` turns back into this codec."""
        return {"name": self.name, "bits": self.bits}


@dataclass(frozen=True)
class SignCompression(Codec):
    r"""1-bit signs scaled by :math:`\|v\|_1 / d` (EF-SignSGD); a zero entry is sent as +."""

    name: ClassVar[str] = "sign"
    unbiased: ClassVar[bool] = False
    needs_error_feedback: ClassVar[bool] = True
    message_type: ClassVar[type] = SignMessage

    def encode(self, vector, rng=None):
        """Compress a vector to its signs and one scale.

        Parameters
        ----------
        vector : array_like, 1-D
        rng : ignored

        Returns
        -------
        SignMessage
        """
        vector = _as_vector(vector)
        return SignMessage(_mean_abs(vector), vector.size, np.packbits(vector < 0))

    def decode(self, message):
        """``scale * sign``.

        Parameters
        ----------
        message : SignMessage

        Returns
        -------
        ndarray of float64
        """
        self._check_message(message)
        return message.scale * _unpack_signs(message.signs, message.length)

    def model_bytes(self, length):
        """Scale and length (8 bytes each) and ``ceil(d / 8)`` sign bytes.

        Parameters
        ----------
        length : int

        Returns
        -------
        int
        """
        return 2 * _SCALAR_BYTES + _packed_bytes(int(length))


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
        vector = _as_vector(vector)
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
        return _SCALAR_BYTES + self.count(length) * (index_dtype(length).itemsize + 8)

    @property
    def spec(self):
        """The dict that :func:`get_codec` turns back into this codec."""
        return {"name": self.name, "k": self.k}


#: Codec name -> its class.
CODECS = {
    codec.name: codec
    for codec in (NoCompression, StochasticQuantization, QSGD, SignCompression, TopK)
}

_PARAMETERS = {"none": (), "stochastic": (), "qsgd": ("bits",), "sign": (), "topk": ("k",)}


def get_codec(spec):
    """The codec that a name or a dict of a name and parameters describes.

    Parameters
    ----------
    spec : str, dict or Codec
        ``"none"``, ``"stochastic"``, ``"qsgd"``, ``"sign"`` or ``"topk"``; or a dict with
        ``"name"`` and the codec's parameters, e.g. ``{"name": "qsgd", "bits": 4}`` (bits
        from 2 to 8, default 4) or ``{"name": "topk", "k": 0.01}`` (0 < k <= 1, default
        0.01); a Codec is returned as it is.

    Returns
    -------
    Codec

    Raises
    ------
    ValueError
        For an unknown name, an unknown or invalid parameter, or a spec of another type.
    """
    if isinstance(spec, Codec):
        return spec
    if isinstance(spec, str):
        name, parameters = spec, {}
    elif isinstance(spec, dict):
        if "name" not in spec:
            raise ValueError(f"a codec spec dict needs a 'name' key; got {spec!r}.")
        parameters = {key: value for key, value in spec.items() if key != "name"}
        name = spec["name"]
    else:
        raise ValueError(
            f"a codec spec is a name or a dict with a 'name' key; got {type(spec).__name__} "
            f"{spec!r}."
        )
    if not isinstance(name, str) or name not in CODECS:
        raise ValueError(
            f"unknown codec {name!r}; choose one of {', '.join(map(repr, CODECS))}."
        )
    unknown = sorted(set(parameters) - set(_PARAMETERS[name]), key=str)
    if unknown:
        accepted = ", ".join(map(repr, _PARAMETERS[name])) or "none"
        raise ValueError(
            f"codec {name!r} takes no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters: {accepted}."
        )
    return CODECS[name](**parameters)


def sum_messages(messages, codec):
    """The sum of the decoded messages, as a dense float64 vector.

    The combine step of a tree reduction: each worker sends a compressed partial, and the
    node that combines them decodes and adds.

    Parameters
    ----------
    messages : iterable of messages
        All from ``codec``, for vectors of the same length; at least one.
    codec : Codec, str or dict
        As for :func:`get_codec`.

    Returns
    -------
    ndarray of float64
    """
    codec = get_codec(codec)
    total = None
    for message in messages:
        decoded = codec.decode(message)
        if total is None:
            total = np.array(decoded, dtype=np.float64, copy=True)
        elif decoded.shape != total.shape:
            raise ValueError(
                f"messages decode to vectors of different lengths: {total.size} and "
                f"{decoded.size}."
            )
        else:
            total += decoded
    if total is None:
        raise ValueError("sum_messages needs at least one message.")
    return total


@dataclass(eq=False)
class ErrorFeedback:
    """Error feedback: the residual that compression lost, added to the next vector.

    :meth:`compress` is the pure step; an instance holds the residual of one sender and
    :meth:`send` applies the step to it.

    Parameters
    ----------
    residual : ndarray of float64
        What was meant to be sent but was not, so far.

    Examples
    --------
    >>> import numpy as np
    >>> feedback = ErrorFeedback.zeros(3)
    >>> message = feedback.send(get_codec("sign"), np.array([3.0, -1.0, 0.5]))
    >>> feedback.residual
    array([ 1.5,  0.5, -1. ])
    """

    residual: np.ndarray

    @classmethod
    def zeros(cls, length):
        """A sender with nothing left to send.

        Parameters
        ----------
        length : int
            d.

        Returns
        -------
        ErrorFeedback
        """
        return cls(np.zeros(int(length), dtype=np.float64))

    @staticmethod
    def compress(codec, vector, residual, rng=None):
        """Compress ``vector + residual`` and return what it lost.

        Parameters
        ----------
        codec : Codec, str or dict
            As for :func:`get_codec`.
        vector : array_like, 1-D, length d
        residual : array_like, 1-D, length d, or None
            The residual of the previous step; None for zeros.
        rng : numpy.random.Generator or int, optional
            For a stochastic codec.

        Returns
        -------
        message
            ``codec.encode(vector + residual, rng)``.
        new_residual : ndarray of float64
            ``(vector + residual) - codec.decode(message)``.
        """
        codec = get_codec(codec)
        vector = _as_vector(vector)
        if residual is None:
            corrected = vector
        else:
            residual = _as_vector(residual)
            if residual.shape != vector.shape:
                raise ValueError(
                    f"residual has {residual.size} entries and vector {vector.size}."
                )
            corrected = vector + residual
        message = codec.encode(corrected, rng)
        return message, corrected - codec.decode(message)

    def send(self, codec, vector, rng=None):
        """Compress ``vector`` plus this sender's residual and keep the new residual.

        Parameters
        ----------
        codec : Codec, str or dict
        vector : array_like, 1-D, length d
        rng : numpy.random.Generator or int, optional

        Returns
        -------
        message
        """
        message, self.residual = self.compress(codec, vector, self.residual, rng)
        return message
