"""Sphinx configuration for the daskglm documentation.

Build with ``tox -e docs`` or, from this directory,
``sphinx-build -W --keep-going -b html . _build/html``.  The API stubs under
``api/generated/`` are written by autosummary at build time and are not kept in git.

The quickstart and the tutorials are MyST markdown notebooks (``file_format: mystnb``),
executed by myst-nb during the build, each on its own two-worker ``LocalCluster``; a page
whose code raises fails the build.  Executed notebooks are cached in
``_build/.jupyter_cache`` and run again only when their code changes; add
``-D nb_execution_mode=force`` to run them all again (after a change to the package).
"""

import re
from pathlib import Path

import daskglm

# -- Project -----------------------------------------------------------------------------

project = "daskglm"
author = "daskglm developers"
copyright = "daskglm developers"
release = daskglm.__version__
version = ".".join(release.split(".")[:2])

# -- General -----------------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_nb",  # includes myst_parser: plain .md pages, and .md notebooks with front matter
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
default_role = "py:obj"

# No intersphinx: the documentation must build without network access.

# -- autodoc / autosummary / numpydoc ------------------------------------------------

autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}

# The class template lists members itself; numpydoc's own member tables would repeat them.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
# numpydoc's type cross-references default to intersphinx targets (numpy, python), and
# this build is offline, so type fields stay plain text.
numpydoc_xref_param_type = False

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# -- Executed pages (myst-nb) --------------------------------------------------------------

nb_execution_mode = "cache"
nb_execution_raise_on_error = True  # an exception in a page fails the build
nb_execution_show_tb = True  # ... and the log shows where
nb_execution_timeout = 300  # seconds per cell
nb_execution_in_temp = True  # files a page writes land in a temporary directory
# Worker processes log to stderr at start and shutdown (nothing a reader needs, and not
# the same from one run to the next); the pages show what the code prints and returns.
nb_output_stderr = "remove"
nb_merge_streams = True

# -- HTML --------------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"daskglm {release}"
html_static_path = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}


# -- Keep the API page complete ------------------------------------------------------------


def _check_api_page(app):
    """Warn (an error under ``-W``) if ``api.rst`` misses a name of ``daskglm.__all__``."""
    from sphinx.util import logging

    text = (Path(app.srcdir) / "api.rst").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\s{3,}(\w+)\s*$", text, flags=re.MULTILINE))
    missing = [name for name in daskglm.__all__ if name not in listed]
    if missing:
        logging.getLogger(__name__).warning(
            "api.rst does not list these names of daskglm.__all__: %s", ", ".join(missing)
        )


def setup(app):
    app.connect("builder-inited", _check_api_page)
