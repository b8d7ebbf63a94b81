"""``referee score --markdown`` names the images of the cases it lists, as ``referee run``'s summary does: from
``--cases``, from the cases file the run's manifest names (only while unchanged), or from rows that carry their
case's fields, whose image parts are checked as a cases file's (never a path outside the folder, never a
truncated or oversized image)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from tests.support.cli import run_cli
from tests.support.images import SVG_WITH_SCRIPT, part, png


def _suite_run(tmp_path: Path) -> Path:
    (tmp_path / "chart.png").write_bytes(png(7, 3))
    cases = [{"id": "low", "input": {"type": "image", "path": "chart.png"}, "output": "wrong", "reference": "x"},
             {"id": "remote", "input": {"type": "image", "url": "https://example.com/a(1).png"}, "output": "no",
              "reference": "ok"},
             {"id": "plain", "input": "text", "output": "no", "reference": "ok"}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "suite.yaml").write_text("name: imgs\ncases: cases.jsonl\nevaluators:\n  - equals: {}\n")
    out = tmp_path / "r.jsonl"
    cli(["run", str(tmp_path / "suite.yaml"), "--out", str(out)])
    return out


def _lines(md: Path) -> dict[str, str]:
    """Each case line of the summary's tables, by case id."""
    return {line.split("|")[1].strip(): line for line in md.read_text().splitlines()
            if line.startswith("| ") and line.count("|") >= 6}


def test_score_names_the_images_of_the_cases_from_the_runs_manifest(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    results = _suite_run(tmp_path)
    md = tmp_path / "score.md"
    code, _, err = run_cli(["score", str(results), "--markdown", str(md)], capsys)
    assert code == 0, err
    text = md.read_text()
    assert "| case | category | score | rationale | images |" in text
    lines = _lines(md)
    assert "chart.png (png 7x3, sha256 " in lines["low"]
    assert "[a(1).png](https://example.com/a%281%29.png)" in lines["remote"].replace("\\", "")
    assert lines["plain"].rstrip().endswith("|  |")  # a case without images has an empty cell
    assert "data:image" not in text and "![" not in text  # never embedded


def test_a_changed_cases_file_is_not_trusted_but_cases_names_it(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    results = _suite_run(tmp_path)
    # After the run, the cases file is edited: the manifest's hash no longer matches, so its images might be
    # another case's; the summary names none and says why.
    cases = tmp_path / "cases.jsonl"
    cases.write_text(cases.read_text() + json.dumps({"id": "new", "output": "x"}) + "\n")
    md = tmp_path / "score.md"
    code, _, err = run_cli(["score", str(results), "--markdown", str(md)], capsys)
    assert code == 0
    assert "changed since the run" in err and "--cases" in err
    assert "images |" not in md.read_text() and "chart.png" not in md.read_text()
    # --cases names the file to read: the user vouches for it.
    code, _, err = run_cli(["score", str(results), "--markdown", str(md), "--cases", str(cases)], capsys)
    assert code == 0 and "changed since the run" not in err
    assert "chart.png (png 7x3, sha256 " in _lines(md)["low"]


def test_an_image_file_changed_since_the_run_is_not_named_as_if_judged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = _suite_run(tmp_path)
    (tmp_path / "chart.png").write_bytes(png(7, 3, pixel=(0, 0, (0, 0, 0))))  # the cases file is unchanged
    md = tmp_path / "score.md"
    code, _, err = run_cli(["score", str(results), "--markdown", str(md)], capsys)
    assert code == 0 and "the images beside" in err and "changed since the run" in err
    assert "chart.png" not in md.read_text()


def test_cases_given_without_a_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = _suite_run(tmp_path)
    (tmp_path / "r.manifest.json").unlink()
    md = tmp_path / "score.md"
    run_cli(["score", str(results), "--markdown", str(md)], capsys)
    assert "chart.png" not in md.read_text()  # nothing says where the cases are
    code, _, err = run_cli(["score", str(results), "--markdown", str(md), "--cases",
                            str(tmp_path / "cases.jsonl")], capsys)
    assert code == 0, err
    assert "chart.png (png 7x3, sha256 " in _lines(md)["low"]


def test_seed_rows_that_carry_their_images_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "shot.png").write_bytes(png(5, 2))
    rows = [
        {"id": "path", "score": 0.1, "input": {"type": "image", "path": "shot.png"}, "output": "x"},
        {"id": "inline", "score": 0.2, "output": [{"type": "text", "text": "see"}, part(png(2, 2), name="fig")]},
        {"id": "remote", "score": 0.3, "contexts": ["a", {"type": "image", "url": "https://example.com/t.png"}]},
        {"id": "fine", "score": 1.0, "output": part(png(3, 3))},
    ]
    results = tmp_path / "seed.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    md = tmp_path / "score.md"
    code, _, err = run_cli(["score", str(results), "--markdown", str(md)], capsys)
    assert code == 0, err
    lines = _lines(md)
    assert "shot.png (png 5x2, sha256 " in lines["path"]
    assert "fig (png 2x2, sha256 " in lines["inline"]
    assert "[t.png](https://example.com/t.png)" in lines["remote"].replace("\\", "")
    assert "fine" not in lines  # the summary lists the lowest cases only
    assert "data:image" not in md.read_text() and "![" not in md.read_text()


@pytest.mark.parametrize(("bad", "why"), [
    ({"type": "image", "path": "../../etc/passwd"}, "image refused: path '../../etc/passwd' is outside"),
    (part(png()[:-20]), "a truncated PNG"),
    (part(SVG_WITH_SCRIPT, media_type="image/png"), "an SVG image is refused"),
    (part(png(), media_type="image/gif"), "declared as image/gif but its bytes are image/png"),
    ({"type": "image", "url": "file:///etc/passwd"}, "must be an http(s) URL"),
])
def test_a_bad_image_part_in_a_row_is_refused_naming_file_line_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: dict[str, object], why: str) -> None:
    rows = [{"id": "ok", "score": 0.9, "output": "fine"}, {"id": "bad", "score": 0.1, "output": bad}]
    results = tmp_path / "seed.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    md = tmp_path / "score.md"
    code, _, err = run_cli(["score", str(results), "--markdown", str(md)], capsys)
    assert code == 0  # the summary is still written; only the image is left out
    assert f"{results}:2: field 'output': case 'bad': " in err and why in err, err
    text = md.read_text()
    assert "| bad |" in text and "images |" not in text
    assert "root:" not in text and "file:" not in text and "<svg" not in text


def test_an_oversized_image_in_a_row_is_refused_before_it_is_decoded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_MAX_IMAGE_BYTES", "1000")
    big = tmp_path / "big.png"
    big.write_bytes(png(64, 64, pixel=(1, 1, (0, 0, 0))) + b"\0" * 5000)
    results = tmp_path / "seed.jsonl"
    results.write_text(json.dumps({"id": "big", "score": 0.0, "output": {"type": "image", "path": "big.png"}}) + "\n")
    md = tmp_path / "score.md"
    code, _, err = run_cli(["score", str(results), "--markdown", str(md)], capsys)
    assert code == 0
    assert "over the 1,000-byte limit of one image" in err
    assert "sha256" not in md.read_text()


def test_the_regressions_against_a_baseline_name_their_images(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    img = {"type": "image", "url": "https://example.com/shot.png"}
    base = tmp_path / "base.jsonl"
    base.write_text("".join(json.dumps({"id": f"c{i}", "score": 1.0, "input": img}) + "\n" for i in range(3)))
    cand = tmp_path / "cand.jsonl"
    cand.write_text("".join(json.dumps({"id": f"c{i}", "score": 0.0 if i == 0 else 1.0, "input": img}) + "\n"
                            for i in range(3)))
    md = tmp_path / "score.md"
    run_cli(["score", str(cand), "--baseline", str(base), "--markdown", str(md)], capsys)
    text = md.read_text()
    regressions = text.split("**Regressions (1)**", 1)[1].split("\n\n", 2)[1]
    assert "| c0 |" in regressions and "[shot.png](https://example.com/shot.png)" in regressions.replace("\\", "")


def test_a_missing_cases_file_is_a_usage_error_and_an_unused_one_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    results = _suite_run(tmp_path)
    code, _, err = run_cli(["score", str(results), "--markdown", str(tmp_path / "s.md"), "--cases",
                            str(tmp_path / "nope.jsonl")], capsys)
    assert code == 2 and "nope.jsonl" in err and "not found" in err
    code, _, err = run_cli(["score", str(results), "--cases", str(tmp_path / "cases.jsonl")], capsys)
    assert code == 0 and "no Markdown is written" in err
