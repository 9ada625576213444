"""The ``daskglm`` command."""

import subprocess
import sys

import pytest

from daskglm.cli import CommandError, main
from daskglm.io import load_zarr


def test_fit_fits_a_zarr_store_and_saves_the_model_and_its_ledger(tmp_path, capsys):
    import json
    import pickle

    import numpy as np
    from sklearn.linear_model import LogisticRegression

    store, output = tmp_path / "data.zarr", tmp_path / "model.pkl"
    assert main(["make-data", "--kind", "classification", "--n", "3000", "--d", "4",
                 "--chunks", "1000", "--path", str(store)]) == 0
    assert main(["fit", "--zarr", str(store), "--family", "binomial", "--penalty", "l2",
                 "--alpha", "0.01", "--tol", "1e-10", "--workers", "1", "--output",
                 str(output)]) == 0
    out = capsys.readouterr().out
    assert "converged=True" in out and "rounds" in out
    with open(output, "rb") as file:
        model = pickle.load(file)
    ledger = json.loads((tmp_path / "model.pkl.ledger.json").read_text())
    assert ledger["rounds"] == model.comm_.rounds == len(ledger["records"]) > 0
    X, y, _ = load_zarr(store)
    X, y = X.compute(), y.compute()
    reference = LogisticRegression(C=1 / (0.01 * len(y)), tol=1e-12, max_iter=1000).fit(X, y)
    np.testing.assert_allclose(model.coef_.ravel(), reference.coef_.ravel(), rtol=1e-5, atol=1e-7)


def test_fit_needs_exactly_one_data_source(capsys):
    assert main(["fit", "--output", "x.pkl"]) == 2
    assert capsys.readouterr().err == (
        "daskglm fit: error: give exactly one of --zarr PATH and --parquet PATH\n")
    with pytest.raises(CommandError, match="exactly one"):
        main(["fit", "--output", "x.pkl", "--debug"])


def _run(*argv):
    return subprocess.run([sys.executable, "-m", "daskglm.cli", *argv], capture_output=True,
                          text=True, timeout=120)


def test_an_unreachable_scheduler_is_one_line_naming_it(tmp_path):
    store = tmp_path / "data.zarr"
    assert main(["make-data", "--n", "200", "--d", "3", "--path", str(store)]) == 0
    result = _run("fit", "--zarr", str(store), "--scheduler", "tcp://127.0.0.1:9",
                  "--connect-timeout", "2")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "daskglm fit: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 2 s")


@pytest.mark.parametrize("argv, message", [
    (["--zarr", "{tmp}/missing.zarr"], "no such store: {tmp}/missing.zarr"),
    (["--zarr", "{tmp}", "--solver", "nonsense"], "ValueError: Unknown solver 'nonsense'"),
], ids=["missing-store", "bad-option"])
def test_fit_errors_before_any_cluster_are_one_line(tmp_path, argv, message):
    argv = [a.format(tmp=tmp_path) for a in argv]
    result = _run("fit", *argv, "--scheduler", "tcp://127.0.0.1:9")  # never reached
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("daskglm fit: error: ")
    assert message.format(tmp=tmp_path) in lines[0]
    debug = _run("fit", *argv, "--scheduler", "tcp://127.0.0.1:9", "--debug")
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_a_missing_parquet_column_is_one_line(tmp_path):
    pd = pytest.importorskip("pandas")
    path = tmp_path / "table.parquet"
    pd.DataFrame({"a": [1.0, 2.0], "b": [0.0, 1.0]}).to_parquet(path)
    result = _run("fit", "--parquet", str(path), "--target", "y", "--scheduler",
                  "tcp://127.0.0.1:9")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"daskglm fit: error: --target 'y' is not a column of {path}; columns: ['a', 'b']"]


def test_fit_fits_a_parquet_dataset_of_several_files(tmp_path, capsys):
    """Every file's rows, paired with their targets (Dask fuses the files when it counts
    rows, so the rows are counted on the partitions that are read)."""
    import pickle

    import numpy as np
    from sklearn.linear_model import LogisticRegression

    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 3))
    y = (rng.uniform(size=3000) < 1 / (1 + np.exp(-X @ [1.0, -0.5, 0.2]))).astype(float)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y})
    dd.from_pandas(frame, npartitions=6).to_parquet(tmp_path / "table")
    output = tmp_path / "model.pkl"
    assert main(["fit", "--parquet", str(tmp_path / "table"), "--target", "y", "--family",
                 "binomial", "--penalty", "l2", "--alpha", "0.01", "--tol", "1e-10",
                 "--workers", "1", "--output", str(output)]) == 0
    assert "converged=True" in capsys.readouterr().out
    with open(output, "rb") as file:
        model = pickle.load(file)
    reference = LogisticRegression(C=1 / (0.01 * len(y)), tol=1e-12, max_iter=1000).fit(X, y)
    np.testing.assert_allclose(model.coef_.ravel(), reference.coef_.ravel(), rtol=1e-5,
                               atol=1e-7)


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
