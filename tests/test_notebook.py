"""A fit with ``verbose=1`` in an executed notebook, as a user runs one: a Jupyter kernel, a
two-process LocalCluster, the saved outputs read back as a notebook viewer shows them.

Needs the kernel and nbclient of the docs extra; skipped without them.
"""

import re

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

CELLS = [
    """import warnings
warnings.filterwarnings("ignore", message="Port .* is already in use")
from distributed import Client, LocalCluster
client = Client(LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None))""",
    """import dask.array as da
import daskglm
X = da.random.RandomState(0).normal(size=(200_000, 10), chunks=50_000)
y = (X[:, 0] + X[:, 1] > 0).astype(float)
model = daskglm.LogisticRegression(verbose=1).fit(X, y)
len(model.history_)""",
    "daskglm.SGDClassifier(max_iter=3, tol=None, random_state=0, verbose=1).fit(X, y);",
    "model.comm_",
    "client.close()",
]


def _saved_text(cell):
    """Every line of text the saved cell shows, whatever the output type (streams keep every
    ``\\r`` redraw as a line of their own in a notebook viewer)."""
    lines = []
    for output in cell.outputs:
        if output["output_type"] == "stream":
            text = output["text"]
        elif output["output_type"] in ("display_data", "execute_result"):
            text = output["data"].get("text/plain", "")
        else:
            continue
        lines += [part for line in text.split("\n") for part in line.split("\r")
                  if part.strip()]
    return lines


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    nbclient.NotebookClient(notebook, timeout=240, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path_factory.mktemp("nb"))}}
                            ).execute()
    path = tmp_path_factory.mktemp("saved") / "fit.ipynb"
    nbformat.write(notebook, path)
    return nbformat.read(path, as_version=4)  # as saved, then opened again


def test_the_saved_bar_of_a_converged_fit_is_full_with_its_last_figures(executed):
    cell = executed.cells[1]
    n = int(next(output for output in cell.outputs
                 if output["output_type"] == "execute_result")["data"]["text/plain"])
    shown = _saved_text(cell)
    bar = [line for line in shown if line.startswith("LogisticRegression(")]
    assert len(bar) == 1, shown  # one bar, saved in its final state only
    assert "100%" in bar[0] and f"{n}/{n}" in bar[0], bar[0]
    assert re.search(r"objective=[0-9.e+-]+", bar[0]) and "grad=" in bar[0], bar[0]
    assert not any("IProgress" in line for line in shown)  # no widget library needed


def test_an_sgd_bar_shows_its_epochs_and_no_missing_gradient(executed):
    shown = _saved_text(executed.cells[2])
    bar = [line for line in shown if line.startswith("SGDClassifier(")]
    assert len(bar) == 1 and "100%" in bar[0] and "3/3" in bar[0], shown
    assert "nan" not in bar[0]


def test_the_ledger_renders_as_an_html_table(executed):
    data = next(output for output in executed.cells[3].outputs
                if output["output_type"] == "execute_result")["data"]
    assert "<table>" in data["text/html"] and "<th>measured B</th>" in data["text/html"]
    assert "total" in data["text/html"]
