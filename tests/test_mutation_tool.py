"""tools/mutation.py keeps each module's mutant verdicts in the repository and restores them into a fresh
copy, so a run on a new machine re-tests only changed functions and the survivors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_TOOL = Path(__file__).resolve().parents[1] / "tools" / "mutation.py"


@pytest.fixture()
def tool(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("mutation_tool", _TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "STATE", tmp_path / "state")
    return mod


def _meta(codes: dict, hashes: dict) -> dict:
    return {
        "exit_code_by_key": codes,
        "hash_by_function_name": hashes,
        "type_check_error_by_key": {},
        "durations_by_key": dict.fromkeys(codes, 0.5),
        "estimated_durations_by_key": dict.fromkeys(codes, 0.5),
    }


def test_verdicts_round_trip_and_unkilled_mutants_are_judged_again(tool, tmp_path):
    run = tmp_path / "run"
    meta = run / "mutants" / "src" / "altarr" / "stores" / "coalesce.py.meta"
    meta.parent.mkdir(parents=True)
    codes = {
        "m.f__mutmut_1": 1,
        "m.f__mutmut_2": 0,
        "m.f__mutmut_3": 33,
        "m.f__mutmut_4": 36,
        "m.f__mutmut_5": None,
    }
    meta.write_text(json.dumps(_meta(codes, {"m.f": "abc"})))
    assert tool.save_state("coalesce", run) == 4  # not checked (None) is no verdict
    kept = json.loads(
        (tool.STATE / "coalesce" / "src" / "altarr" / "stores" / "coalesce.py.json").read_text()
    )
    assert kept == {
        "exit_code_by_key": {
            "m.f__mutmut_1": 1,
            "m.f__mutmut_2": 0,
            "m.f__mutmut_3": 33,
            "m.f__mutmut_4": 36,
        },
        "hash_by_function_name": {"m.f": "abc"},
    }
    fresh = tmp_path / "fresh"
    assert tool.restore_state("coalesce", fresh) == 2  # killed and timed out; survived / no tests again
    restored = json.loads((fresh / "mutants" / "src" / "altarr" / "stores" / "coalesce.py.meta").read_text())
    assert restored["exit_code_by_key"] == {"m.f__mutmut_1": 1, "m.f__mutmut_4": 36}
    assert restored["hash_by_function_name"] == {"m.f": "abc"}
    assert set(restored) == set(_meta({}, {}))  # every key mutmut reads is there


def test_a_module_without_kept_state_restores_nothing(tool, tmp_path):
    assert tool.restore_state("reduce", tmp_path / "fresh") == 0
    assert not (tmp_path / "fresh").exists()


def test_triage_entries_are_judged_by_function_and_diff(tool, tmp_path, monkeypatch):
    monkeypatch.setattr(tool, "TRIAGE", tmp_path / "triage.json")
    assert tool.verdicts() == {}
    diffs = {
        "altarr.stores.coalesce.xǁCoalescePlanǁsplit__mutmut_1": ["- return a", "+ return b"],
        "altarr.stores.coalesce.x_plan_reads__mutmut_2": ["- if x:", "+ if not x:"],
    }
    monkeypatch.setattr(tool, "_mutated_copy", lambda work, name: name)
    monkeypatch.setattr(tool, "mutant_diff", lambda module, name: diffs[name])
    tool.explain(
        tmp_path, "altarr.stores.coalesce.xǁCoalescePlanǁsplit__mutmut_1", "equivalent", "same bytes"
    )
    tool.explain(tmp_path, "altarr.stores.coalesce.x_plan_reads__mutmut_2", "killed by hand", "a slow test")
    again = tool.explain(
        tmp_path, "altarr.stores.coalesce.xǁCoalescePlanǁsplit__mutmut_1", "equivalent", "why"
    )
    assert again["file"] == "src/altarr/stores/coalesce.py"
    assert tool.verdicts() == {
        ("CoalescePlan.split", ("- return a", "+ return b")): "equivalent",
        ("plan_reads", ("- if x:", "+ if not x:")): "killed by hand",
    }
    assert sorted(e["reason"] for e in tool.triage()) == ["a slow test", "why"]  # replaced, not added
    assert json.loads(tool.TRIAGE.read_text())["retired"] == []


def test_the_kept_triage_names_code_that_still_exists():
    """Each kept entry names a function that still holds the lines its mutant changes (else the entry
    was retired by an edit: ``--retire-stale``, then run the module again and triage anew), in a file the tool
    mutates, once; a retired entry no longer matches the code."""
    import glob

    root = _TOOL.parents[1]
    kept = json.loads((root / "tools" / "mutation-state" / "triage.json").read_text())
    spec = importlib.util.spec_from_file_location("mutation_tool_kept", _TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mutated = {
        Path(p).relative_to(root).as_posix()
        for files, _ in mod.MODULES.values()
        for pattern in files
        for p in glob.glob(str(root / pattern))
    }
    functions = {f: mod._functions(root / f) for f in mutated}
    entries = kept["entries"]
    assert len(entries) + len(kept["retired"]) > 700  # the kept state is there (edits move entries, not drop)
    stale = [(e["file"], e["function"], e["diff"]) for e in entries if not mod.holds(e, functions)]
    assert not stale, (
        "triage entries whose code changed: `python tools/mutation.py --retire-stale` moves them to "
        f"retired (run the module again and triage its survivors anew): {stale}"
    )
    assert {e["verdict"] for e in entries} <= {"equivalent", "killed by hand"}
    assert all(e["reason"].strip() and e["diff"] for e in entries)
    keys = [(e["file"], e["function"], tuple(e["diff"])) for e in entries]
    assert len(keys) == len(set(keys))
    revived = [e["was"] for e in kept["retired"] if e.get("diff") and mod.holds(e, functions)]
    assert not revived, f"retired entries that match the code again: move them back to entries: {revived}"


def test_stale_entries_are_retired_with_their_reasons(tool, tmp_path, monkeypatch):
    monkeypatch.setattr(tool, "TRIAGE", tmp_path / "triage.json")
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    (tmp_path / "m.py").write_text("def f(x):\n    return x + 1\n")
    live = {"file": "m.py", "function": "f", "diff": ["- return x + 1", "+ return x - 1"], "reason": "a"}
    gone = {"file": "m.py", "function": "f", "diff": ["- return x * 2", "+ return x / 2"], "reason": "b"}
    elsewhere = {"file": "m.py", "function": "g", "diff": ["- return x + 1", "+ return 0"], "reason": "c"}
    tool.TRIAGE.write_text(json.dumps({"entries": [live, gone, elsewhere], "retired": []}))
    assert tool.retire_stale() == 2
    kept = json.loads(tool.TRIAGE.read_text())
    assert kept["entries"] == [live]
    assert sorted(e["reason"] for e in kept["retired"]) == ["b", "c"]
