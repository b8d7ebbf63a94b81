"""A new judge run sends its first requests before the result models (pydantic) load and before its manifest is
written; both happen while those requests are in flight, and nothing about the run's outcome changes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.judging import TEMPLATE, make_cases, read_rows, verdict, write_cases

_RUN = """
import json, sys
from pathlib import Path
import referee
from referee import FakeProvider, Judge

seen = []

class Recording(FakeProvider):
    async def complete(self, request):
        if not self.requests:  # the run's first request
            seen.append({"pydantic": "pydantic" in sys.modules,
                         "manifest": Path(sys.argv[2]).with_name("r.manifest.json").exists()})
        return await super().complete(request)

provider = Recording([sys.argv[3]], model="judge-model", latency_s=float(sys.argv[4]))
result = referee.grade(sys.argv[1], template=sys.argv[5], out=sys.argv[2], progress=False,
                       judge=Judge(provider, concurrency=4, cache=False), system_model=sys.argv[6])
print(json.dumps({"first": seen[0], "scored": result.manifest.totals.scored,
                  "flags": sorted({f for r in result.rows for f in r.flags})}))
"""


def _run(tmp_path: Path, latency: float, system_model: str) -> dict[str, object]:
    cases = write_cases(tmp_path / "cases.jsonl", make_cases(6))
    out = tmp_path / "r.jsonl"
    done = subprocess.run([sys.executable, "-c", _RUN, str(cases), str(out), verdict(0.9), str(latency), TEMPLATE,
                           system_model], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_first_requests_leave_before_pydantic_and_the_manifest(tmp_path: Path) -> None:
    got = _run(tmp_path, 0.2, "another-model")
    assert got["first"] == {"pydantic": False, "manifest": False}
    assert got["scored"] == 6 and got["flags"] == []
    manifest = json.loads((tmp_path / "r.manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete" and manifest["totals"]["scored"] == 6
    assert manifest["judge"]["model"] == "judge-model" and manifest["system_under_test"] == "another-model"
    assert [r["score"] for r in read_rows(tmp_path / "r.jsonl")] == [0.9] * 6


def test_answers_before_the_manifest_is_built_wait_for_it_and_are_still_flagged(tmp_path: Path) -> None:
    # An instant provider (like a response-cache hit) answers within the run's first turn, before the deferred
    # manifest exists: its rows wait for it, and the self-grading check that reads it still flags them.
    got = _run(tmp_path, 0.0, "judge-model")
    assert got["first"] == {"pydantic": False, "manifest": False}
    assert got["scored"] == 6 and got["flags"] == ["self_grading"]
    rows = read_rows(tmp_path / "r.jsonl")
    assert len(rows) == 6 and all("self_grading" in r["flags"] for r in rows)
    manifest = json.loads((tmp_path / "r.manifest.json").read_text(encoding="utf-8"))
    assert manifest["extra"]["self_grading_rows"] == 6 and manifest["status"] == "complete"


def test_a_run_killed_before_its_manifest_was_written_is_set_aside_and_rerun(tmp_path: Path) -> None:
    # kill -9 after a new run opened its results file but before the deferred manifest was written (and so before
    # any row: rows wait for it) leaves a results file with no manifest. The rerun cannot vouch for it: it is
    # moved aside, never overwritten, and the run starts afresh.
    import referee
    from referee import FakeProvider, Judge

    cases = write_cases(tmp_path / "cases.jsonl", make_cases(3))
    out = tmp_path / "r.jsonl"
    out.write_text("", encoding="utf-8")
    result = referee.grade(cases, template=TEMPLATE, out=out, progress=False,
                           judge=Judge(FakeProvider([verdict(0.7)]), cache=False))
    assert result.resume_note is not None and "r.prev.jsonl" in result.resume_note
    assert (tmp_path / "r.prev.jsonl").exists()
    assert [r["score"] for r in read_rows(out)] == [0.7, 0.7, 0.7]
    assert json.loads((tmp_path / "r.manifest.json").read_text(encoding="utf-8"))["status"] == "complete"
