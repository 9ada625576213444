"""The documentation: its executed pages are well formed, and the site builds.

The quick checks read the page sources.  Building the site runs every tutorial on its own
``LocalCluster`` and takes minutes, so it is marked slow (``pytest -m slow
tests/test_docs.py``) and skipped when Sphinx or myst-nb are not installed
(``pip install ".[docs]"``).
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
NOTEBOOKS = sorted([DOCS / "quickstart.md", *(DOCS / "tutorials").glob("*.md")])
CLUSTER = "LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)"


def _front_matter(text):
    match = re.match(r"---\n(.*?)\n---\n", text, flags=re.DOTALL)
    return match.group(1) if match else ""


def _code_cells(text):
    return re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", text, flags=re.DOTALL)


def _toctree_entries(text):
    entries = []
    for body in re.findall(r"```\{toctree\}\n(.*?)```", text, flags=re.DOTALL):
        entries += [line.strip() for line in body.splitlines()
                    if line.strip() and not line.strip().startswith(":")]
    return entries


def test_there_are_tutorials():
    names = {path.stem for path in NOTEBOOKS}
    assert {"quickstart", "choosing_a_method", "out_of_core", "sparse_text",
            "scikit_learn"} <= names


@pytest.mark.parametrize("page", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_page_is_an_executed_notebook_on_its_own_cluster(page):
    text = page.read_text(encoding="utf-8")
    front = _front_matter(text)
    assert "file_format: mystnb" in front, f"{page.name} is not a MyST notebook"
    assert "name: python3" in front, f"{page.name} names no kernel"
    code = "\n".join(_code_cells(text))
    assert CLUSTER in code, f"{page.name} does not start its two-worker LocalCluster"
    assert "Client(cluster)" in code
    last = _code_cells(text)[-1]
    assert "client.close()" in last and "cluster.close()" in last, (
        f"{page.name} does not close its client and cluster at the end"
    )


def test_every_page_is_in_the_landing_page_toctree():
    entries = set(_toctree_entries((DOCS / "index.md").read_text(encoding="utf-8")))
    pages = {str(p.relative_to(DOCS).with_suffix("")) for p in NOTEBOOKS}
    pages |= {"costs", "api"}
    if (DOCS / "benchmarks.md").exists():  # written separately; linked once it exists
        pages.add("benchmarks")
    missing = pages - entries
    assert not missing, f"pages missing from the toctree of docs/index.md: {sorted(missing)}"


def test_docs_extra_installs_what_the_pages_need():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    docs = re.search(r"^docs = \[\n(.*?)^\]", text, flags=re.DOTALL | re.MULTILINE).group(1)
    for package in ("sphinx", "myst-nb", "ipykernel", "matplotlib", "pandas",
                    "dask[dataframe]"):
        assert f'"{package}' in docs, f"the docs extra lacks {package}"


def _readme_quickstart():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"## Quickstart\n\n```python\n(.*?)```", text, flags=re.DOTALL).group(1)


def test_readme_quickstart_matches_the_api():
    code = _readme_quickstart()
    compile(code, "README.md", "exec")
    for name in ("LogisticRegression", "history_", "comm_", "predict_proba"):
        assert name in code


@pytest.mark.slow
def test_readme_quickstart_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", _readme_quickstart()], cwd=tmp_path, capture_output=True,
        text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert re.search(r"gradient\s+\d+\s", result.stdout), result.stdout


def _missing_docs_tools():
    return [name for name in ("sphinx", "myst_nb", "numpydoc", "pydata_sphinx_theme",
                              "ipykernel", "matplotlib")
            if importlib.util.find_spec(name) is None]


@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path):
    missing = _missing_docs_tools()
    if missing:
        pytest.skip(f"the docs tools are not installed ({', '.join(missing)}): "
                    'pip install ".[docs]"')
    out = tmp_path / "html"
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
         "-d", str(tmp_path / "doctrees"),
         "-D", "nb_execution_mode=force",  # run every page, ignoring any cache
         str(DOCS), str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=1200,
    )
    assert result.returncode == 0, (
        f"sphinx-build failed\n--- stdout ---\n{result.stdout[-6000:]}\n"
        f"--- stderr ---\n{result.stderr[-6000:]}"
    )
    for page in ["index", "quickstart", "costs", "api", *(
            f"tutorials/{p.stem}" for p in NOTEBOOKS if p.parent.name == "tutorials")]:
        assert (out / f"{page}.html").exists(), f"{page}.html was not written"
    # the executed pages carry their outputs: a printed communication report
    quickstart = (out / "quickstart.html").read_text(encoding="utf-8")
    assert "CommReport:" in quickstart and "held-out accuracy" in quickstart


def test_architecture_page_is_short():
    """The architecture page states the design in at most 400 lines; measurements belong
    on the pages users read (costs, methods guide, benchmarks)."""
    lines = (DOCS / "architecture.md").read_text().splitlines()
    assert len(lines) <= 400, f"docs/architecture.md has {len(lines)} lines, at most 400"


def test_architecture_sections_other_pages_cite_exist():
    """Pages that point at a section of the architecture page by name find it there."""
    headings = {line.lstrip("#").strip() for line in
                (DOCS / "architecture.md").read_text().splitlines() if line.startswith("#")}
    cited = set()
    for page in DOCS.rglob("*.md"):
        cited |= set(re.findall(r'"([^"]+)" in the architecture', page.read_text()))
        cited |= set(re.findall(r"the architecture's \"([^\"]+)\"", page.read_text()))
    assert cited, "no page cites a section of the architecture page"
    assert cited <= headings, f"sections cited but missing: {sorted(cited - headings)}"
