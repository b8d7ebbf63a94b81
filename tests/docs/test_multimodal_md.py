"""docs/multimodal.md: its cases example loads (images beside it, checked), its Python example runs against the
local server and sends the image, and the limits it states are the code's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from referee._util import _image
from referee.cases import load_cases
from referee.testing import FakeLLMServer
from tests.docs.pages import blocks
from tests.support.images import png

DOC = Path(__file__).resolve().parents[2] / "docs" / "multimodal.md"
TEXT = DOC.read_text(encoding="utf-8")


def _block(lang: str) -> str:
    """The page's first ``lang`` block, as the doc tests parse it (tests/docs/pages.py)."""
    found = [b.source for b in blocks(DOC) if b.lang == lang]
    assert found, lang
    return found[0]


def _objects(text: str) -> list[dict[str, Any]]:
    dec, pos, out = json.JSONDecoder(), 0, []
    while (pos := len(text) - len(text[pos:].lstrip())) < len(text):
        obj, end = dec.raw_decode(text, pos)
        out.append(obj)
        pos = end
    return out


def _images(root: Path) -> None:
    for rel in ("shots/ticket-7.png", "charts/chart-2.png", "docs/refund-table.png"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(png(8, 6))


def test_the_cases_example_loads_with_its_images_checked(tmp_path: Path) -> None:
    _images(tmp_path)
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(o) + "\n" for o in _objects(_block("json"))))
    loaded = load_cases(cases).cases
    assert [c.id for c in loaded] == ["ticket-7", "chart-2"]
    assert loaded[0].input[1]["media_type"] == "image/png" and loaded[1].output["width"] == 8
    assert loaded[1].get("contexts")[0]["name"] == "docs/refund-table.png"


def test_the_python_example_sends_the_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _images(tmp_path)
    monkeypatch.chdir(tmp_path)
    with FakeLLMServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        ns: dict[str, Any] = {}
        exec(compile(_block("python"), "docs/multimodal.md", "exec"), ns)  # noqa: S102 - our own docs
        assert srv.requests and srv.requests[0].images[0]["bytes"] == png(8, 6)
    assert ns["result"].rows[0].usage.images == 1


def test_the_limits_the_page_states_are_the_codes() -> None:
    assert f"{_image.DEFAULT_MAX_IMAGE_BYTES:,}-byte limit" in TEXT and "(20 MiB;" in TEXT
    assert _image.DEFAULT_MAX_IMAGE_BYTES == 20 * 1024 * 1024 and _image.DEFAULT_MAX_IMAGES == 20
    assert "more than 20 images in one case" in TEXT


def test_the_score_markdown_example_is_what_score_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's two ``referee score`` lines, run on a run of its cases example, write the images column the
    page shows (its shape: the case, then name, format, size and hash of the image)."""
    from referee.cli import cli

    _images(tmp_path)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(o) + "\n" for o in _objects(_block("json"))))
    (tmp_path / "suite.yaml").write_text("cases: cases.jsonl\nevaluators:\n  - contains: {value: Save}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert cli(["run", "suite.yaml", "--out", "results.jsonl"]) == 0
    shown = _block("markdown").splitlines()
    assert shown[0] == "| case | category | score | rationale | images |"
    want = re.sub(r"1280x800, sha256 \w+", "8x6, sha256 ", shown[2].rsplit("|", 2)[1].strip())
    for line in _block("bash").splitlines()[1:]:  # the two score lines, after the run
        args = line.split("#")[0].split()
        assert args[:2] == ["referee", "score"]
        assert cli(args[1:]) == 0
        md = (tmp_path / "comment.md").read_text()
        assert shown[0] in md
        row = next(x for x in md.splitlines() if x.startswith("| ticket-7 |"))
        assert want.split(" sha256")[0] in row and "sha256 " in row
