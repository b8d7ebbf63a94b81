"""Judges grading images: ``referee judge`` and ``llm_judge`` with the image where the template names the field,
the rubric judge with image evidence as region descriptions (never a quote checked against nothing), a warning
for an image in a field the prompt does not use, and the response cache keyed on the image's content."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

import referee
from referee.evaluators import _images
from referee.evaluators._evidence import EvidenceChecker, grounded
from referee.testing import FakeLLMServer, Reply
from tests.support.images import part, png
from tests.support.judging import read_rows, run, verdict

TEMPLATE = "Question: {input}\n<answer>{output}</answer>\nReply with JSON."


def _files(tmp: Path, *, pixel: tuple[int, int, tuple[int, int, int]] | None = None,
           extra: dict[str, Any] | None = None) -> Path:
    (tmp / "chart.png").write_bytes(png(4, 4, pixel=pixel))
    (tmp / "judge.md").write_text(TEMPLATE)
    case = {"id": "c1", "input": "Draw a red square", "output": {"type": "image", "path": "chart.png"},
            "reference": "a red square", **(extra or {})}
    (tmp / "cases.jsonl").write_text(json.dumps(case) + "\n")
    return tmp / "cases.jsonl"


def _judge(tmp: Path, srv: FakeLLMServer, capsys: pytest.CaptureFixture[str], *extra: str,
           model: str = "gpt-4o", out: str = "results.jsonl") -> tuple[int, str, str]:
    return run(["judge", str(tmp / "cases.jsonl"), "--template", str(tmp / "judge.md"), "--out",
                str(tmp / out), "--provider", "openai", "--base-url", srv.openai_base_url, "--model",
                model, *extra], capsys)


def test_referee_judge_sends_the_image_in_place_and_scores_it(fake_server: FakeLLMServer, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    _files(tmp_path)
    fake_server.script(Reply(text=verdict(0.75)))
    code, _, err = _judge(tmp_path, fake_server, capsys, "--no-cache")
    assert code == 0, err
    (row,) = read_rows(tmp_path / "results.jsonl")
    assert row["score"] == 0.75 and row.get("status", "scored") == "scored"
    assert row["usage"] == {"input_tokens": 120, "output_tokens": 40, "calls": 1, "images": 1}
    user = fake_server.requests[0].body["messages"][1]["content"]
    assert [p["type"] for p in user] == ["text", "image_url", "text"]
    assert user[0]["text"].endswith("<answer>") and user[2]["text"].startswith("</answer>")
    assert fake_server.requests[0].images[0]["bytes"] == png(4, 4)


def test_one_changed_pixel_is_a_new_call_and_the_same_image_is_cached(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_CACHE_DIR", str(tmp_path / "cache"))
    _files(tmp_path)
    for out in ("one.jsonl", "two.jsonl"):
        assert _judge(tmp_path, fake_server, capsys, out=out)[0] == 0
    assert len(fake_server.requests) == 1  # the second run is answered from the cache
    assert read_rows(tmp_path / "two.jsonl")[0]["usage"] == {"input_tokens": 120, "output_tokens": 40,
                                                             "cached_calls": 1}  # no image sent again
    _files(tmp_path, pixel=(3, 3, (200, 30, 31)))  # one pixel, one unit of red
    assert _judge(tmp_path, fake_server, capsys, out="three.jsonl")[0] == 0
    assert len(fake_server.requests) == 2
    assert fake_server.requests[1].images[0]["bytes"] != fake_server.requests[0].images[0]["bytes"]


def test_a_rerun_into_the_same_file_judges_again_when_the_image_file_beside_the_cases_changed(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases file is the same bytes, the image file beside it is not: a rerun must not resume the old
    score (the run's manifest keeps the images' content hash beside the cases file's)."""
    monkeypatch.setenv("REFEREE_CACHE_DIR", str(tmp_path / "cache"))
    _files(tmp_path)
    assert _judge(tmp_path, fake_server, capsys)[0] == 0
    assert _judge(tmp_path, fake_server, capsys)[0] == 0  # unchanged: resumed, no call
    assert len(fake_server.requests) == 1
    cases_before = (tmp_path / "cases.jsonl").read_bytes()
    _files(tmp_path, pixel=(0, 0, (0, 0, 0)))
    assert (tmp_path / "cases.jsonl").read_bytes() == cases_before
    code, _, err = _judge(tmp_path, fake_server, capsys)
    assert code == 0, err
    assert len(fake_server.requests) == 2  # judged again, with the new image
    assert fake_server.requests[1].images[0]["bytes"] == png(4, 4, pixel=(0, 0, (0, 0, 0)))
    assert len(read_rows(tmp_path / "results.jsonl")) == 1  # one row for the case, the new one


def test_a_judge_that_cannot_see_images_stops_the_run_before_any_call(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _files(tmp_path)
    code, _, err = _judge(tmp_path, fake_server, capsys, "--no-cache", model="gpt-3.5-turbo")
    assert code == 2 and "refused before any call: model 'gpt-3.5-turbo' (openai) takes text only" in err
    assert fake_server.requests == []


def test_llm_judge_in_a_run_grades_an_image_output(fake_server: FakeLLMServer, tmp_path: Path) -> None:
    cases = _files(tmp_path)
    fake_server.script(Reply(text=json.dumps({"correctness": {"score": 1.0, "rationale": "a red square"},
                                              "overall_score": 1.0})))
    judge = referee.Judge("openai", model="gpt-4o", base_url=fake_server.openai_base_url, cache=False)
    result = referee.evaluate(str(cases), ["llm_judge"], judge=judge, progress=False)
    (row,) = result.rows
    assert row.status == "scored" and row.score == 1.0
    content = fake_server.requests[0].body["messages"][1]["content"]
    texts = [p["text"] for p in content if p["type"] == "text"]
    assert texts[0].rstrip().endswith("<answer>") and "</answer>" in texts[1]
    assert len(fake_server.requests[0].images) == 1


def _rubric_reply(evidence: str) -> str:
    crit = {k: {"score": 4, "evidence": [evidence], "rationale": "ok"}
            for k in ("accuracy", "groundedness", "completeness", "coherence", "helpfulness")}
    return json.dumps({"criteria": crit, "summary": "A red square.", "required_actions": []})


def test_the_rubric_judge_grades_an_image_with_region_evidence(fake_server: FakeLLMServer,
                                                               tmp_path: Path) -> None:
    cases = _files(tmp_path)
    judge = referee.Judge("openai", model="gpt-4o", base_url=fake_server.openai_base_url, cache=False)
    fake_server.script(Reply(text=_rubric_reply("image: the whole square, filled red")))
    (row,) = referee.grade_rubric(str(cases), judge=judge).rows
    assert row.status == "scored" and "ungrounded" not in row.flags
    checks = row.details["evidence_checks"]["accuracy"]
    assert checks == [{"quote": "image: the whole square, filled red", "found": True, "source": "output",
                       "match": 0.0, "kind": "region"}]
    assert all(c.grounded is None for c in row.criteria)  # a description is not verified either way
    prompt = fake_server.requests[0].body["messages"][1]["content"]
    assert "write 'image: ' and describe the region" in "".join(p.get("text", "") for p in prompt)
    assert any(p["type"] == "image_url" for p in prompt)


def test_a_text_quote_about_an_image_is_not_found_in_it(fake_server: FakeLLMServer, tmp_path: Path) -> None:
    cases = _files(tmp_path)
    judge = referee.Judge("openai", model="gpt-4o", base_url=fake_server.openai_base_url, cache=False)
    reply = _rubric_reply("The square is red and centred")
    fake_server.script(Reply(text=reply), Reply(text=reply))  # asked again once, then as the rubric says
    (row,) = referee.grade_rubric(str(cases), judge=judge).rows
    assert "ungrounded" in row.flags
    assert row.details["evidence_checks"]["accuracy"][0]["found"] is False


def test_region_evidence_is_only_for_sources_that_hold_an_image() -> None:
    from referee._util._image import from_bytes, marker

    text_only = EvidenceChecker({"output": "plain text"})
    assert text_only.check("image: top left").found is False  # no image: it is a quote, and not in the text
    with_image = EvidenceChecker({"output": "caption " + marker(from_bytes(png()))})
    region = with_image.check("image: top left")
    assert region.kind == "region" and grounded([region]) is None
    assert with_image.check("caption").found and not with_image.check("[[image").found


def test_an_image_in_a_field_the_template_does_not_use_is_named_in_a_warning(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    _images._WARNED.clear()
    _files(tmp_path, extra={"screenshot": part(png(2, 2))})
    with caplog.at_level(logging.WARNING, logger="referee"):
        code, _, err = _judge(tmp_path, fake_server, capsys, "--no-cache")
    assert code == 0
    said = caplog.text + err
    assert "case 'c1': field 'screenshot' holds an image that the template_judge prompt does not use" in said
    assert len(fake_server.requests[0].images) == 1  # the output's image, not the screenshot


def test_a_text_check_on_an_image_output_is_unscored_never_an_invented_verdict(tmp_path: Path) -> None:
    cases = [{"id": "img", "output": part(png()), "reference": "x"},
             {"id": "mixed", "output": [{"type": "text", "text": "see the refund chart"}, part(png())]},
             {"id": "text", "output": "a refund"}]
    result = referee.evaluate(cases, [{"contains": {"value": "refund"}}, {"regex": {"pattern": "iVBOR"}}],
                              progress=False)
    rows = {r.id: r for r in result.rows}
    assert rows["img"].status == "unscored" and rows["img"].score is None
    assert "a text check cannot grade it" in str(rows["img"].check("contains").reason)
    mixed = rows["mixed"]
    assert mixed.check("contains").score == 1.0 and mixed.check("regex").score == 0.0  # base64 is never text
    assert rows["text"].check("contains").score == 1.0


def test_the_trajectory_and_conversation_judges_send_the_images_they_show() -> None:
    from referee.cases import cases_from

    shot = png(5, 5)
    traj = cases_from([{"id": "t", "input": "take a screenshot", "final_output": "done",
                        "trajectory": [{"step": 1, "tool": "screenshot", "args": {}, "result": part(shot)}]}]).cases[0]
    request = referee.judges.Trajectory().request(traj, traj.output)
    assert [i.data for i in request.images] == [shot]
    user = request.parts(request.messages[1])
    assert [type(p).__name__ for p in user] == ["str", "Image", "str"] and "iVBOR" not in "".join(
        p for p in user if isinstance(p, str))  # the step's result is the image, not its base64 as text
    conv = cases_from([{"id": "v", "turns": [{"role": "user", "content": [{"type": "text", "text": "what is it?"},
                                                                         part(png(2, 2))]},
                                             {"role": "assistant", "content": "a red square"}]}]).cases[0]
    assert len(referee.judges.Conversation().request(conv, conv.output).images) == 1


def test_the_conversation_judge_sends_a_turns_image_through_the_local_server(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.testing import schema_responder

    shot = png(6, 2)
    (tmp_path / "shot.png").write_bytes(shot)
    conv = {"id": "v", "turns": [{"role": "user", "content": [{"type": "text", "text": "what is on my screen?"},
                                                               {"type": "image", "path": "shot.png"}]},
                                  {"role": "assistant", "content": "a red bar"}]}
    (tmp_path / "conv.jsonl").write_text(json.dumps(conv) + "\n")
    with FakeLLMServer(responder=schema_responder) as srv:
        code, _, err = run(["conversation", str(tmp_path / "conv.jsonl"), "--out", str(tmp_path / "c.jsonl"),
                            "--provider", "openai", "--base-url", srv.openai_base_url, "--model", "gpt-4o"], capsys)
        assert code == 0, err
        assert [i["bytes"] for r in srv.requests for i in r.images] == [shot]
        content = srv.requests[0].body["messages"][1]["content"]
        assert [p["type"] for p in content].count("image_url") == 1
        assert "iVBOR" not in json.dumps([p for p in content if p["type"] == "text"])  # the image is a part, not text
    (row,) = read_rows(tmp_path / "c.jsonl")
    assert row.get("status", "scored") == "scored" and isinstance(row["score"], float)
