"""Mutation testing of altarr's core modules with mutmut, one module at a time, against its own tests.

Usage (outside the default suite; needs ``pip install -e ".[quality]"``)::

    python tools/mutation.py --list              # the modules and the tests each is run against
    python tools/mutation.py coalesce            # mutate stores/coalesce.py, run its tests per mutant
    python tools/mutation.py coalesce --results  # the tally and the survivors of the last run
    python tools/mutation.py coalesce --show NAME  # the diff of one mutant
    python tools/mutation.py coalesce --explain NAME --reason "..."  # keep a survivor's triage
    python tools/mutation.py --table             # the kept verdicts per module

Each run works in its own copy of the repository (``src``, ``tests``, ``pyproject.toml``) under
``--workdir`` (default ``/tmp/altarr-mutation/<module>``), so it never touches the work tree and several
modules can run side by side; mutmut keeps its results there, and running the same command again
carries on where an interrupted run stopped. The pool size is forced to 1 (``ALTARR_THREADS=1``) and
pytest runs without xdist, so a run costs one core.

The verdicts of each module's last run are kept in the repository (``tools/mutation-state/<module>/``,
written at the end of every run, or with ``--save``): a fresh copy starts from them, so a run on a new
machine tests only the mutants of functions that changed since (mutmut's per-function hashes) and the
survivors (the tests may have grown). ``--fresh`` ignores the kept state too.

The triage of the survivors is kept beside them, in ``tools/mutation-state/triage.json``: one entry per
judged survivor, named by what it changes rather than by mutmut's number (which shifts with every edit of
its function): the file, the function's qualified name and the mutant's diff (its ``-``/``+`` lines), with
a verdict (``equivalent``, or ``killed by hand``: a test left out of mutmut's runs kills it) and the
reason. The tally printed at the end counts each mutant once: ``killed`` (a test failed or timed out, or
a triage entry says killed by hand), ``survived``, of which ``equivalent`` are the survivors a triage
entry explains, and ``unexplained`` the rest, each of which needs a test or a triage entry.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The judged mutants of each module's last run, kept in the repository (see :func:`save_state`)
STATE = ROOT / "tools" / "mutation-state"
#: The judged survivors, by file, function and diff (see :func:`triage`)
TRIAGE = STATE / "triage.json"
#: mutmut's exit codes of a mutant that no test failed on: judged again when a state is restored
_UNKILLED = {0, 5, 33}

#: module name -> (files to mutate, tests that judge them)
MODULES: dict[str, tuple[list[str], list[str]]] = {
    "coalesce": (
        ["src/altarr/stores/coalesce.py"],
        ["tests/stores/test_coalesce.py", "tests/stores/test_stores.py"],
    ),
    "sharding": (
        ["src/altarr/codecs/sharding.py"],
        [
            "tests/codecs/test_sharding_codec.py",
            "tests/codecs/test_codecs.py",
            "tests/dataset/test_dataset_requests.py",
        ],
    ),
    "engine": (
        [
            "src/altarr/dataset/access.py",
            "src/altarr/dataset/layout.py",
            "src/altarr/dataset/chunk_codec.py",
            "src/altarr/dataset/index_cache.py",
            "src/altarr/dataset/shard_read.py",
            "src/altarr/dataset/shard_write.py",
            "src/altarr/dataset/grid.py",
        ],
        [
            "tests/dataset/test_dataset_requests.py",
            "tests/dataset/test_dataset_regions.py",
            "tests/dataset/test_grid.py",
            "tests/dataset/test_visit_chunks.py",
            "tests/dataset/test_dataset_bad_input.py",
            "tests/dataset/test_request_contract_formats.py",
            "tests/dataset/test_engine_parts.py",
            # region reads on a store that answers as ready (obstore's path): only these tests take it
            "tests/dataset/test_read_as_ready.py",
            # which index check refuses a hostile entry, at every nesting level and read path
            "tests/dataset/test_hostile_shards.py",
        ],
    ),
    "formats": (
        ["src/altarr/formats/*.py"],
        [
            "tests/formats/test_formats_detect.py",
            "tests/formats/test_formats_n5.py",
            "tests/formats/test_formats_zarr3.py",
            "tests/formats/test_zarr2_format.py",
            "tests/formats/test_formats_registry.py",
            "tests/formats/test_hostile_metadata.py",
            "tests/formats/test_parse_memo.py",
            "tests/dataset/test_dataset_bad_input_n5_zarr2.py",
        ],
    ),
    "indexing": (
        ["src/altarr/selection/*.py"],
        [
            "tests/selection/test_selection.py",
            "tests/lazy/test_lazy_indexing.py",
            "tests/dataset/test_dataset_regions.py",
            # the kernel's task geometry (RegionPlan.geometry): a wrong one falls back to the Python path
            # with the same values, which only this module's check that no chunk took it can see
            "tests/dataset/test_native_kernel.py",
        ],
    ),
    # the streamed reductions, split out of reduce.py by concern
    "reduce": (
        [
            "src/altarr/lazy/reduce.py",
            "src/altarr/lazy/streaming.py",
            "src/altarr/lazy/moments.py",
            "src/altarr/lazy/positions.py",
            "src/altarr/lazy/products.py",
        ],
        ["tests/lazy/test_lazy_reduce.py"],
    ),
}

_PYTEST_ARGS = ["-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0", "-q", "-x", "-o", "addopts="]

#: module name -> tests left out of its per-mutant runs: one that costs far more than the rest of the
#: module's tests together (judge the survivors with it by hand, see docs/development.md), or one that
#: mutmut's own machinery makes fail
DESELECT: dict[str, list[str]] = {
    # ~50 s on 2 loaded cores (1500 reads racing a rewriting subprocess), against ~35 s for the other 230
    # tests: paid in full by every survivor in access.py / shard_read.py
    "engine": [
        "tests/dataset/test_dataset_requests.py::test_reads_take_every_chunk_of_a_shard_from_one_version"
    ],
    # not slow, but wrong under mutmut by construction: it checks that NumPy's warnings name the first
    # frame outside altarr, and mutmut's trampolines (mutmut/mutation/trampoline.py) sit between altarr's
    # own frames, so every run, even of the unmutated code ("failed to collect stats"), fails it
    "reduce": [
        "tests/lazy/test_lazy_reduce.py::test_numpys_warnings_name_the_callers_line_through_methods_and_numpy_functions"
    ],
}


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def prepare(
    module: str, work: Path, timeout_multiplier: float | None = None, sync: bool = False, restore: bool = True
) -> None:
    """A fresh copy of the repository with a ``[tool.mutmut]`` section for ``module``; with ``sync``, an
    existing run's copy gets this tree's ``src``, ``tests`` and ``benchmarks`` again (mutmut keeps its results and, by
    its per-function hashes, tests again only the mutants of functions that changed)."""
    mutate, tests = MODULES[module]
    if (work / "mutants").exists() and not sync:
        return  # carry on with the existing run
    if sync:
        # mutmut runs for a mutant only the tests its coverage stats say reach the function: stats from
        # before the sync would leave a new test out (first_chunk 5/8/9 "survived" a test that kills them)
        (work / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    if not list((ROOT / "src" / "altarr").glob("_native*.so")):
        # the copy is of this tree's src: without the built kernel every native-path test errors out
        sys.exit(
            f"the native kernel is not built in {ROOT / 'src'}: run `python setup.py build_ext --inplace` there"
        )
    work.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "results")
    # benchmarks/: the loopback servers the network tests import (benchmarks/netservers.py)
    for name in ("src", "tests", "benchmarks"):
        shutil.rmtree(work / name, ignore_errors=True)
        shutil.copytree(ROOT / name, work / name, ignore=ignore)
    config = (ROOT / "pyproject.toml").read_text()
    config += (
        "\n[tool.mutmut]\n"
        'source_paths = ["src/altarr"]\n'
        f"only_mutate = {_toml_list(mutate)}\n"
        f"pytest_add_cli_args = {_toml_list(_PYTEST_ARGS + [f'--deselect={t}' for t in DESELECT.get(module, [])])}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(tests)}\n"
        # into mutmut's own copy (mutants/) too: the network tests import benchmarks/netservers.py
        'also_copy = ["benchmarks"]\n'
        # Each mutant's tests run in a child forked from a server that has imported and collected the
        # tests but run none: forked straight from mutmut's process (which ran every test to time them)
        # a child inherits tensorstore's started thread pool and aborts (SIGABRT) in its first
        # tensorstore call, which mutmut reports as "suspicious" whatever the mutant does.
        'process_isolation = "forkserver"\n'
    )
    if timeout_multiplier is not None:
        config += f"timeout_multiplier = {float(timeout_multiplier)}\n"
    (work / "pyproject.toml").write_text(config)
    if restore and not (work / "mutants").exists():
        n = restore_state(module, work)
        if n:
            print(f"{module}: {n} verdicts restored from {STATE.relative_to(ROOT)}/{module}")


def save_state(module: str, work: Path) -> int:
    """Keep each mutant's verdict and each function's hash from ``work``'s mutmut run in
    ``tools/mutation-state/<module>/`` (one JSON per mutated file, mutmut's own keys), so a run on
    another machine (a fresh ``/tmp``) starts from them; returns how many verdicts were kept."""
    out = STATE / module
    shutil.rmtree(out, ignore_errors=True)
    kept = 0
    for meta in sorted((work / "mutants").rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        codes = {k: v for k, v in data.get("exit_code_by_key", {}).items() if v is not None}
        slim = {"exit_code_by_key": codes, "hash_by_function_name": data.get("hash_by_function_name", {})}
        target = out / meta.relative_to(work / "mutants").with_suffix(".json")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(slim, indent=0, sort_keys=True) + "\n")
        kept += len(codes)
    return kept


def restore_state(module: str, work: Path) -> int:
    """Put the kept verdicts (:func:`save_state`) into a fresh copy before its first run. mutmut then
    tests only the mutants of functions whose hash changed since, and the ones no test killed (the
    tests may have grown: they are judged again); returns how many verdicts were restored."""
    restored = 0
    for state in sorted((STATE / module).rglob("*.json")):
        data = json.loads(state.read_text())
        codes = {k: v for k, v in data["exit_code_by_key"].items() if v not in _UNKILLED}
        meta = work / "mutants" / state.relative_to(STATE / module).with_suffix(".meta")
        meta.parent.mkdir(parents=True, exist_ok=True)
        empty: dict[str, dict] = {"durations_by_key": {}, "estimated_durations_by_key": {}}
        meta.write_text(
            json.dumps(
                {
                    "exit_code_by_key": codes,
                    "hash_by_function_name": data["hash_by_function_name"],
                    "type_check_error_by_key": {},
                    **empty,
                }
            )
        )
        restored += len(codes)
    return restored


def _env() -> dict[str, str]:
    env = dict(os.environ, ALTARR_THREADS="1")
    env.pop("PYTHONPATH", None)  # mutmut puts its mutated copy of src first; nothing may shadow it
    return env


def mutmut(work: Path, *args: str, capture: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mutmut", *args], cwd=work, env=_env(), text=True, capture_output=capture
    )


def function_name(mutant: str) -> str:
    """The qualified name of the function a mutmut mutant name belongs to.

    >>> function_name("altarr.stores.coalesce.xǁCoalescePlanǁsplit__mutmut_10")
    'CoalescePlan.split'
    >>> function_name("altarr.formats.zarr2.x_parse_zarray__mutmut_159")
    'parse_zarray'
    """
    head = mutant.rpartition("__mutmut_")[0].rpartition(".")[2]
    if head.startswith("xǁ"):
        return ".".join(head.split("ǁ")[1:])
    return head[2:]


def diff_lines(diff: str) -> list[str]:
    """The changed lines of a unified diff (mutmut's ``show``), each ``-`` or ``+`` and the line without
    its indentation: what names a mutant across edits of the lines around it.

    >>> diff_lines("--- a\n+++ a\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2")
    ['- return 1', '+ return 2']
    """
    body = [line for line in diff.splitlines() if not line.startswith(("---", "+++", "@@"))]
    return [f"{line[0]} {line[1:].strip()}" for line in body if line[:1] in "+-"]


def triage() -> list[dict[str, str | list[str]]]:
    """The kept triage entries: ``file``, ``function``, ``diff``, ``verdict``, ``reason`` (and ``was``,
    the mutant's mutmut name and the commit it was judged at). The file's ``retired`` list keeps the
    entries an edit of their function retired (their reason, for the next triage of that function)."""
    if not TRIAGE.exists():
        return []
    entries: list[dict[str, str | list[str]]] = json.loads(TRIAGE.read_text())["entries"]
    return entries


def verdicts() -> dict[tuple[str, tuple[str, ...]], str]:
    """``(function, diff lines) -> verdict`` of every triage entry."""
    return {(str(e["function"]), tuple(e["diff"])): str(e["verdict"]) for e in triage()}


def write_triage(entries: list[dict[str, str | list[str]]]) -> None:
    """Keep ``entries`` in :data:`TRIAGE`, sorted by file, function and diff, one entry a line (a change
    shows as the lines it touches); the retired entries stay as they are."""
    retired = json.loads(TRIAGE.read_text()).get("retired", []) if TRIAGE.exists() else []

    def lines(items: list[dict[str, str | list[str]]]) -> str:
        items = sorted(items, key=lambda e: (e["file"], e["function"], e["diff"]))
        return ",\n".join(json.dumps(e, ensure_ascii=False) for e in items)

    TRIAGE.write_text(f'{{"entries": [\n{lines(entries)}\n],\n"retired": [\n{lines(retired)}\n]}}\n')


def _functions(path: Path) -> dict[str, list[str]]:
    """Qualified name -> stripped source lines of every function and method of a module."""
    import ast

    text = path.read_text()
    lines = text.splitlines()
    found: dict[str, list[str]] = {}
    for node in ast.parse(text).body:
        members = node.body if isinstance(node, ast.ClassDef) else [node]
        prefix = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
        for f in members:
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef):
                found[prefix + f.name] = [line.strip() for line in lines[f.lineno - 1 : f.end_lineno]]
    return found


def holds(entry: dict[str, Any], functions: dict[str, dict[str, list[str]]] | None = None) -> bool:
    """Whether ``entry``'s function still exists in its file and holds every line its diff removes."""
    path = ROOT / str(entry["file"])
    if functions is None:
        functions = {str(entry["file"]): _functions(path) if path.exists() else {}}
    body = functions.get(str(entry["file"]), {}).get(str(entry["function"]))
    removed = [line[2:] for line in entry["diff"] if line.startswith("- ")]
    return body is not None and all(line in body for line in removed)


def retire_stale() -> int:
    """Move the entries whose code an edit changed (:func:`holds` false) to the ``retired`` list;
    returns how many moved."""
    kept = json.loads(TRIAGE.read_text())
    files = {str(e["file"]) for e in kept["entries"]}
    functions = {f: _functions(ROOT / f) if (ROOT / f).exists() else {} for f in files}
    stale = [e for e in kept["entries"] if not holds(e, functions)]
    for e in stale:
        e["retired"] = "the function changed since: the mutant no longer exists as judged"
    TRIAGE.write_text(json.dumps({"entries": [], "retired": kept["retired"] + stale}))
    write_triage([e for e in kept["entries"] if holds(e, functions)])
    return len(stale)


def explain(work: Path, mutant: str, verdict: str, reason: str) -> dict[str, str | list[str]]:
    """Add (or replace) the triage entry of a survivor of ``work``'s run; returns it."""
    module = mutant.rpartition("__mutmut_")[0].rpartition(".")[0]
    entry: dict[str, str | list[str]] = {
        "file": "src/" + module.replace(".", "/") + ".py",
        "function": function_name(mutant),
        "diff": mutant_diff(_mutated_copy(work, mutant), mutant),
        "verdict": verdict,
        "reason": reason,
        "was": mutant,
    }
    key = (entry["file"], entry["function"], entry["diff"])
    write_triage([e for e in triage() if (e["file"], e["function"], e["diff"]) != key] + [entry])
    return entry


def kept_table() -> list[str]:
    """One Markdown row per module: the kept verdicts (mutants judged, killed, survived) and how many
    triage entries name its files."""
    rows = ["| module | mutants judged | killed | survived | triage entries |", "|---|---|---|---|---|"]
    entries = triage()
    for name, (mutate, _) in MODULES.items():
        codes = [
            code
            for state in sorted((STATE / name).rglob("*.json"))
            for code in json.loads(state.read_text())["exit_code_by_key"].values()
        ]
        survived = sum(code in _UNKILLED for code in codes)
        files = {f for pattern in mutate for f in (str(p.relative_to(ROOT)) for p in ROOT.glob(pattern))}
        triaged = sum(e["file"] in files for e in entries)
        rows.append(f"| {name} | {len(codes)} | {len(codes) - survived} | {survived} | {triaged} |")
    return rows


def mutant_diff(module: Any, mutant: str) -> list[str]:
    """The changed lines of ``mutant`` (:func:`diff_lines`), read from ``module``: mutmut's mutated copy
    of its file (a parsed ``libcst.Module``), which holds each function unmutated and as every mutant."""
    import libcst
    from mutmut.mutation.diff_apply import read_mutant_function, read_original_function

    orig, mutated = (
        libcst.Module([f]).code.strip().split("\n")
        for f in (read_original_function(module, mutant), read_mutant_function(module, mutant))
    )
    return diff_lines("\n".join(difflib.unified_diff(orig, mutated, lineterm="")))


def _mutated_copy(work: Path, mutant: str) -> Any:
    """mutmut's mutated copy of the file ``mutant`` is in, parsed once per file."""
    import libcst

    module = mutant.rpartition("__mutmut_")[0].rpartition(".")[0]
    path = work / "mutants" / "src" / (module.replace(".", "/") + ".py")
    if path not in _PARSED:
        _PARSED[path] = libcst.parse_module(path.read_text())
    return _PARSED[path]


_PARSED: dict[Path, Any] = {}


def tally(work: Path) -> tuple[dict[str, int], list[str]]:
    out = mutmut(work, "results", "--all", "true", capture=True).stdout
    counts = {"killed": 0, "survived": 0, "equivalent": 0, "unexplained": 0, "not checked": 0, "other": 0}
    survivors = []
    judged = verdicts()
    for line in out.splitlines():
        name, _, status = line.strip().rpartition(": ")
        if not name:
            continue
        verdict = None
        if status in ("survived", "no tests"):  # no test even reaches it: a survivor too
            verdict = judged.get((function_name(name), tuple(mutant_diff(_mutated_copy(work, name), name))))
        if status in ("killed", "timeout") or verdict == "killed by hand":
            counts["killed"] += 1
        elif status in ("survived", "no tests"):
            counts["survived"] += 1
            if verdict == "equivalent":
                counts["equivalent"] += 1
            else:
                counts["unexplained"] += 1
                survivors.append(name)
        elif status == "not checked":
            counts["not checked"] += 1
        else:
            counts["other"] += 1
    return counts, survivors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", nargs="?", choices=sorted(MODULES))
    parser.add_argument("--list", action="store_true", help="list the modules and their tests")
    parser.add_argument("--results", action="store_true", help="only print the last run's tally")
    parser.add_argument("--show", metavar="MUTANT", help="print one mutant's diff")
    parser.add_argument("--fresh", action="store_true", help="start over (drop the previous run)")
    parser.add_argument(
        "--sync",
        action="store_true",
        help="copy this tree's src and tests into the run's copy again, then carry on: only the mutants of "
        "changed functions are tested again",
    )
    parser.add_argument("--max-children", type=int, default=1, help="mutants tested at once (default 1)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/altarr-mutation"))
    parser.add_argument(
        "--timeout-multiplier",
        type=float,
        default=None,
        help="mutmut's per-mutant time limit, in multiples of the tests' own time (mutmut's default: 15); "
        "raise it on a loaded machine (set when a run starts; use --fresh to change it)",
    )
    parser.add_argument("--save", action="store_true", help="keep the run's verdicts in the repository")
    parser.add_argument(
        "--explain",
        metavar="MUTANT",
        help="keep a triage entry for a survivor of the last run (with --reason, and --killed-by-hand "
        "when a test left out of the runs kills it)",
    )
    parser.add_argument(
        "--reason", help="why the survivor of --explain cannot be told apart (or who kills it)"
    )
    parser.add_argument("--killed-by-hand", action="store_true", help="the --explain entry's verdict")
    parser.add_argument(
        "--table", action="store_true", help="the kept verdicts and triage entries per module (Markdown)"
    )
    parser.add_argument(
        "--retire-stale",
        action="store_true",
        help="move the triage entries whose function no longer holds the lines their diff removes to retired",
    )
    args = parser.parse_args(argv)
    if args.table:
        print("\n".join(kept_table()))
        return 0
    if args.retire_stale:
        print(f"{retire_stale()} triage entries retired")
        return 0
    if args.list or not args.module:
        for name, (mutate, tests) in MODULES.items():
            print(f"{name:9} {' '.join(mutate)}\n{'':9}   judged by {' '.join(tests)}")
        return 0
    work = args.workdir / args.module
    if args.show:
        return mutmut(work, "show", args.show).returncode
    if args.explain:
        if not args.reason:
            parser.error("--explain needs --reason")
        verdict = "killed by hand" if args.killed_by_hand else "equivalent"
        print(json.dumps(explain(work, args.explain, verdict, args.reason), indent=1, ensure_ascii=False))
        return 0
    if args.save:
        print(
            f"{args.module}: {save_state(args.module, work)} verdicts kept in {STATE.relative_to(ROOT)}/{args.module}"
        )
        return 0
    if not args.results:
        if args.fresh:
            shutil.rmtree(work, ignore_errors=True)
        prepare(args.module, work, args.timeout_multiplier, sync=args.sync, restore=not args.fresh)
        mutmut(work, "run", "--max-children", str(args.max_children))
        print(
            f"{args.module}: {save_state(args.module, work)} verdicts kept in {STATE.relative_to(ROOT)}/{args.module}"
        )
    counts, survivors = tally(work)
    for name in survivors:
        print(f"survived (unexplained): {name}")
    total = counts["killed"] + counts["survived"]
    score = f"{100 * counts['killed'] / total:.1f} %" if total else "n/a"
    print(
        f"{args.module}: {counts['killed']} killed / {counts['survived']} survived "
        f"({counts['equivalent']} triaged equivalent, {counts['unexplained']} unexplained); "
        f"not checked {counts['not checked']}, other {counts['other']}; score {score}"
    )
    return 1 if counts["unexplained"] else 0


if __name__ == "__main__":
    sys.exit(main())
