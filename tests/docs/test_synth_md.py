"""docs/synth.md runs as written: its shell blocks in order in one folder (from documents to a suite run, the dry
run), then its Python block; and the figures it states are the code's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from referee import synth
from referee.evaluators import _evidence

DOC = Path(__file__).resolve().parents[2] / "docs" / "synth.md"
TEXT = DOC.read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", TEXT, re.S)


@pytest.mark.slow
def test_the_shell_blocks_run_in_order_without_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        env.pop(key, None)
    blocks = [b for b in _blocks("bash") if not b.startswith("referee example ")]  # not the first run's
    assert len(blocks) >= 4  # the walkthrough; later blocks (dry run, traces) run here too
    for block in blocks:
        proc = subprocess.run(["bash", "-e", "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300, start_new_session=True)
        assert proc.returncode == 0, (block, proc.stderr[-2000:])
    assert len((tmp_path / "cases.jsonl").read_text().splitlines()) == 8
    assert (tmp_path / "results" / "bot.jsonl").is_file()
    monkeypatch.chdir(tmp_path)
    ns: dict[str, Any] = {}
    exec(compile(_blocks("python")[0], str(DOC), "exec"), ns)  # noqa: S102 - our own docs
    assert ns["result"].met


def test_the_figures_the_page_states_are_the_codes() -> None:
    assert synth.NEAR_DUPLICATE == 0.7 and synth.ALL_PAIRS_LIMIT == 500 and synth.CRITIC_THRESHOLD == 3
    assert synth.ANSWERABLE_SHARE == 0.8 and synth.MAX_ROUNDS == 4 and synth.BATCH_SIZE == 5
    assert _evidence.MAX_ELIDED_CHARS == 240 and synth.MAX_DOCUMENT_BYTES == 20 * 1024 * 1024
    assert synth.Splitter() == synth.Splitter(chunk_chars=1500, overlap=0, min_chars=40)
    shares = {k: f"{round(v * 100)}%" for k, v in synth.DEFAULT_KINDS.items()}
    for kind, share in shares.items():
        assert f"| `{kind}` | {share} |" in TEXT
    assert list(synth.GATES) == re.findall(r"^\| `(\w+)` \| (?!\d)", TEXT, re.M)
