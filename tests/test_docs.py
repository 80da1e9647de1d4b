"""The documentation site builds with warnings as errors (``mkdocs build --strict``), its API reference is
generated from the docstrings, and the README stays inside the repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_docs_site_builds_strict(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    site = tmp_path / "site"
    for page in ("index.html", "engine/index.html", "lazy-arrays/index.html", "groups/index.html",
                 "stores/index.html", "cli/index.html", "integrations/index.html", "errors/index.html",
                 "architecture/index.html"):  # fmt: skip
        assert (site / page).exists(), page
    reference = (site / "reference" / "transfer" / "index.html").read_text()
    assert "copy_array" in reference and "parse_codec" in reference  # generated from the docstrings
    assert "read_chunks" in (site / "reference" / "dataset" / "index.html").read_text()


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
