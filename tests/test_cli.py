"""The ``daskglm`` command."""

import subprocess
import sys

import pytest

from daskglm.cli import main, synthetic


def test_demo_prints_a_row_per_method():
    result = subprocess.run(
        [sys.executable, "-m", "daskglm.cli", "demo", "--n", "20000", "--d", "5", "--partitions", "4"],
        capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("method"))
    for column in ("iterations", "rounds", "seconds", "objective", "held-out score"):
        assert column in header
    rows = {line.split()[0]: line for line in lines[lines.index(header) + 2:] if line.strip()}
    assert "lbfgs" in rows and "gd" in rows
    assert "n/a" in rows["normal"]  # not applicable to the binomial family


def test_synthetic_data_is_reproducible():
    X1, y1, coef1 = synthetic(1000, 4, "poisson", chunks=300, random_state=3)
    X2, y2, coef2 = synthetic(1000, 4, "poisson", chunks=300, random_state=3)
    assert X1.chunks[0] == (300, 300, 300, 100)
    assert (X1.compute() == X2.compute()).all() and (y1.compute() == y2.compute()).all()
    assert (y1.compute() >= 0).all()


def test_unknown_command_is_an_error():
    with pytest.raises(SystemExit):
        main(["frobnicate"])
