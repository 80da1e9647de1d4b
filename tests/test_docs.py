"""The documentation site builds with warnings as errors (``mkdocs build --strict``), its API reference is
generated from the docstrings, and the README stays inside the repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _mkdocs_build(cwd: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_a_raw_sphinx_role_fails_the_strict_build(tmp_path):
    """The check that keeps the reference free of raw roles, shown once on a site of one page."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("Open it with :func:`altarr.open_dataset` first.\n")
    (tmp_path / "mkdocs.yml").write_text(f"site_name: t\nhooks:\n  - {ROOT / 'tools' / 'docs_roles.py'}\n")
    out = _mkdocs_build(tmp_path, tmp_path / "site")
    assert out.returncode != 0
    assert "raw Sphinx role in index.md" in out.stderr and "altarr.open_dataset" in out.stderr, out.stderr
    (tmp_path / "docs" / "index.md").write_text("Open it with `altarr.open_dataset` first.\n")
    assert _mkdocs_build(tmp_path, tmp_path / "site").returncode == 0


def test_docs_site_builds_strict(tmp_path):
    out = _mkdocs_build(ROOT, tmp_path / "site")
    assert out.returncode == 0, out.stdout + out.stderr
    site = tmp_path / "site"
    for page in ("index.html", "engine/index.html", "lazy-arrays/index.html", "groups/index.html",
                 "stores/index.html", "cli/index.html", "integrations/index.html", "errors/index.html",
                 "architecture/index.html"):  # fmt: skip
        assert (site / page).exists(), page
    reference = (site / "reference" / "transfer" / "index.html").read_text()
    assert "copy_array" in reference and "parse_codec" in reference  # generated from the docstrings
    dataset_page = (site / "reference" / "dataset" / "index.html").read_text()
    assert "read_chunks" in dataset_page
    # public names, Group in full, cross references rendered as links, no doctest directive shown
    for name in ("altarr.open_dataset", "altarr.create_dataset", "altarr.Group", "altarr.Dataset"):
        assert f'id="{name}"' in dataset_page, name
    for member in (
        "create_array",
        "require_array",
        "require_group",
        "members",
        "tree",
        "__delitem__",
        "info",
    ):
        assert f'id="altarr.Group.{member}"' in dataset_page, member
    assert 'href="#altarr.errors.ExistsError"' not in dataset_page  # on the errors page, linked there
    assert re.search(
        r'<a class="autorefs autorefs-internal"[^>]*href="\.\./errors/#altarr\.errors\.ExistsError"',
        dataset_page,
    )
    assert "<blockquote>\n<blockquote>\n<blockquote>" not in dataset_page  # >>> examples shown as code
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert "doctest: +" not in text or "reference" not in page.parts, page
        assert not re.search(r":(func|class|meth|mod|attr|data|exc):<code>", text), page


def test_readme_links_stay_in_the_repository_and_starts_with_two_commands():
    text = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(([^)]+)\)", text) + re.findall(r"`(\.\./[^`]*)`", text):
        assert not target.startswith(("..", "/")), target
        if not target.startswith(("http://", "https://", "#")):
            assert (ROOT / target.split("#")[0]).exists(), target
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert first_block == [
        'pip install -e ".[show]" && altarr demo',
        'pip install -e ".[test]" && python -m pytest -n 2 -q',
    ]


def test_roles_in_docstrings_become_references_resolved_as_sphinx_would():
    import importlib.util

    import griffe

    spec = importlib.util.spec_from_file_location("docs_roles", ROOT / "tools" / "docs_roles.py")
    roles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roles)
    loader = griffe.GriffeLoader(
        search_paths=[str(ROOT / "src")], extensions=griffe.load_extensions(roles.AltarrDocs)
    )
    pkg = loader.load("altarr")
    loader.resolve_aliases(implicit=False, external=False)
    collection = loader.modules_collection
    group = collection["altarr.dataset.group.Group"]
    # a sibling method, an absolute path through a public name, a relative module, an unknown target
    assert (
        roles.resolve(group["create_array"], "create_dataset", collection)
        == "altarr.dataset.group.Group.create_dataset"
    )
    assert (
        roles.resolve(group, "altarr.dataset.api.open_dataset", collection)
        == "altarr.dataset.api.open_dataset"
    )
    assert (
        roles.resolve(pkg["open_dataset"], "altarr.open_dataset", collection)
        == "altarr.dataset.api.open_dataset"
    )
    assert roles.resolve(collection["altarr.dataset.api"], ".group", collection) == "altarr.dataset.group"
    assert roles.resolve(group, "no.such.thing", collection) is None
    text = roles.rewrite("See :func:`~altarr.open_dataset`.\n>>> f()  # doctest: +SKIP", group, collection)
    assert text == (
        'See <autoref identifier="altarr.dataset.api.open_dataset" optional><code>open_dataset</code></autoref>.'
        "\n```pycon\n>>> f()\n```"
    )
    # after the extension ran, no docstring of the package holds a raw role
    assert not [o.path for o in roles._walk(pkg) if o.docstring and roles.ROLE.search(o.docstring.value)]
