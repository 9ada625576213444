"""The ``daskglm`` command."""

import subprocess
import sys

import pytest

from daskglm.cli import main
from daskglm.io import load_zarr


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


@pytest.mark.parametrize("density", [None, 0.2], ids=["dense", "sparse"])
def test_make_data_writes_a_zarr_store(tmp_path, capsys, density):
    path = tmp_path / "data.zarr"
    argv = ["make-data", "--kind", "poisson", "--n", "1000", "--d", "10", "--chunks", "300",
            "--seed", "3", "--path", str(path)]
    assert main(argv + (["--density", str(density)] if density else [])) == 0
    assert "1000 rows x 10 features" in capsys.readouterr().out
    X, y, weight = load_zarr(path)
    assert X.shape == (1000, 10) and X.chunks[0] == (300, 300, 300, 100) and weight is None
    assert (y.compute() >= 0).all()


def test_unknown_command_is_an_error():
    with pytest.raises(SystemExit):
        main(["frobnicate"])
