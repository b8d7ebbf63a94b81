"""Providers register through the ``referee.providers`` entry point group, as evaluators do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import referee
from referee import providers
from referee.cli import cli

PLUGIN = '''
from referee.providers._fake import FakeProvider

REPLY = '{"quality": {"score": 0.9, "rationale": "ok"}, "overall_score": 0.9}'


class EchoProvider(FakeProvider):
    name = "echo"
    default_model = "echo-1"

    def __init__(self, model=None, *, base_url=None, api_key=None, timeout=60.0):
        super().__init__([REPLY], model)


def lazy():
    return EchoProvider
'''


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package with two entry points, installed the way pip would (a dist-info folder on sys.path)."""
    site = tmp_path / "site"
    (site / "referee_echo").mkdir(parents=True)
    (site / "referee_echo" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    dist = site / "referee_echo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: referee-echo\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[referee.providers]\necho = referee_echo:EchoProvider\necho-lazy = referee_echo:lazy\n"
        "broken = referee_echo:missing\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(providers, "_EP_NAMES", None)


def test_an_installed_provider_plugin_is_a_judge_everywhere(installed_plugin: None, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert {"echo", "echo-lazy", "broken"} <= set(providers.provider_names())
    assert providers.provider_class("echo").__name__ == "EchoProvider"
    assert providers.provider_class("echo-lazy").__name__ == "EchoProvider"
    # The command line accepts it...
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "a", "input": "q", "output": "x"}) + "\n", encoding="utf-8")
    tmpl = tmp_path / "t.md"
    tmpl.write_text("Grade {output}. Reply with JSON.", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    code = cli(["judge", str(cases), "--template", str(tmpl), "--provider", "echo", "--out", str(out), "--no-cache"])
    assert code == 0, capsys.readouterr().err
    row = json.loads(out.read_text().splitlines()[0])
    assert row["score"] == 0.9 and row["judge"]["provider"] == "echo" and row["judge"]["model"] == "echo-1"
    # ...and so does the API.
    r = referee.evaluate(["x"], [referee.judges.LLMJudge()], judge="echo-lazy", progress=False)
    assert r.rows[0].score == 0.9


def test_a_broken_plugin_is_a_user_error_naming_it(installed_plugin: None) -> None:
    with pytest.raises(referee.UserError, match="provider plugin 'broken'.*failed to load"):
        providers.provider_class("broken")
    with pytest.raises(referee.UserError, match="installed plugins: .*echo"):
        providers.provider_class("nope")


def test_register_provider_in_process() -> None:
    from referee.providers._fake import FakeProvider

    class Mine(FakeProvider):
        name = "mine"

        def __init__(self, model: str | None = None, **_: object) -> None:
            super().__init__(['{"overall_score": 0.25}'], model)

    providers.register_provider("mine", Mine)
    try:
        r = referee.evaluate(["x"], [referee.judges.LLMJudge()], judge=referee.Judge("mine", cache=False),
                             progress=False)
        assert r.rows[0].score == 0.25
    finally:
        providers._REGISTERED.pop("mine")
