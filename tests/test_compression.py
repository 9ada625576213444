"""Compression codecs: unbiasedness, round trips, error feedback and wire sizes."""

import math
import pickle

import numpy as np
import pytest

from daskglm.compute.compression import (
    CODECS,
    QSGD,
    ErrorFeedback,
    NoCompression,
    QSGDMessage,
    SignCompression,
    StochasticMessage,
    StochasticQuantization,
    TopK,
    get_codec,
    index_dtype,
    message_nbytes,
    sum_messages,
)

ALL_SPECS = [
    "none",
    "stochastic",
    {"name": "qsgd", "bits": 2},
    {"name": "qsgd", "bits": 4},
    {"name": "qsgd", "bits": 8},
    "sign",
    {"name": "topk", "k": 0.1},
]
DETERMINISTIC_SIZE_SPECS = [spec for spec in ALL_SPECS if spec != "stochastic"]
N_ENCODINGS = 20_000
SIGMAS = 5


def spec_id(spec):
    return spec if isinstance(spec, str) else "-".join(map(str, spec.values()))


@pytest.fixture
def vector():
    """Entries of mixed sign and magnitude, one exact zero and one dominant entry."""
    rng = np.random.default_rng(7)
    values = rng.standard_normal(24) * rng.uniform(0.01, 3.0, 24)
    values[3] = 0.0
    values[11] = 8.0
    return values


def mean_of_encodings(codec, vector, seed):
    rng = np.random.default_rng(seed)
    total = np.zeros(vector.size)
    for _ in range(N_ENCODINGS):
        total += codec.decode(codec.encode(vector, rng))
    return total / N_ENCODINGS


def test_stochastic_is_unbiased(vector):
    norm = np.linalg.norm(vector)
    variance = norm * np.abs(vector) - vector**2
    standard_error = np.sqrt(variance / N_ENCODINGS)
    mean = mean_of_encodings(StochasticQuantization(), vector, seed=0)
    np.testing.assert_array_less(np.abs(mean - vector), SIGMAS * standard_error + 1e-12)


@pytest.mark.parametrize("bits", [2, pytest.param(4, marks=pytest.mark.slow),
                                  pytest.param(8, marks=pytest.mark.slow)])
def test_qsgd_is_unbiased(vector, bits):
    codec = QSGD(bits)
    scaled = codec.levels * np.abs(vector) / np.linalg.norm(vector)
    fraction = scaled - np.floor(scaled)
    variance = (np.linalg.norm(vector) / codec.levels) ** 2 * fraction * (1 - fraction)
    standard_error = np.sqrt(variance / N_ENCODINGS)
    mean = mean_of_encodings(codec, vector, seed=bits)
    np.testing.assert_array_less(np.abs(mean - vector), SIGMAS * standard_error + 1e-12)


def test_qsgd_decodes_to_levels_of_the_norm(vector):
    codec = QSGD(bits=3)
    decoded = codec.decode(codec.encode(vector, np.random.default_rng(1)))
    levels = decoded * codec.levels / np.linalg.norm(vector)
    np.testing.assert_allclose(levels, np.round(levels), atol=1e-12)
    assert np.all(np.abs(np.round(levels)) <= codec.levels)
    nonzero = decoded != 0
    np.testing.assert_array_equal(np.sign(decoded[nonzero]), np.sign(vector[nonzero]))


def test_stochastic_decodes_to_signed_norm_or_zero(vector):
    codec = StochasticQuantization()
    decoded = codec.decode(codec.encode(vector, np.random.default_rng(2)))
    kept = decoded != 0
    np.testing.assert_array_equal(decoded[kept], np.linalg.norm(vector) * np.sign(vector[kept]))
    assert decoded[3] == 0.0


@pytest.mark.parametrize("length", [10, 10_000])
def test_stochastic_sends_the_smaller_selection_form(length):
    codec = StochasticQuantization()
    rng = np.random.default_rng(3)
    for vector in (rng.standard_normal(length), np.ones(length)):
        message = codec.encode(vector, rng)
        decoded = codec.decode(message)
        assert np.all((decoded == 0) | (np.abs(decoded) == np.linalg.norm(vector)))
        index_bytes = np.count_nonzero(decoded) * index_dtype(length).itemsize
        sends_bitmap = message.selected.dtype == np.uint8
        assert sends_bitmap == (index_bytes >= math.ceil(length / 8))
        assert message_nbytes(message) <= codec.model_bytes(length)


def test_none_round_trips_exactly(vector):
    codec = get_codec("none")
    message = codec.encode(vector)
    assert message is not vector
    np.testing.assert_array_equal(codec.decode(message), vector)
    assert codec.decode(message).dtype == np.float64


@pytest.mark.parametrize(("k", "length", "expected"), [
    (0.01, 10_000, 100), (0.07, 100, 7), (0.29, 100, 29), (0.25, 10, 3), (1e-9, 50, 1),
    (1.0, 13, 13),
])
def test_topk_count_is_ceil_k_d(k, length, expected):
    assert TopK(k).count(length) == expected


@pytest.mark.parametrize(("k", "length"), [(0.01, 10_000), (0.07, 100), (0.25, 10), (1.0, 13)])
def test_topk_keeps_exactly_the_largest_entries(k, length):
    rng = np.random.default_rng(5)
    vector = rng.permutation(np.arange(1, length + 1)) * rng.choice([-1.0, 1.0], length)
    codec = TopK(k)
    kept = math.ceil(round(k * length, 9))
    message = codec.encode(vector)
    decoded = codec.decode(message)
    largest = np.argsort(-np.abs(vector))[:kept]
    np.testing.assert_array_equal(np.flatnonzero(decoded), np.sort(largest))
    np.testing.assert_array_equal(decoded[largest], vector[largest])
    assert message.indices.dtype == index_dtype(length)
    assert message.values.dtype == np.float64


def test_index_dtype_is_the_smallest_sufficient():
    assert index_dtype(1) == np.uint16
    assert index_dtype(2**16) == np.uint16
    assert index_dtype(2**16 + 1) == np.uint32
    assert index_dtype(2**32) == np.uint32
    assert index_dtype(2**32 + 1) == np.int64


def test_sign_decodes_to_scale_times_sign(vector):
    codec = SignCompression()
    message = codec.encode(vector)
    expected_signs = np.where(vector < 0, -1.0, 1.0)
    assert message.scale == pytest.approx(np.abs(vector).sum() / vector.size, rel=1e-15)
    np.testing.assert_array_equal(codec.decode(message), message.scale * expected_signs)


@pytest.mark.parametrize("spec", ALL_SPECS, ids=spec_id)
def test_error_feedback_residual_identity(spec, vector):
    codec = get_codec(spec)
    rng = np.random.default_rng(6)
    old_residual = rng.standard_normal(vector.size)
    message, new_residual = ErrorFeedback.compress(codec, vector, old_residual, rng)
    np.testing.assert_allclose(
        vector + old_residual, codec.decode(message) + new_residual, rtol=0, atol=1e-12
    )


def test_error_feedback_without_residual_starts_from_zero(vector):
    codec = get_codec({"name": "topk", "k": 0.25})
    message, residual = ErrorFeedback.compress(codec, vector, None)
    np.testing.assert_array_equal(codec.decode(message) + residual, vector)


@pytest.mark.parametrize(("spec", "contraction"), [
    ({"name": "topk", "k": 0.1}, 0.1),
    ("sign", 1 / 40),
], ids=["topk", "sign"])
def test_error_feedback_tracks_the_running_sum(spec, contraction):
    """The gap between sent and received sums is the residual, and it stays bounded.

    Both codecs contract: ``||x - D(C(x))||^2 <= (1 - delta) ||x||^2`` with delta = k for
    top-k and delta >= 1 / d for scaled signs, which bounds every residual by
    ``sqrt(1 - delta) / (1 - sqrt(1 - delta))`` times the largest input norm.  Without
    feedback the gap grows with the number of steps (the inputs share a mean).
    """
    codec = get_codec(spec)
    length, steps = 40, 400
    rng = np.random.default_rng(8)
    inputs = 0.3 + rng.standard_normal((steps, length))
    feedback = ErrorFeedback.zeros(length)
    sent = np.zeros(length)
    received = np.zeros(length)
    received_without_feedback = np.zeros(length)
    largest_residual = 0.0
    for vector in inputs:
        received += codec.decode(feedback.send(codec, vector))
        received_without_feedback += codec.decode(codec.encode(vector))
        sent += vector
        largest_residual = max(largest_residual, np.linalg.norm(feedback.residual))
    np.testing.assert_allclose(received + feedback.residual, sent, rtol=0, atol=1e-9)
    shrink = math.sqrt(1 - contraction)
    bound = shrink / (1 - shrink) * np.linalg.norm(inputs, axis=1).max()
    assert largest_residual <= bound
    assert np.linalg.norm(received - sent) < 0.1 * np.linalg.norm(received_without_feedback - sent)


@pytest.mark.parametrize("spec", ALL_SPECS, ids=spec_id)
def test_encoding_is_deterministic_for_a_seed(spec, vector):
    codec = get_codec(spec)
    first = codec.decode(codec.encode(vector, np.random.default_rng(9)))
    second = codec.decode(codec.encode(vector, np.random.default_rng(9)))
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, codec.decode(codec.encode(vector, 9)))


@pytest.mark.parametrize("codec", [StochasticQuantization(), QSGD()], ids=["stochastic", "qsgd"])
def test_random_codecs_require_a_generator(codec, vector):
    with pytest.raises(ValueError, match="numpy Generator or an integer seed"):
        codec.encode(vector)


@pytest.mark.parametrize("spec", ALL_SPECS, ids=spec_id)
def test_zero_vector_decodes_to_zeros(spec):
    codec = get_codec(spec)
    decoded = codec.decode(codec.encode(np.zeros(17), np.random.default_rng(10)))
    np.testing.assert_array_equal(decoded, np.zeros(17))


@pytest.mark.parametrize("spec", ALL_SPECS, ids=spec_id)
@pytest.mark.parametrize("value", [-2.5, 0.0, 3.0])
def test_single_entry(spec, value):
    codec = get_codec(spec)
    decoded = codec.decode(codec.encode(np.array([value]), np.random.default_rng(11)))
    assert decoded.shape == (1,)
    assert decoded[0] == value


@pytest.mark.parametrize("spec", ALL_SPECS, ids=spec_id)
def test_float32_input_decodes_to_float64(spec, vector):
    codec = get_codec(spec)
    single = vector.astype(np.float32)
    decoded = codec.decode(codec.encode(single, np.random.default_rng(12)))
    assert decoded.dtype == np.float64
    assert decoded.shape == vector.shape
    if isinstance(codec, (NoCompression, TopK)):
        kept = decoded != 0
        np.testing.assert_array_equal(decoded[kept], single[kept].astype(np.float64))


@pytest.mark.parametrize("spec", ALL_SPECS, ids=spec_id)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_raises(spec, bad, vector):
    vector[5] = bad
    with pytest.raises(ValueError, match="must be finite"):
        get_codec(spec).encode(vector, np.random.default_rng(13))


@pytest.mark.parametrize(("value", "match"), [
    (np.zeros((2, 3)), "must be 1-D"),
    (np.zeros(0), "at least one entry"),
    (np.array(["a", "b"]), "real numbers"),
    (np.array([1 + 2j]), "real numbers"),
])
def test_malformed_input_raises(value, match):
    with pytest.raises(ValueError, match=match):
        get_codec("sign").encode(value)


def test_extreme_magnitudes_do_not_overflow_or_underflow():
    for vector in (np.array([1e300, -1e300, 1e299]), np.array([1e-310, -3e-310, 0.0])):
        for spec in ALL_SPECS:
            codec = get_codec(spec)
            message = codec.encode(vector, np.random.default_rng(14))
            assert np.all(np.isfinite(codec.decode(message)))
            if hasattr(message, "norm"):
                assert message.norm == pytest.approx(math.hypot(*vector), rel=1e-15)
            if hasattr(message, "scale"):
                assert message.scale == pytest.approx(np.abs(vector).mean(), rel=1e-15)


def test_sign_scale_does_not_overflow():
    message = SignCompression().encode(np.array([1.5e308, -1.5e308, 1.5e308]))
    assert message.scale == 1.5e308


@pytest.mark.parametrize("codec", [StochasticQuantization(), QSGD()], ids=["stochastic", "qsgd"])
def test_overflowing_norm_raises(codec):
    with pytest.raises(ValueError, match="2-norm overflows"):
        codec.encode(np.array([1.5e308, -1.5e308]), np.random.default_rng(0))


def test_sum_messages_is_the_sum_of_decodings(vector):
    rng = np.random.default_rng(15)
    for spec in ALL_SPECS:
        codec = get_codec(spec)
        messages = [codec.encode(vector * scale, rng) for scale in (1.0, -0.5, 2.0)]
        expected = sum(codec.decode(message) for message in messages)
        np.testing.assert_allclose(sum_messages(messages, spec), expected, rtol=1e-15)
    with pytest.raises(ValueError, match="at least one message"):
        sum_messages([], "sign")
    sign = get_codec("sign")
    with pytest.raises(ValueError, match="different lengths"):
        sum_messages([sign.encode(np.ones(3)), sign.encode(np.ones(4))], sign)


def test_decoding_another_codecs_message_raises(vector):
    message = get_codec("sign").encode(vector)
    with pytest.raises(ValueError, match="decodes a TopKMessage; got SignMessage"):
        get_codec("topk").decode(message)


@pytest.mark.parametrize("spec", [{"name": "qsgd", "bits": 4}, "sign"], ids=spec_id)
def test_quantized_messages_are_at_least_8x_smaller_pickled(spec):
    vector = np.random.default_rng(16).standard_normal(10_000)
    message = get_codec(spec).encode(vector, np.random.default_rng(17))
    assert 8 * len(pickle.dumps(message)) <= len(pickle.dumps(vector))


@pytest.mark.parametrize("spec", DETERMINISTIC_SIZE_SPECS, ids=spec_id)
@pytest.mark.parametrize("length", [1, 7, 8, 9, 1000, 70_000])
def test_model_bytes_is_the_payload(spec, length):
    codec = get_codec(spec)
    vector = np.random.default_rng(18).standard_normal(length)
    message = codec.encode(vector, np.random.default_rng(19))
    assert message_nbytes(message) == codec.model_bytes(length)


def test_model_bytes_bounds_stochastic_payload():
    codec = get_codec("stochastic")
    rng = np.random.default_rng(20)
    for length in (1, 9, 1000, 70_000):
        for vector in (rng.standard_normal(length), np.ones(length)):
            assert message_nbytes(codec.encode(vector, rng)) <= codec.model_bytes(length)


def test_pickled_messages_round_trip(vector):
    for spec in ALL_SPECS:
        codec = get_codec(spec)
        message = codec.encode(vector, np.random.default_rng(21))
        np.testing.assert_array_equal(
            codec.decode(pickle.loads(pickle.dumps(message))), codec.decode(message)
        )


def test_message_types():
    vector = np.arange(1.0, 5.0)
    assert isinstance(get_codec("stochastic").encode(vector, 0), StochasticMessage)
    assert isinstance(get_codec("qsgd").encode(vector, 0), QSGDMessage)
    assert isinstance(get_codec("none").encode(vector), np.ndarray)


def test_codec_flags():
    assert {name: (cls.unbiased, cls.needs_error_feedback) for name, cls in CODECS.items()} == {
        "none": (True, False),
        "stochastic": (True, False),
        "qsgd": (True, False),
        "sign": (False, True),
        "topk": (False, True),
    }


def test_get_codec_accepts_names_dicts_and_codecs():
    assert get_codec("qsgd") == QSGD(bits=4)
    assert get_codec({"name": "qsgd", "bits": 6}) == QSGD(bits=6)
    assert get_codec({"name": "topk", "k": 0.01}) == TopK(k=0.01)
    assert get_codec({"name": "topk", "k": 1}).k == 1.0
    codec = TopK(0.5)
    assert get_codec(codec) is codec
    for spec in ALL_SPECS:
        assert get_codec(get_codec(spec).spec) == get_codec(spec)


@pytest.mark.parametrize(("spec", "match"), [
    ("gzip", r"unknown codec 'gzip'; choose one of 'none', 'stochastic', 'qsgd', 'sign', 'topk'"),
    ({"name": "QSGD"}, "unknown codec 'QSGD'"),
    ({"name": ["qsgd"]}, r"unknown codec \['qsgd'\]"),
    ({"bits": 4}, "needs a 'name' key"),
    (4, "a codec spec is a name or a dict"),
    (None, "a codec spec is a name or a dict"),
    ({"name": "qsgd", "bits": 1}, "qsgd bits must be an integer from 2 to 8; got 1"),
    ({"name": "qsgd", "bits": 9}, "qsgd bits must be an integer from 2 to 8; got 9"),
    ({"name": "qsgd", "bits": 4.0}, "qsgd bits must be an integer from 2 to 8; got 4.0"),
    ({"name": "qsgd", "bits": True}, "qsgd bits must be an integer from 2 to 8"),
    ({"name": "topk", "k": 0}, r"topk k must be a fraction with 0 < k <= 1; got 0"),
    ({"name": "topk", "k": 1.5}, r"topk k must be a fraction with 0 < k <= 1; got 1.5"),
    ({"name": "topk", "k": float("nan")}, "topk k must be a fraction"),
    ({"name": "topk", "k": "0.1"}, "topk k must be a fraction"),
    ({"name": "qsgd", "k": 0.1}, "codec 'qsgd' takes no parameter 'k'; its parameters: 'bits'"),
    ({"name": "sign", "scale": 2}, "codec 'sign' takes no parameter 'scale'; its parameters: none"),
], ids=lambda value: None if isinstance(value, str) else repr(value))
def test_bad_specs_raise_clear_errors(spec, match):
    with pytest.raises(ValueError, match=match):
        get_codec(spec)
