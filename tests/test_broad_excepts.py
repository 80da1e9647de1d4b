"""``except Exception`` only where the error is re-raised (docs/development.md, "Errors"): every handler in
``src/altarr`` that catches ``Exception``, ``BaseException`` or everything (a bare ``except:``), and every
``contextlib.suppress`` of them, either ends by raising — a bare ``raise`` (cleanup, a note added) or
``raise <altarr error> from <the caught exception>`` — or is on the allow-list below with its reason.

A broad catch that turns an unexpected error into a fallback (a probe, a guess, a default) hides a bug:
catch the exception types the called code raises instead. The allow-list is keyed by the function holding
the handler, with how many it holds; an entry whose count differs fails the test too, so it only shrinks.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import altarr.errors

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "altarr"

BROAD = {"Exception", "BaseException"}

# "module:function" (relative to src/altarr; qualified name) -> (how many broad handlers, why they stand)
ALLOWED: dict[str, tuple[int, str]] = {
    "cli/app.py:main": (
        1,
        "the command line's boundary: any error is printed on one line and exits 1 (2 for a "
        "usage problem, docs/cli.md), its traceback with --debug; nothing runs after it",
    ),
    "_threads.py:_inline": (1, "a serial map runs every item, then raises the first item's error"),
    "_threads.py:pmap.work": (1, "a pool worker hands its item's error to pmap, which raises it"),
    "_threads.py:spawn": (1, "the inline runner's error is raised by the wait function it returns"),
    "_threads.py:spawn.wait": (1, "every runner is waited for, then the first error is raised"),
    "dataset/shard_write.py:ShardWriter._encode_items.one": (
        1,
        "a pool worker hands its chunk's error to the "
        "caller as its result, raised in the caller's order (_raise_first_failure)",
    ),
    "dataset/access.py:DatasetAccess.visit_distinct": (
        1,
        "a visit's error as the answers arrive is raised once every answer's chunks "
        "were visited, as pmap raises its first item's error after every item ran",
    ),
    "dataset/access.py:DatasetAccess._decode_as_ready": (
        1,
        "the read's own error is being raised; finishing the decodes "
        "it started (so none writes into `out` afterwards) must not replace it",
    ),
    "lazy/batch.py:Batch.fetch": (1, "the error is handed to every placeholder of the batch, then raised"),
    "lazy/compare.py:array_equal": (
        1,
        "NumPy's rule: np.array_equal is False for an argument np.asarray cannot "
        "convert (numpy/_core/numeric.py catches Exception); only non-lazy arguments are converted",
    ),
    "lazy/compare.py:array_equiv": (
        1,
        "as array_equal: NumPy's np.array_equiv catches Exception around asarray",
    ),
    "stores/obstore_client.py:outcome": (
        1,
        "a batch hands each request's error to the caller in its place; "
        "the caller raises it as a StoreError from it (stores/_util.client_failure)",
    ),
    "stores/fsspec_store.py:FsspecStore._gather": (
        1,
        "as fsspec's gather(return_exceptions=True) on a "
        "synchronous file system: each call's error in its place, raised by the caller as a StoreError",
    ),
    "verifying.py:verify": (
        1,
        "verify reports, it does not stop: an unexpected error of one node is a finding "
        "(kind 'unexpected', with its type) and the report fails",
    ),
    "verifying.py:_check_node": (
        2,
        "as verify: an unexpected error reading metadata or attributes is a finding",
    ),
    "verifying.py:_check_array": (
        1,
        "as verify: one object's unexpected error is a finding; the others are still checked",
    ),
    "verifying.py:_Walker.chunk": (1, "as verify: one chunk's unexpected decode error is a finding"),
}


def _error_names() -> set[str]:
    """The classes of ``altarr.errors`` (what a re-raise may raise)."""
    return {
        name
        for name, cls in inspect.getmembers(altarr.errors, inspect.isclass)
        if issubclass(cls, altarr.errors.AltarrError)
    }


def _factories(trees: dict[str, ast.Module], errors: set[str]) -> set[str]:
    """Functions of ``src/altarr`` annotated to return an altarr error (``raise _wrap(...) from e``)."""
    return {
        node.name
        for tree in trees.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.returns is not None
        and ast.unparse(node.returns).strip("'\"") in errors
    }


def _catches_broadly(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in BROAD for t in types)


def _suppresses_broadly(item: ast.withitem) -> bool:
    call = item.context_expr
    return (
        isinstance(call, ast.Call)
        and ast.unparse(call.func) in ("suppress", "contextlib.suppress")
        and any(isinstance(a, ast.Name) and a.id in BROAD for a in call.args)
    )


def _raised_name(exc: ast.expr, body: list[ast.stmt]) -> set[str]:
    """The class or factory names ``raise exc`` may raise: a call's callee, or the alternatives of a
    conditional expression assigned to a local name in the handler (``cls = A if ... else B``)."""
    if isinstance(exc, ast.Call):
        exc = exc.func
    if isinstance(exc, ast.Attribute):
        return {exc.attr}
    if isinstance(exc, ast.Name):
        for stmt in body:
            if isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == [exc.id]:
                value = stmt.value
                if isinstance(value, ast.IfExp):
                    return {ast.unparse(value.body), ast.unparse(value.orelse)}
        return {exc.id}
    return {ast.unparse(exc)}


def _reraises(handler: ast.ExceptHandler, raisable: set[str]) -> bool:
    """The handler ends by raising: ``raise``, or ``raise <altarr error> from <the caught exception>``."""
    last = handler.body[-1]
    if not isinstance(last, ast.Raise):
        return False
    if last.exc is None:
        return True
    caught = handler.name
    return (
        caught is not None
        and isinstance(last.cause, ast.Name)
        and last.cause.id == caught
        and _raised_name(last.exc, handler.body) <= raisable
    )


def broad_handlers(tree: ast.Module) -> list[tuple[str, ast.ExceptHandler | ast.withitem]]:
    """``(qualified function name, node)`` of every broad handler or suppress in ``tree``.

    >>> src = "def f():\\n    try:\\n        pass\\n    except Exception:\\n        pass\\n"
    >>> [(name, node.lineno) for name, node in broad_handlers(ast.parse(src))]
    [('f', 4)]
    """
    found: list[tuple[str, ast.ExceptHandler | ast.withitem]] = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = f"{scope}.{child.name}" if scope else child.name
            if isinstance(child, ast.ExceptHandler) and _catches_broadly(child):
                found.append((scope or "<module>", child))
            if isinstance(child, ast.With | ast.AsyncWith):
                found.extend((scope or "<module>", item) for item in child.items if _suppresses_broadly(item))
            visit(child, inner)

    visit(tree, "")
    return found


def _trees() -> dict[str, ast.Module]:
    return {p.relative_to(SRC).as_posix(): ast.parse(p.read_text()) for p in sorted(SRC.rglob("*.py"))}


def test_broad_excepts_reraise_or_are_allowed():
    trees = _trees()
    errors = _error_names()
    raisable = errors | _factories(trees, errors)
    offenders: list[str] = []
    allowed: dict[str, int] = {}
    for module, tree in trees.items():
        for scope, node in broad_handlers(tree):
            where = f"{module}:{scope}"
            if isinstance(node, ast.ExceptHandler) and _reraises(node, raisable):
                continue
            if where in ALLOWED:
                allowed[where] = allowed.get(where, 0) + 1
                continue
            line = node.lineno if isinstance(node, ast.ExceptHandler) else node.context_expr.lineno
            offenders.append(f"{where} (line {line})")
    assert not offenders, (
        "broad except that neither re-raises (`raise`, `raise AltarrError(...) from e`) nor is allowed: "
        f"catch the types the called code raises: {offenders}"
    )
    counts = {where: n for where, (n, _) in ALLOWED.items()}
    changed = {where: allowed.get(where, 0) for where in counts if allowed.get(where, 0) != counts[where]}
    assert not changed, (
        f"broad handlers per allowed function changed (a new one needs its own reason; fewer: lower the "
        f"count or remove the entry in {Path(__file__).name}): {changed}"
    )


def test_the_scan_tells_a_reraise_from_a_swallow():
    src = (
        "def ok(x):\n"
        "    try:\n        x()\n    except Exception as e:\n        raise StoreError('x') from e\n"
        "    try:\n        x()\n    except BaseException:\n        x.close()\n        raise\n"
        "def swallow(x):\n"
        "    try:\n        x()\n    except Exception:\n        return None\n"
        "def wrong_cause(x):\n"
        "    try:\n        x()\n    except Exception as e:\n        raise StoreError('x') from None\n"
        "def not_ours(x):\n"
        "    try:\n        x()\n    except Exception as e:\n        raise ValueError('x') from e\n"
        "def suppressed(x):\n"
        "    with contextlib.suppress(Exception):\n        x()\n"
    )
    found = broad_handlers(ast.parse(src))
    assert [name for name, _ in found] == ["ok", "ok", "swallow", "wrong_cause", "not_ours", "suppressed"]
    verdicts = [isinstance(node, ast.ExceptHandler) and _reraises(node, {"StoreError"}) for _, node in found]
    assert verdicts == [True, True, False, False, False, False]
