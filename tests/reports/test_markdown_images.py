"""The Markdown summary of ``referee run`` names each listed case's images: a remote one as a link (never
embedded, its target defused), an inline one by name, format, size and hash (a PR comment cannot show data:)."""

from __future__ import annotations

import json
from pathlib import Path

from referee.cases import cases_from
from referee.cli import cli
from referee.reports import image_refs
from tests.support.images import part, png


def test_referee_run_markdown_names_the_images_of_the_lowest_cases(tmp_path: Path) -> None:
    (tmp_path / "chart.png").write_bytes(png(7, 3))
    cases = [{"id": "low", "input": {"type": "image", "path": "chart.png"}, "output": "wrong", "reference": "x"},
             {"id": "remote", "input": {"type": "image", "url": "https://example.com/a(1).png"}, "output": "ok",
              "reference": "ok"}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "suite.yaml").write_text("name: imgs\ncases: cases.jsonl\nevaluators:\n  - equals: {}\n")
    md = tmp_path / "summary.md"
    cli(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "r.jsonl"), "--markdown", str(md)])
    text = md.read_text()
    assert "| case | category | score | rationale | images |" in text
    assert "chart.png (png 7x3, sha256 " in text
    assert "[a(1).png](https://example.com/a%281%29.png)" in text.replace("\\", "")
    assert "data:image" not in text and "![" not in text  # never embedded


def test_only_http_urls_become_links() -> None:
    case = cases_from([{"input": {"type": "image", "url": "https://ex.com/x.png", "name": "](javascript:alert(1))"}}])
    refs = image_refs(case.cases)["1"]
    assert refs == ["[\\]\\(javascript:alert\\(1\\)\\)](https://ex.com/x.png)"]
    assert image_refs(cases_from([{"input": "text only"}]).cases) == {}
    assert image_refs(cases_from([{"output": part(png())}]).cases)["1"][0].startswith("output (png 4x3, sha256 ")
