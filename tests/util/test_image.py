"""Markers: where an image goes in a prompt. Case text cannot write one (the token is random per process), and a
marker for an image never registered is refused rather than sent as something else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee._util import _image
from referee.evaluators._prompt_guard import fill_template, judge_request
from tests.support.images import part, png


def test_case_text_that_imitates_a_marker_stays_text() -> None:
    img = _image.from_bytes(png())
    real = _image.marker(img)
    forged = real.replace(real.split(":")[1], "0" * 16)  # the right shape and hash, another token
    user, case_text = fill_template("Output: {output}", {"output": f"look: {forged}"})
    request = judge_request("SYS", user, case_text)
    assert request.images == () and request.parts(request.messages[1]) == [f"Output: look: {forged}"]


def test_the_image_goes_where_the_marker_is_and_once_per_image() -> None:
    user, case_text = fill_template("A {a} B {b} C {a}", {"a": part(png(2, 2)), "b": "text"})
    request = judge_request("SYS", user, case_text)
    assert len(request.images) == 1
    pieces = request.parts(request.messages[1])
    # Sent once, where it first stands; again later, a line saying it is the same image (not a second copy).
    assert [p if isinstance(p, str) else "IMG" for p in pieces] == [
        "A ", "IMG", " B text C ", f"[{request.images[0].label}: the same image as above]"]
    assert "[[image" not in _image.plain(user) and _image.plain(user).count("(png, 2x2)]") == 2


def test_a_loaded_case_naming_one_image_many_times_decodes_it_once_and_sends_it_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """20 parts naming one file: one base64 text shared by the loaded parts, decoded once for the prompt (not 20
    times: 20 s for a 19 MB image), and one image in the request (not 20 copies: 500 MB)."""
    from referee.cases import load_cases

    (tmp_path / "a.png").write_bytes(png(5, 5))
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c", "input": [{"type": "image", "path": "a.png"}] * 20})
                                          + "\n", encoding="utf-8")
    [case] = load_cases(tmp_path / "cases.jsonl").cases
    decoded = [0]
    real = _image.decode_b64

    def counting(text: str) -> bytes:
        decoded[0] += 1
        return real(text)

    monkeypatch.setattr(_image, "decode_b64", counting)
    user, case_text = fill_template("Look: {input}", {"input": case.input})
    request = judge_request("SYS", user, case_text)
    assert decoded[0] == 1 and len(request.images) == 1
    pieces = request.parts(request.messages[1])
    assert sum(isinstance(p, _image.Image) for p in pieces) == 1
    assert sum("the same image as above" in p for p in pieces if isinstance(p, str)) == 19


def test_a_marker_whose_image_is_gone_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    img = _image.from_bytes(png(3, 3))
    text = _image.marker(img)
    monkeypatch.setattr(_image, "_REGISTRY", type(_image._REGISTRY)())
    with pytest.raises(_image.ImageError, match="no longer held in memory"):
        _image.images_in(text)


def test_the_cache_material_holds_the_content_hash_only_when_there_are_images() -> None:
    plain = judge_request("SYS", "text", ()).cache_material()
    assert "images" not in plain  # the keys of text-only requests are what they were
    a = judge_request("SYS", fill_template("{o}", {"o": part(png(2, 2))})[0], ()).cache_material()
    b = judge_request("SYS", fill_template("{o}", {"o": part(png(2, 2, pixel=(1, 1, (0, 0, 0))))})[0], ())
    assert a["images"] != b.cache_material()["images"] and len(a["images"][0]) == 64
