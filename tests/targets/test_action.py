"""The GitHub Action (action.yml): its shape, and its run step executed for real with bash against referee."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.run.test_target_runs import _suite

ROOT = Path(__file__).resolve().parents[2]


def _action() -> dict[str, Any]:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert isinstance(action, dict)
    return action


def test_action_is_a_composite_that_never_splices_inputs_into_scripts() -> None:
    action = _action()
    assert action["runs"]["using"] == "composite"
    assert {"suite", "out", "targets", "args", "comment", "github-token", "fail-on-gates"} <= set(action["inputs"])
    assert action["inputs"]["suite"]["required"] is True
    for step in action["runs"]["steps"]:
        # A PR can control inputs (a branch name, a title): in a script they would be code, so they go through env.
        for key in ("run", "script"):
            text = step.get(key) or (step.get("with") or {}).get(key) or ""
            assert not re.search(r"\$\{\{\s*(inputs|github\.event)", text), (step.get("name"), key)
    names = [s.get("name") for s in action["runs"]["steps"]]
    assert names[-1] == "Gate" and "Comment on the pull request" in names


def _run_step(tmp_path: Path, env: dict[str, str]) -> tuple[int, dict[str, str], str]:
    step = next(s for s in _action()["runs"]["steps"] if s.get("id") == "run")
    out_file = tmp_path / "github_output"
    out_file.write_text("")
    full = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "GITHUB_OUTPUT": str(out_file), **env}
    full.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=full, capture_output=True, text=True,
                          timeout=120)
    outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines() if "=" in line)
    return done.returncode, outputs, done.stdout + done.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="bash")
def test_the_run_step_gates_and_writes_the_summary(tmp_path: Path) -> None:
    _suite(tmp_path, "agent_action", "gates:\n  baseline: v1\n  fail_on_regression: true\n")
    code, outputs, log = _run_step(tmp_path, {"SUITE": "suite.yaml", "OUT": "results", "TARGETS": "", "ARGS": ""})
    assert code == 0, log  # the step records the exit code; the Gate step fails the job
    assert outputs["exit-code"] == "1" and outputs["summary"] == "results/summary.md"
    assert "#### target `v2` against baseline `v1`" in (tmp_path / "results" / "summary.md").read_text()


@pytest.mark.skipif(sys.platform == "win32", reason="bash")
def test_hostile_inputs_stay_arguments(tmp_path: Path) -> None:
    _suite(tmp_path, "agent_action2")
    code, outputs, log = _run_step(tmp_path, {"SUITE": "suite.yaml", "OUT": "results",
                                              "TARGETS": "v1; touch pwned", "ARGS": ""})
    assert outputs["exit-code"] == "2" and "unknown target id(s) v1; touch pwned" in log
    assert not (tmp_path / "pwned").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="bash")
def test_the_run_step_merges_a_saved_history_tags_the_run_and_gates_against_a_stored_baseline(
        tmp_path: Path) -> None:
    import json

    _suite(tmp_path, "agent_action3")
    main_store, pr_store = tmp_path / "main-cache" / "history.sqlite", tmp_path / "pr" / "history.sqlite"
    main_store.parent.mkdir()
    pr_store.parent.mkdir()
    base = {"SUITE": "suite.yaml", "TARGETS": "", "ARGS": ""}
    code, outputs, log = _run_step(tmp_path, {**base, "OUT": "main-results", "STORE_INPUT": str(main_store),
                                              "TAGS": "ci,main"})
    assert code == 0 and outputs["exit-code"] in ("0", "1"), log
    # The pull request's job: main's saved history merged (a missing file skipped), the run gated against it.
    code, outputs, log = _run_step(tmp_path, {**base, "OUT": "pr-results", "STORE_INPUT": str(pr_store),
                                              "IMPORT_HISTORY": f"{main_store} {tmp_path / 'absent.sqlite'}",
                                              "BASELINE": "last", "TAGS": "ci"})
    assert outputs["exit-code"] in ("0", "1"), log
    assert "baseline: run " in log
    listed = subprocess.run([sys.executable, "-m", "referee", "runs", "list", "--store", str(pr_store), "--json"],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "REFEREE_STORE": str(pr_store)})
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    # One run per target: main's two, merged, and the pull request's two.
    assert sorted(sorted(r["tags"]) for r in runs) == [["ci"], ["ci"], ["ci", "main"], ["ci", "main"]]
