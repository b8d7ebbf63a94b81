"""A judge panel on ``--engine ray``: the same rows and totals as a local run (every judge's calls counted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.results._manifest import RunManifest
from referee.testing import rows_without_timings, schema_responder
from tests.run.engines.test_ray import code_cases, ray_cluster, run  # noqa: F401 - the module's cluster fixture
from tests.support.servers import CountingServer

SUITE = """\
name: panel
cases: cases.jsonl
judges: [openai:m, openai:m2, openai:m3]
evaluators:
  - llm_judge: {rubric: "- idiomatic: the code is idiomatic"}
"""


def test_a_panel_on_ray_matches_a_local_run(ray_cluster: None, tmp_path: Path,  # noqa: F811
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code_cases(tmp_path)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    srv = CountingServer(responder=schema_responder)
    with srv:
        assert run(suite, tmp_path / "ray.jsonl", srv.openai_base_url, "--engine", "ray", "--no-cache") == 0
        assert len(srv.arrivals) == 24
        assert run(suite, tmp_path / "local.jsonl", srv.openai_base_url, "--no-cache") == 0
        assert len(srv.arrivals) == 48
    assert rows_without_timings(tmp_path / "ray.jsonl") == rows_without_timings(tmp_path / "local.jsonl")
    row = json.loads((tmp_path / "ray.jsonl").read_text().splitlines()[0])
    assert [m["judge"] for m in row["details"]["panel"]["members"]] == ["openai:m", "openai:m2", "openai:m3"]
    for name in ("ray.jsonl", "local.jsonl"):
        t = RunManifest.read(tmp_path / name).totals  # type: ignore[union-attr]
        assert t is not None and t.provider_calls == 24, name
