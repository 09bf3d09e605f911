# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Sphinx configuration of the collection's HTML documentation (`make docs`).

antsibull-docs writes the reStructuredText of every role, module and filter from the same sources
ansible-doc reads (argument specs, DOCUMENTATION, filter .yml files); Sphinx turns it into HTML with
Ansible's own theme. The build is offline: references to Ansible's and other collections' pages
(which this site does not contain) are rendered as plain text, and every other warning fails the
build, so a broken document fails CI.
"""

from __future__ import annotations

import re
from typing import Any

project = "multinode.horovod"
copyright = "multinode.horovod contributors"
title = html_short_title = "multinode.horovod"

extensions = ["sphinx_antsibull_ext"]
pygments_style = "ansible"
highlight_language = "YAML+Jinja"
html_theme = "sphinx_ansible_theme"
html_show_sphinx = False
display_version = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False
default_role = "any"
nitpicky = True

# Labels of pages outside this site: Ansible's documentation and other collections.
EXTERNAL_LABEL = re.compile(r"(ansible_collections\.(?!multinode\.horovod\.)|ansible_|common_return_values)")


def _external_as_text(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Render a reference to a page outside this site as its text instead of a broken link."""
    target = node.get("reftarget", "")
    return contnode if EXTERNAL_LABEL.match(target) else None


def setup(app: Any) -> None:
    app.connect("missing-reference", _external_as_text)
