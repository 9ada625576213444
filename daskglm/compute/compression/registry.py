"""Codecs by name (:func:`get_codec`), decode-then-sum, and error feedback."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Codec, NoCompression, as_vector
from .quantizers import QSGD, SignCompression, StochasticQuantization
from .sparsifiers import TopK

__all__ = ["CODECS", "get_codec", "sum_messages", "ErrorFeedback"]

#: Codec name -> its class.
CODECS = {
    codec.name: codec
    for codec in (NoCompression, StochasticQuantization, QSGD, SignCompression, TopK)
}

_PARAMETERS = {
    "none": (), "stochastic": (), "qsgd": ("bits", "bucket"), "sign": (), "topk": ("k",),
}


def get_codec(spec):
    """The codec that a name or a dict of a name and parameters describes.

    Parameters
    ----------
    spec : str, dict or Codec
        ``"none"``, ``"stochastic"``, ``"qsgd"``, ``"sign"`` or ``"topk"``; or a dict with
        ``"name"`` and the codec's parameters, e.g. ``{"name": "qsgd", "bits": 4}`` (bits
        from 2 to 8, default 4; ``"bucket"``, entries per norm, default None: one norm),
        or ``{"name": "topk", "k": 0.01}`` (0 < k <= 1, default 0.01); a Codec is returned
        as it is.

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
        vector = as_vector(vector)
        if residual is None:
            corrected = vector
        else:
            residual = as_vector(residual)
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
