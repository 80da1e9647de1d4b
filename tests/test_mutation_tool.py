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


def test_documented_rows_are_equivalents_or_kills_by_hand(tool, tmp_path, monkeypatch):
    docs = tmp_path / "development.md"
    docs.write_text(
        "| mutant | why |\n|---|---|\n"
        "| `m.f__mutmut_1` | `strict=` on equal lengths |\n"
        "| `m.f__mutmut_2` | killed by hand: the deselected test fails on it |\n"
        "not a row: `m.f__mutmut_3`\n"
    )
    monkeypatch.setattr(tool, "DOCS", docs)
    assert tool.documented_equivalents() == {"m.f__mutmut_1"}
    assert tool.killed_by_hand() == {"m.f__mutmut_2"}
