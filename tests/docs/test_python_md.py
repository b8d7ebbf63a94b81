"""Every Python example in docs/python.md runs, in order, against the fake LLM server (no network)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from referee.testing import FakeLLMServer
from referee.testing._responders import schema_responder

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_page_has_the_examples_it_promises() -> None:
    text = "\n".join(blocks())
    for needle in ("referee.evaluate(outputs", "referee.judges.Rubric(", "referee.judges.Pairwise(",
                   "pd.DataFrame(", ".to_pandas()", "await referee.evaluate_async(", ".save(",
                   "referee.grade("):
        assert needle in text, needle


def test_every_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    with FakeLLMServer(schema_responder) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-example-0123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        ns: dict[str, Any] = {}
        for i, code in enumerate(blocks()):
            try:
                exec(compile(code, f"{DOC.name}[block {i + 1}]", "exec"), ns)  # noqa: S102 - our own docs
            except Exception as exc:
                raise AssertionError(f"docs/python.md block {i + 1} failed: {type(exc).__name__}: {exc}\n{code}") \
                    from exc
        assert srv.requests, "the judge examples called the (fake) server"
    out = capsys.readouterr().out
    # What the examples print is what the page says they do.
    assert (tmp_path / "results.jsonl").is_file() and (tmp_path / "results.manifest.json").is_file()
    assert "add 1.0 True" in out and "mul 0.428571 False" in out  # (0 + 1 x 0.5 + 1 + 0) / 3.5
    table = ns["table"]
    assert list(table["evaluator"].unique()) == ["is_json", "json_schema"]
    assert ns["result"].rows[0].judge.provider == "fake"
    assert ns["pairs"] and "p1 " in out
    assert [(r.evaluator, r.status) for r in ns["graded"].rows] == [("judge", "scored")] * 2
    assert "q1 scored" in out
    assert "75.0% [55.0%, 90.0%]\n0.750 [0.550, 0.900]\n<Summary 20 cases scored" in out  # "In a notebook"
    assert ns["html"].index("FAILED: --fail-under") < ns["html"].index("<table")
