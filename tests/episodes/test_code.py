"""Which code a scenario may run: a scenario file is data (a downloaded set ships its own modules beside it), so
its ``environment.class`` is imported only when the person running it named that code, and whatever is named must
be a class that declares its tools before anything is called."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from referee.episodes import PythonAgent, agent_from, check_scenarios, load_environment, run_episodes
from referee.errors import InputError, UserError
from referee.testing import FakeLLMServer
from tests.support.cli import run_cli
from tests.support.episodes import SCENARIO, Shop, sides

# A module that leaves a mark when it is imported: what a downloaded scenario set could ship beside its cases.
MARKING_MODULE = """\
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("the scenario set's module ran")

from referee.episodes import tool


class Env:
    def __init__(self):
        self.state = {"n": 0}

    @tool
    def bump(self) -> int:
        self.state["n"] += 1
        return self.state["n"]
"""


def _agent(conversation: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    return "Done."


def _scenario(cid: str, cls: str, **options: Any) -> dict[str, Any]:
    return {**SCENARIO, "id": cid, "environment": {"class": cls, "options": options},
            "expected": {"outputs": ["done"]}}


@pytest.fixture
def downloaded(tmp_path: Path) -> tuple[Path, str]:
    """A scenario folder with its own module beside the cases (one module name per test: sys.modules keeps
    old ones)."""
    mod = "scen_" + re.sub(r"\W", "_", tmp_path.name)
    (tmp_path / f"{mod}.py").write_text(MARKING_MODULE)
    return tmp_path, mod


def _write(folder: Path, *cases: dict[str, Any]) -> Path:
    path = folder / "scenarios.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


@pytest.mark.parametrize("ref, options", [
    ("os:system", {"command": "touch {dir}/PWNED"}),
    ("subprocess:Popen", {"args": ["touch", "{dir}/PWNED"]}),
    ("{mod}:Env", {}),
], ids=["os.system", "subprocess.Popen", "module-beside-the-file"])
def test_a_scenario_file_runs_no_code_nobody_named(ref: str, options: dict[str, Any], downloaded: tuple[Path, str],
                                                   fake_server: FakeLLMServer) -> None:
    folder, mod = downloaded
    opts = json.loads(json.dumps(options).replace("{dir}", str(folder)))
    path = _write(folder, _scenario("ok", "tests.support.episodes:Shop"), _scenario("evil", ref.format(mod=mod), **opts))
    _, sim = sides(fake_server)
    with pytest.raises(InputError) as err:
        run_episodes(path, PythonAgent(_agent), sim, environments=["tests.support.episodes"], close=False)
    assert err.value.file == str(path) and err.value.line == 2 and err.value.field == "environment.class"
    assert "cannot choose code to run" in str(err.value) and "environments=" in str(err.value)
    assert not (folder / "PWNED").exists() and not (folder / "IMPORTED").exists()
    assert mod not in sys.modules
    assert fake_server.requests == []  # refused before anything was paid for
    # The scenario set's folder is not left on the import path, where it would shadow a module imported later
    # (an optional dependency that is not installed, say): a named module is found there only while imported.
    assert str(folder) not in sys.path


@pytest.mark.parametrize("ref, why", [
    ("os:system", "is a function, not a class"),
    ("subprocess:Popen", "declares no tools"),
    ("tests.support.episodes:threading.Thread", "is a module"),
    ("tests.support.episodes:json.JSONDecoder", "is a module"),
    ("tests.support.episodes:openai_messages", "is a function, not a class"),
    ("tests.support.episodes:SCENARIO", "is a dict, not a class"),
])
@pytest.mark.parametrize("trust", [False, True], ids=["named", "trusted"])
def test_named_or_trusted_code_must_be_a_class_that_declares_its_tools(ref: str, why: str, trust: bool,
                                                                      tmp_path: Path,
                                                                      fake_server: FakeLLMServer) -> None:
    path = _write(tmp_path, _scenario("evil", ref, command=f"touch {tmp_path}/PWNED",
                                      args=["touch", f"{tmp_path}/PWNED"]))
    _, sim = sides(fake_server)
    named = [] if trust else [ref.partition(":")[0]]
    with pytest.raises(InputError) as err:
        run_episodes(path, PythonAgent(_agent), sim, environments=named, trust_scenario_code=trust, close=False)
    assert why in str(err.value) and err.value.field == "environment.class" and err.value.line == 1
    assert not (tmp_path / "PWNED").exists() and fake_server.requests == []


def test_a_named_module_beside_the_cases_is_imported_and_played(downloaded: tuple[Path, str],
                                                                fake_server: FakeLLMServer) -> None:
    folder, mod = downloaded
    path = _write(folder, _scenario("mine", f"{mod}:Env"))
    _, sim = sides(fake_server)
    fake_server.responder = lambda req: "Thanks. ###STOP###"
    run = run_episodes(path, PythonAgent(_agent), sim, environments=[mod])
    assert (folder / "IMPORTED").exists() and [r.status for r in run.rows] == ["scored"]
    assert str(folder) not in sys.path
    # The same with every scenario's code trusted, and with the class given as an object (no import).
    assert run_episodes(path, PythonAgent(_agent), sim, trust_scenario_code=True).rows[0].status == "scored"
    env_cls = sys.modules[mod].Env
    assert run_episodes(path, PythonAgent(_agent), sim, environments=[env_cls]).rows[0].status == "scored"


def test_a_module_name_admits_only_that_module_and_a_class_reference_only_that_class(
        tmp_path: Path, fake_server: FakeLLMServer) -> None:
    _, sim = sides(fake_server)
    path = _write(tmp_path, _scenario("x", "tests.support.episodes:Hanging"))
    for named in (["tests.support"], ["tests.support.episodes:Shop"], ["tests"]):
        with pytest.raises(InputError, match="cannot choose code to run"):
            run_episodes(path, PythonAgent(_agent), sim, environments=named, close=False)
    with pytest.raises(UserError, match="module name"):
        run_episodes(path, PythonAgent(_agent), sim, environments=["os; rm -rf /"], close=False)
    with pytest.raises(UserError, match="declares no tools"):
        run_episodes(path, PythonAgent(_agent), sim, environments=[dict], close=False)


def test_an_agent_named_on_the_command_line_is_found_beside_the_cases_and_the_folder_is_not_kept(
        tmp_path: Path) -> None:
    mod = "agent_" + re.sub(r"\W", "_", tmp_path.name)
    (tmp_path / f"{mod}.py").write_text("def reply(conversation, tools):\n    return 'hi'\n")
    agent = agent_from(f"{mod}:reply", tmp_path)
    assert agent.identity()["kind"] == "python" and str(tmp_path) not in sys.path


def test_load_environment_checks_the_class_before_calling_it(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="is a function"):
        load_environment("os:system", {"command": f"touch {tmp_path}/PWNED"})
    with pytest.raises(UserError, match="declares no tools"):
        load_environment("subprocess:Popen", {"args": ["touch", f"{tmp_path}/PWNED"]})
    assert not (tmp_path / "PWNED").exists()
    assert load_environment(Shop, {}).tool_schemas()[0]["name"] == "get_order"


def test_validate_lists_every_code_reference_and_imports_nothing(downloaded: tuple[Path, str],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    folder, mod = downloaded
    path = _write(folder, _scenario("a", f"{mod}:Env"), _scenario("b", "os:system", command="touch x"),
                  _scenario("c", "nowhere_mod:Env"), {"id": "plain", "input": "not a scenario"})
    code, out, err = run_cli(["validate", str(path)], capsys)
    assert code == 0, err
    assert f"{path}:1: case 'a' environment.class: {mod}:Env (beside the file)" in out
    assert f"{path}:2: case 'b' environment.class: os:system (installed)" in out
    assert f"{path}:3: case 'c' environment.class: nowhere_mod:Env (not found)" in out
    assert "4 cases, 3 scenarios" in out and f"--environment {mod}" in out
    assert not (folder / "IMPORTED").exists() and mod not in sys.modules
    # A wrong scenario is a problem with its line and field, and the references are still listed.
    bad = _write(folder, _scenario("a", f"{mod}:Env"), {**_scenario("b", "os:system"), "user": {"instructions": ""}})
    code, out, err = run_cli(["validate", str(bad)], capsys)
    assert code == 2 and f"{bad}:2: field 'user.instructions'" in err and "os:system" in out
    found = check_scenarios(bad)
    assert [r.ref for r in found.references] == [f"{mod}:Env", "os:system"] and len(found.problems) == 1


def test_validate_tells_a_yaml_scenario_file_from_a_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    listed = tmp_path / "scenarios.yaml"
    listed.write_text(yaml.safe_dump([_scenario("a", "os:system")]))
    mapped = tmp_path / "mapped.yml"
    mapped.write_text(yaml.safe_dump({"cases": [_scenario("b", "subprocess:Popen")]}))
    for path, ref in ((listed, "os:system"), (mapped, "subprocess:Popen")):
        code, out, err = run_cli(["validate", str(path)], capsys)
        assert code == 0 and f"environment.class: {ref} (installed)" in out, err


def test_the_command_line_names_the_code(tmp_path: Path, fake_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = _write(tmp_path, _scenario("evil", "os:system", command=f"touch {tmp_path}/PWNED"))
    argv = ["simulate", str(path), "-o", str(tmp_path / "r.jsonl"), "--agent-model", "a",
            "--agent-base-url", fake_server.openai_base_url, "--user-model", "u",
            "--user-base-url", fake_server.openai_base_url]
    code, _, err = run_cli(argv, capsys)
    assert code == 2 and f"{path}:1: field 'environment.class'" in err
    assert "--environment os" in err and "--trust-scenario-code" in err
    code, _, err = run_cli([*argv, "--trust-scenario-code"], capsys)
    assert code == 2 and "is a function, not a class" in err
    assert not (tmp_path / "PWNED").exists() and fake_server.requests == []
