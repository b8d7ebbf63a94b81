"""A notebook as a user writes one: ``referee.evaluate`` on in-memory cases (checks only, no key), then the
result, its summary, a pass rate and the gates displayed. Executed in a real Jupyter kernel (nbclient), its outputs
must be HTML tables and short text, never a raw dataclass repr."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat", reason="needs nbformat (scripts/test installs it)")
nbclient = pytest.importorskip("nbclient", reason="needs nbclient (scripts/test installs it)")
pytest.importorskip("ipykernel", reason="needs ipykernel (scripts/test installs it)")

SRC = Path(__file__).resolve().parents[2] / "src"

CELLS = [
    """import referee
cases = [{"id": f"q{i}", "category": "math" if i % 2 else "<b>text</b>", "input": f"{i}+1?",
          "output": str(i + 1) if i % 4 else "?", "reference": str(i + 1)} for i in range(12)]
result = referee.evaluate(cases, evaluators=["equals", {"regex": {"pattern": "^[0-9]+$"}}],
                          gates={"fail_under": 0.9})""",
    "result",
    "result.summary",
    "result.summary.overall.pass_rate",
    "result.gates",
    # A run longer than a second shows its progress in the cell (an HTML bar), not as stderr lines.
    """import time
def slow(output):
    time.sleep(0.15)
    return True
slow_result = referee.evaluate(cases, evaluators=[slow], concurrency=1)""",
]


def _kernel(tmp: Path) -> Path:
    """A kernel spec of this test's own, for this interpreter and this tree (no user-wide kernel installed)."""
    spec = tmp / "jupyter" / "kernels" / "referee-test"
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "referee test", "language": "python",
        "env": {"PYTHONPATH": str(SRC), "REFEREE_CACHE_DIR": str(tmp / "cache")},
    }), encoding="utf-8")
    return tmp / "jupyter"


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[dict[str, Any]]]:
    monkeypatch.setenv("JUPYTER_PATH", str(_kernel(tmp_path)))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    client = nbclient.NotebookClient(nb, kernel_name="referee-test", timeout=120,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return [[dict(o) for o in cell.get("outputs", [])] for cell in nb.cells]


def test_a_notebook_displays_tables_not_raw_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = _run(tmp_path, monkeypatch)
    assert not [o for cell in outputs for o in cell if o.get("output_type") in ("error", "stream")]
    *outputs, progress = outputs
    results = [cell[0]["data"] for cell in outputs[1:]]
    assert all(len(cell) == 1 for cell in outputs[1:])
    for data in results:
        text = data["text/plain"]
        assert "Interval(estimate=" not in text and "Group(" not in text and "Summary(path=" not in text
        assert len(text) < 300 and "\n" not in text, text
    result_html, summary_html, _, gates_html = (d.get("text/html", "") for d in results)
    for html in (result_html, summary_html, gates_html):
        assert "<table" in html
        assert "<b>" not in html and "<script" not in html
    assert "&lt;b&gt;text&lt;/b&gt;" in summary_html  # the category is shown, as text
    # 9 of 12 cases pass both checks (q0, q4, q8 answer "?"), under the 90% gate: the verdict line comes first.
    assert result_html.index("FAILED: --fail-under: pass rate 75.0%") < result_html.index("<table")
    pass_rate = results[2]["text/plain"]
    assert pass_rate.endswith("]") and "%" in pass_rate and "n/a" not in pass_rate
    assert pass_rate in summary_html and pass_rate in result_html
    bars = [o["data"]["text/html"] for o in progress if o.get("output_type") == "display_data"]
    assert len(bars) == 1 and '<progress value="12" max="12"' in bars[0] and "12/12" in bars[0]
