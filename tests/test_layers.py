"""The layers of ``docs/architecture.md`` hold: no module imports from a layer above its own.

The contract lives in ``pyproject.toml`` (``[tool.importlinter]``) and is checked by
import-linter, here and so in CI.
"""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

pytest.importorskip("importlinter")


def _lint(config):
    return subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                               "sys.exit(lint_imports(config_filename=sys.argv[1]))", config],
        cwd=ROOT, capture_output=True, text=True)


def test_the_package_keeps_its_layers():
    result = _lint(str(ROOT / "pyproject.toml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    """The check fails on a violation: with the model layer put above compute, compute's
    imports of the model are upward imports."""
    config = tmp_path / "reversed.ini"
    config.write_text("[importlinter]\nroot_package = daskglm\n\n"
                      "[importlinter:contract:reversed]\nname = reversed\ntype = layers\n"
                      "layers =\n    daskglm.model\n    daskglm.compute\n")
    result = _lint(str(config))
    assert result.returncode != 0
    assert "daskglm.compute is not allowed to import daskglm.model" in result.stdout
