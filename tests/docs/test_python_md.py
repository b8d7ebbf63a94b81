"""docs/python.md as a notebook user runs it: every Python block, in page order, is a cell of one real Jupyter
notebook (nbclient and ipykernel) with no API key in the environment. No cell may fail, and what the cells print
is what the page says they do."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat", reason="needs nbformat (scripts/test installs it)")
nbclient = pytest.importorskip("nbclient", reason="needs nbclient (scripts/test installs it)")
pytest.importorskip("ipykernel", reason="needs ipykernel (scripts/test installs it)")

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "python.md"
KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "REFEREE_PROVIDER",
        "REFEREE_MODEL", "REFEREE_BASE_URL", "OPENAI_BASE_URL")


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_page_has_the_examples_it_promises() -> None:
    text = "\n".join(blocks())
    for needle in ("referee.evaluate(cases", "referee.judges.Rubric(", "referee.judges.Pairwise(",
                   "pd.DataFrame(", ".to_pandas()", "await referee.evaluate_async(", ".save(",
                   "referee.grade("):
        assert needle in text, needle
    assert "asyncio.run(" not in text  # a notebook already runs a loop: its cells await at top level


def _kernel(tmp: Path) -> Path:
    spec = tmp / "jupyter" / "kernels" / "referee-docs"
    spec.mkdir(parents=True)
    env = {"PYTHONPATH": str(ROOT / "src"), "REFEREE_CACHE_DIR": str(tmp / "cache")}
    spec.joinpath("kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "referee docs", "language": "python", "env": env}), encoding="utf-8")
    return tmp / "jupyter"


def _text(outputs: list[Any]) -> str:
    out = []
    for o in outputs:
        if o.get("output_type") == "stream" and o.get("name") == "stdout":
            out.append(o["text"])
        elif o.get("output_type") in ("execute_result", "display_data"):
            out.append(o.get("data", {}).get("text/plain", ""))
    return "".join(out)


def test_every_block_runs_in_a_notebook_without_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas")  # the set-up installs it (scripts/setup): the DataFrame block needs it
    for var in KEYS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(_kernel(tmp_path)))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    code = blocks()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in code])
    client = nbclient.NotebookClient(nb, kernel_name="referee-docs", timeout=180, allow_errors=True,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    failed = [(i + 1, o.get("ename"), o.get("evalue")) for i, cell in enumerate(nb.cells)
              for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not failed, failed
    printed = [_text(cell.get("outputs", [])) for cell in nb.cells]
    # The first example passes meaningfully: Paris passes, Lyon and "I don't know" fail.
    assert printed[0].startswith("33.3% ["), printed[0]
    out = "".join(printed)
    assert "add 1.0 True" in out and "mul 0.428571 False" in out  # (0 + 1 x 0.5 + 1 + 0) / 3.5
    assert "rubric scored" in out and "p1 a " in out and "p2 b " in out  # pairwise winners, no position bias
    assert "q1 scored" in out and "q2 scored" in out
    assert "75.0% [55.0%, 90.0%]\n0.750 [0.550, 0.900]\n<Summary 20 cases scored" in out  # "In a notebook"
    assert (tmp_path / "results.jsonl").is_file() and (tmp_path / "results.manifest.json").is_file()
    assert "is_json" in out and "json_schema" in out  # the DataFrame block's table
