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

from .base import Codec, NoCompression, index_dtype, message_nbytes
from .quantizers import (
    QSGD,
    QSGDMessage,
    SignCompression,
    SignMessage,
    StochasticMessage,
    StochasticQuantization,
)
from .registry import CODECS, ErrorFeedback, get_codec, sum_messages
from .sparsifiers import TopK, TopKMessage

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
