"""A model target whose case input holds an image: the image goes to the system under test in the wire format,
where the prompt template names the field; a text-only model is refused before any call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from referee.cases import cases_from
from referee.targets import generate_outputs
from referee.testing import FakeLLMServer, Reply
from tests.support.images import part, png


def test_a_model_target_sends_the_case_image(fake_server: FakeLLMServer, tmp_path: Path) -> None:
    case = cases_from([{"id": "c1", "input": [{"type": "text", "text": "What is wrong on this screen?"},
                                              part(png(5, 5))]}]).cases[0]
    fake_server.script(Reply(text="The save button is disabled."))
    spec = {"id": "v1", "provider": "openai", "model": "gpt-4o", "base_url": fake_server.openai_base_url,
            "template": "Support ticket:\n{input}"}
    [(out, gen)] = generate_outputs(spec, [case])
    assert gen.error is None and out.output == "The save button is disabled."
    content = fake_server.requests[0].body["messages"][-1]["content"]
    assert [p["type"] for p in content] == ["text", "image_url"]
    assert content[0]["text"] == "Support ticket:\nWhat is wrong on this screen?\n"
    assert fake_server.requests[0].images[0]["bytes"] == png(5, 5)


def test_a_text_only_target_model_is_refused_before_any_call(fake_server: FakeLLMServer) -> None:
    case = cases_from([{"id": "c1", "input": part(png())}]).cases[0]
    spec = {"id": "v1", "provider": "openai", "model": "gpt-3.5-turbo", "base_url": fake_server.openai_base_url,
            "template": "{input}"}
    [(_, gen)] = generate_outputs(spec, [case])  # the case's generation fails, naming why; the run goes on
    assert gen.output is None
    assert "refused before any call: model 'gpt-3.5-turbo' (openai) takes text only" in (gen.error or "")
    assert fake_server.requests == []


def test_a_rerun_reuses_the_output_until_one_pixel_of_the_input_image_changes(
        fake_server: FakeLLMServer, tmp_path: Path, monkeypatch: Any) -> None:
    """A target's stored output is reused for the same case; the case's image is part of what "the same" means,
    so one changed pixel is a new generation call (and the same image again is not)."""
    import json

    from referee.cli import cli

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake_server.responder = lambda req: Reply(text="The save button is disabled.")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {"type": "image", "path": "s.png"}})
                                          + "\n")
    (tmp_path / "suite.yaml").write_text(
        "cases: cases.jsonl\ntargets:\n"
        f"  - {{id: v1, provider: openai, model: gpt-4o, base_url: '{fake_server.openai_base_url}',"
        " template: 'Ticket: {input}'}\nevaluators:\n  - contains: {value: save}\n")

    def run(image: bytes) -> int:
        (tmp_path / "s.png").write_bytes(image)
        before = len(fake_server.requests)
        assert cli(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "out")]) == 0
        return len(fake_server.requests) - before

    assert run(png(4, 4)) == 1
    assert run(png(4, 4)) == 0  # the same image: the run resumes, nothing is generated
    assert run(png(4, 4, pixel=(2, 1, (0, 0, 0)))) == 1  # one pixel changed: generated again
    sent = fake_server.requests[-1].images[0]["bytes"]
    assert sent == png(4, 4, pixel=(2, 1, (0, 0, 0)))
