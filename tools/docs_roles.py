"""The API reference renders every cross reference: a Griffe extension and a MkDocs hook (mkdocs.yml).

altarr's docstrings name other objects with Sphinx roles (``:func:`~altarr.open_dataset```), which
mkdocstrings' Google docstring style leaves as raw text. :class:`AltarrDocs` (a Griffe extension,
run when mkdocstrings loads the package) rewrites each role into an autorefs reference: a link where the
target is rendered somewhere in the site, else the name in code, never the raw role. It resolves a role
as Sphinx would: absolute paths, paths relative to the object's module (``.downsample``), and names
seen from the object's scope (a sibling method, a class imported by the module). It also makes the
public names of ``altarr`` (``altarr.open_dataset``, loaded on first use by ``altarr.__getattr__``) known
to Griffe as aliases, so the reference can document them under the name users type, and drops doctest
directives (``# doctest: +SKIP``), which say nothing to a reader, and fences the ``>>>`` examples as
code (Markdown would quote them).

:func:`on_page_content` (a MkDocs hook) fails ``mkdocs build --strict`` on any role that is still raw in
a rendered page, so a role that slips past the rewrite (a new form, a Markdown page) is caught.
"""

from __future__ import annotations

import html
import logging
import re
from typing import Any

import griffe

#: A Sphinx role: ``:kind:`target```, ``:kind:`~target``` or ``:kind:`title <target>```.
ROLE = re.compile(r":(?:py:)?(func|class|meth|mod|attr|data|exc|obj|const):`([^`]+)`")
#: What a raw role looks like once Markdown has rendered it (the backticks became <code>).
RAW_ROLE_HTML = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const):<code>")
DOCTEST_DIRECTIVE = re.compile(r"[ \t]*#\s*doctest:\s*[+-]\w+(?:\s*,\s*[+-]\w+)*")

log = logging.getLogger("mkdocs.plugins.altarr_docs")


def _exists(collection: Any, path: str) -> str | None:
    """The canonical path of ``path`` when Griffe knows it, else ``None``."""
    try:
        obj = collection[path]
        return str(obj.canonical_path)
    except Exception:  # KeyError, AliasResolutionError, CyclicAliasError: not found
        return None


def resolve(obj: Any, target: str, collection: Any) -> str | None:
    """The canonical path a role's ``target`` names, seen from the docstring of ``obj``.

    >>> resolve(None, "nothing.here", {}) is None
    True
    """
    if target.startswith("."):
        module = obj.module if obj is not None else None
        bases = [module.path, module.path.rpartition(".")[0]] if module is not None else []
        return next((p for b in bases if (p := _exists(collection, b + target))), None)
    found = _exists(collection, target)
    if found or obj is None:
        return found
    first, _, rest = target.partition(".")
    scope = obj
    while scope is not None:
        found = _exists(collection, f"{scope.path}.{target}")
        if found:
            return found
        try:
            head = scope.resolve(first)
        except Exception:  # NameResolutionError: not visible from this scope
            head = None
        if head:
            found = _exists(collection, f"{head}.{rest}" if rest else head)
            if found:
                return found
        scope = scope.parent
    return None


def rewrite(text: str, obj: Any, collection: Any) -> str:
    """``text`` with every role an optional autorefs reference and no doctest directive.

    >>> rewrite(":func:`~pkg.mod.fn` and :class:`Thing`", None, {})
    '<autoref identifier="pkg.mod.fn" optional><code>fn</code></autoref> and <autoref identifier="Thing" optional><code>Thing</code></autoref>'
    """

    def one(match: re.Match[str]) -> str:
        body = match.group(2)
        titled = re.fullmatch(r"(.*?)\s*<([^>]+)>", body)
        title, target = (titled.group(1), titled.group(2)) if titled else (None, body)
        short = target.startswith("~")
        target = target.lstrip("~")
        if title is None:
            title = target.rpartition(".")[2] if short else target.lstrip(".")
        identifier = resolve(obj, target, collection) or target.lstrip(".")
        return f'<autoref identifier="{html.escape(identifier)}" optional><code>{html.escape(title)}</code></autoref>'

    return fence_examples(DOCTEST_DIRECTIVE.sub("", ROLE.sub(one, text)))


def fence_examples(text: str) -> str:
    r"""Every run of ``>>>`` lines (with their continuation and output lines, up to a blank line) fenced as
    a ``pycon`` code block, so Markdown shows it as code instead of quoting it (``>`` starts a quote).

    >>> fence_examples("Text.\n  >>> 1 + 1\n  2\n\nMore.").split("\n")
    ['Text.', '  ```pycon', '  >>> 1 + 1', '  2', '  ```', '', 'More.']
    """
    out: list[str] = []
    indent: str | None = None
    for line in text.split("\n"):
        stripped = line.lstrip()
        if indent is None and stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
        elif indent is not None and (not stripped or not line.startswith(indent)):
            out.append(f"{indent}```")
            indent = None
        out.append(line)
    if indent is not None:
        out.append(f"{indent}```")
    return "\n".join(out)


def _walk(obj: Any) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


class AltarrDocs(griffe.Extension):
    """Public aliases for ``altarr``'s lazily loaded names, and roles rewritten in every docstring."""

    def on_package(self, *, pkg: Any, loader: Any, **kwargs: Any) -> None:
        if pkg.path != "altarr":
            return
        import altarr

        for name, module in altarr._PUBLIC.items():
            if name not in pkg.members and f"{module}.{name}" != f"altarr.{name}":
                pkg.set_member(name, griffe.Alias(name, f"{module}.{name}", parent=pkg))
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = rewrite(obj.docstring.value, obj, loader.modules_collection)


def on_page_content(html_text: str, page: Any, **kwargs: Any) -> str:
    """MkDocs hook: a warning (an error under ``--strict``) for each raw Sphinx role left in a page."""
    for match in RAW_ROLE_HTML.finditer(html_text):
        context = re.sub(r"<[^>]+>", "", html_text[max(match.start() - 60, 0) : match.end() + 60])
        log.warning("raw Sphinx role in %s: ...%s...", page.file.src_uri, " ".join(context.split()))
    return html_text
