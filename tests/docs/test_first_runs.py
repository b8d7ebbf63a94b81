"""The first run of each feature is one command from its page: the "Try it first" block of every feature page
runs as written with no key in a fresh folder, exits 0, and its last lines say where to look next."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from referee.cli import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["judge", "score", "suites", "targets", "agents", "rag", "pairwise-calibration", "rubrics", "view", "multimodal",
         "scale", "store", "ci", "synth", "monitoring", "panels"]
CASES_ONLY = {"synth", "monitoring"}
"""Pages whose first run writes cases, not results: its last line names the cases file and where to look next (a
report page or the viewer over the run's store) instead of a results viewer."""
NO_FIRST_RUN = {"ARCHITECTURE": "how the code is laid out", "benchmarks": "measured figures",
                "migrating-from-agent-eval": "a table of differences; each command's page has its first run",
                "python": "its first block is the first run: five lines of Python, run as written with no key"}
"""Pages without a "Try it first" command, and why."""
NOT_ONE_COMMAND: dict[str, str] = {}
"""Pages whose first run is more than one command (no example step covers them yet)."""
KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "REFEREE_PROVIDER",
        "REFEREE_MODEL", "REFEREE_BASE_URL")


def first_run(page: str) -> list[str]:
    text = (ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8")
    m = re.search(r"\*\*Try it first\*\*.*?```bash\n(.*?)\n```", text, re.S)
    assert m, f"docs/{page}.md has no 'Try it first' block"
    lines = [x for x in m.group(1).splitlines() if x.strip()]
    assert len(lines) == 1, "one command"
    return shlex.split(lines[0])


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_the_first_run_of_each_feature_is_one_command_with_no_key(page: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for var in KEYS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REFEREE_CACHE_DIR", str(tmp_path / "cache"))
    argv = first_run(page)
    assert argv[0] == "referee"
    assert cli(argv[1:]) == 0
    out = capsys.readouterr().out
    tail = out.strip().splitlines()[-2:]
    if page in CASES_ONLY:
        named = [w.rstrip(";,") for w in tail[-1].split() if "/" in w and "://" not in w]
        assert named and all(Path(f).is_file() for f in named), tail
        # ... and where to look next: a report page, or the viewer over the store the run wrote
        assert ".html" in tail[-1] or "referee view --store" in tail[-1], tail
        return
    assert tail[0].startswith("Look at the runs") and tail[1].strip().startswith("referee view "), tail
    shown = shlex.split(tail[1])[2:-1]  # the files it names exist
    assert shown and all(Path(f).exists() for f in shown)


def test_every_page_has_its_first_run_or_says_why_not() -> None:
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")}
    known = set(PAGES) | set(NO_FIRST_RUN) | set(NOT_ONE_COMMAND)
    assert pages == known, sorted(pages ^ known)
    for page in NO_FIRST_RUN:
        assert "**Try it first**" not in (ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8"), page


def test_every_step_named_on_a_page_exists_and_a_bad_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from referee.example import step_names

    for page in PAGES:
        argv = first_run(page)
        assert all(argv[i + 1] in step_names() for i, a in enumerate(argv) if a == "--step"), page
    assert cli(["example", "--step", "nope"]) == 2
    assert "no such step" in capsys.readouterr().err
