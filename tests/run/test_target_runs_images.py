"""``referee run`` with ``targets:`` and gates: each target's Markdown summary names the images of the cases it
lists (the targets' inputs), as a run without targets does."""

from __future__ import annotations

import json
from pathlib import Path

from referee.cli import cli
from tests.support.images import png

AGENT = "def fixed(value):\n    return 'no idea'\n"


def test_each_targets_markdown_names_the_case_images(tmp_path: Path) -> None:
    (tmp_path / "agent_img.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "screen.png").write_bytes(png(6, 4))
    cases = [{"id": "shot", "input": [{"type": "text", "text": "what is wrong?"},
                                      {"type": "image", "path": "screen.png"}]},
             {"id": "text", "input": "what is wrong?"}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases: cases.jsonl\ntargets:\n  - id: v1\n    python: agent_img:fixed\n"
                     "evaluators:\n  - contains: {value: 'Save'}\ngates:\n  fail_under: 0.9\n", encoding="utf-8")
    md = tmp_path / "summary.md"
    assert cli(["run", str(suite), "--out", str(tmp_path / "out"), "--markdown", str(md)]) == 1
    body = md.read_text(encoding="utf-8")
    assert "#### target `v1`" in body and "| case | category | score | rationale | images |" in body
    line = next(x for x in body.splitlines() if x.startswith("| shot |"))
    assert "screen.png (png 6x4, sha256 " in line
    assert next(x for x in body.splitlines() if x.startswith("| text |")).rstrip().endswith("|  |")
    assert "data:image" not in body
