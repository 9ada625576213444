"""The layers of ``docs/architecture.md`` hold: no module imports from a layer above its own;
and estimators reach the kernels of rounds only through ``daskglm.fitting``.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``) and are checked by
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
    assert "2 kept, 0 broken" in result.stdout


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


def test_a_forbidden_import_breaks_the_contract(tmp_path):
    """A contract of the kind that keeps estimators from the kernels of rounds fails on
    an estimator module's direct import of a forbidden module (here the kernels, which
    prediction imports)."""
    config = tmp_path / "rounds.ini"
    config.write_text("[importlinter]\nroot_package = daskglm\n\n"
                      "[importlinter:contract:rounds]\nname = rounds\ntype = forbidden\n"
                      "source_modules =\n    daskglm.estimators\n"
                      "forbidden_modules =\n    daskglm.compute.kernels\n"
                      "allow_indirect_imports = True\n")
    result = _lint(str(config))
    assert result.returncode != 0
    assert "daskglm.estimators.linear_predictors -> daskglm.compute.kernels" in result.stdout
