"""The emulated network (daskglm.network): transfers and round trips between two worker
processes take the time its bandwidth and latency say."""

import numpy as np
import pytest

from daskglm.network import Network, current_network, parse_bandwidth, parse_latency

#: The networks of the tests: a 1 MB transfer and round trips on the slow one (84 ms and
#: 20 ms: well above Dask's own half millisecond), a 64 MB transfer on the fast one.
SLOW = ("100 Mbit/s", "10 ms")
FAST = ("1 Gbit/s", "0.5 ms")


def test_units():
    assert parse_bandwidth("1 Gbit/s") == pytest.approx(1.25e8)
    assert parse_bandwidth("100Mbps") == pytest.approx(1.25e7)
    assert parse_bandwidth("125 MB/s") == pytest.approx(1.25e8)
    assert parse_bandwidth(5e6) == 5e6
    assert parse_latency("0.5 ms") == pytest.approx(5e-4)
    assert parse_latency(0.05) == 0.05
    with pytest.raises(ValueError, match="positive"):
        parse_bandwidth(0)
    with pytest.raises(ValueError, match="negative"):
        parse_latency(-1)
    assert "Mbit/s" in str(Network("100 Mbit/s", "5 ms"))


def _cluster(figures):
    from distributed import Client

    network = Network(*figures)
    with network.local_cluster(n_workers=2) as cluster, Client(cluster) as client:
        yield network, client
    assert current_network() is None  # the configuration is restored when it closes


@pytest.fixture
def slow():
    yield from _cluster(SLOW)


@pytest.fixture
def fast():
    yield from _cluster(FAST)


def _transfer_seconds(client, size):
    """Seconds the second worker's fetch of ``size`` bytes made on the first took, by its
    own transfer log (the request and the answer)."""
    first, second = sorted(client.nthreads())
    data = client.submit(np.ones, size, dtype=np.uint8, workers=[first], pure=False)
    assert client.submit(len, data, workers=[second], pure=False).result() == size

    def last_transfer(dask_worker):
        entry = list(dask_worker.transfer_incoming_log)[-1]
        return entry["total"], entry["duration"]

    total, duration = client.run(last_transfer, workers=[second])[second]
    assert total >= size
    return total, duration


@pytest.mark.parametrize("size", [2**20, 64 * 2**20], ids=["1MB", "64MB"])
def test_a_transfer_takes_its_bytes_over_the_bandwidth(request, size):
    network, client = request.getfixturevalue("slow" if size < 2**24 else "fast")
    _transfer_seconds(client, 1000)  # the workers' connection made
    repeats = 3 if size < 2**24 else 1
    total, duration = sorted(_transfer_seconds(client, size) for _ in range(repeats))[repeats // 2]
    measured = total / (duration - 2 * network.latency)  # the request's and the answer's
    assert measured == pytest.approx(network.bandwidth, rel=0.15)


def test_a_small_message_takes_twice_the_latency_there_and_back(slow):
    network, client = slow
    first, second = sorted(client.nthreads())

    async def round_trips(dask_worker, other):
        import time

        peer = dask_worker.rpc(other)
        await peer.identity()
        seconds = []
        for _ in range(15):
            start = time.perf_counter()
            await peer.identity()
            seconds.append(time.perf_counter() - start)
        return float(np.median(seconds))

    seconds = client.run(round_trips, other=first, workers=[second])[second]
    assert seconds == pytest.approx(2 * network.latency, rel=0.2)


def test_plain_tcp_is_not_shaped(client):
    assert all(address.startswith("tcp://") for address in client.nthreads())
