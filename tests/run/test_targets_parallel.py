"""A suite's targets run side by side, each within its own concurrency. Asserted by counting requests in flight
at a local HTTP service (never by wall time): the service holds every request until both targets are at their
own limits at the same moment, which only happens if the targets run concurrently."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from referee.cli import cli
from referee.results._io import read_results
from tests.support.targets import Service

LIMITS = {"a": 2, "b": 3}
N_CASES = 12


class Recorder(Service):
    """Counts requests in flight per path (target). Until both targets are at their limits at once (or
    ``hold_s`` passes, which a sequential run would hit) every request waits; then each answers at once."""

    def __init__(self, hold_s: float = 30.0) -> None:
        self.hold_s = hold_s
        self.in_flight = {k: 0 for k in LIMITS}
        self.max_in_flight = {k: 0 for k in LIMITS}
        self.seen = {k: 0 for k in LIMITS}
        self.both_at_limit = False
        self.overlap_seen = False  # requests of both targets in flight at one moment
        self._release = asyncio.Event()  # binds to the service's loop on first use
        super().__init__(handler=lambda body: (500, "unused: _handle answers"))

    async def _handle(self, request: web.Request) -> web.Response:
        key = request.path.strip("/")
        body = await request.json()
        self.in_flight[key] += 1
        self.seen[key] += 1
        self.max_in_flight[key] = max(self.max_in_flight[key], self.in_flight[key])
        if all(self.in_flight[k] > 0 for k in LIMITS):
            self.overlap_seen = True
        if all(self.in_flight[k] >= LIMITS[k] for k in LIMITS):
            self.both_at_limit = True
            self._release.set()
        try:
            try:
                await asyncio.wait_for(self._release.wait(), self.hold_s)
            except TimeoutError:
                self._release.set()  # a sequential run: let it finish (the assertions then fail)
            return web.json_response({"text": f"{key}: {body['q']}"})
        finally:
            self.in_flight[key] -= 1


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    r = Recorder()
    r.start()
    yield r
    r.stop()


def _suite(tmp_path: Path, port: int) -> Path:
    with open(tmp_path / "cases.jsonl", "w", encoding="utf-8") as f:
        for i in range(N_CASES):
            f.write(json.dumps({"id": f"c{i:02d}", "input": f"question {i}"}) + "\n")
    targets = "".join(
        f"  - id: {k}\n    concurrency: {n}\n"
        f"    http: {{url: 'http://127.0.0.1:{port}/{k}', body: {{q: '{{input}}'}}, output: text}}\n"
        for k, n in LIMITS.items())
    p = tmp_path / "suite.yaml"
    p.write_text(f"cases: cases.jsonl\ntargets:\n{targets}evaluators:\n  - contains: {{value: question}}\n",
                 encoding="utf-8")
    return p


def test_targets_run_side_by_side_each_within_its_own_concurrency(tmp_path: Path, recorder: Recorder) -> None:
    suite = _suite(tmp_path, recorder.port)
    out = tmp_path / "out"
    # --concurrency 16: the run would keep more in flight than either target allows; only the targets' own
    # limits hold them at 2 and 3.
    res = cli(["run", str(suite), "--out", str(out), "--concurrency", "16"])
    assert res == 0
    assert recorder.overlap_seen and recorder.both_at_limit  # both targets in flight at once, each at its limit
    assert recorder.max_in_flight == LIMITS  # and never beyond it
    assert recorder.seen == {"a": N_CASES, "b": N_CASES}
    for k in LIMITS:  # one results file per target, only its own rows
        rows = read_results(out / f"{k}.jsonl").rows
        assert sorted(r.id for r in rows) == [f"c{i:02d}" for i in range(N_CASES)]
        assert {r.target.id for r in rows if r.target} == {k} and all(r.status == "scored" and r.passed for r in rows)
        assert {json.loads(line)["output"] for line in (out / f"{k}.outputs.jsonl").read_text().splitlines()} == {
            f"{k}: question {i}" for i in range(N_CASES)}
    # An unchanged rerun generates nothing (resume across parallel targets).
    before = dict(recorder.seen)
    assert cli(["run", str(suite), "--out", str(out)]) == 0
    assert recorder.seen == before


def test_one_target_at_a_time_when_asked(tmp_path: Path) -> None:
    """``parallel_targets=1`` is the old sequential behaviour: the service never sees both targets at once."""
    from referee.run._targets import build_targets, run_suite_targets
    from referee.suites import load_suite

    rec = Recorder(hold_s=0.05)
    rec.start()
    try:
        suite = load_suite(str(_suite(tmp_path, rec.port)))
        targets = build_targets(suite.targets, suite.base_dir)
        outcomes = run_suite_targets(suite, targets, tmp_path / "out", bind=lambda s: (s, None), concurrency=4,
                                     command=["test"], parallel_targets=1)
    finally:
        rec.stop()
    assert [o.target.id for o in outcomes] == ["a", "b"]
    assert not rec.overlap_seen and rec.seen == {"a": N_CASES, "b": N_CASES}


def test_dry_run_estimates_generation_tokens_and_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The target side of ``--dry-run``: tokens from the filled prompt, the output bound from max_tokens, priced by
    the target's own prices, else the public database; nothing without a price gets an invented cost."""
    (tmp_path / "v1.md").write_text("Answer: {input}", encoding="utf-8")  # 8 characters + the input
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "x" * 392}) + "\n"
                                                  for i in range(10)), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text("""cases: cases.jsonl
targets:
  - {id: db, provider: anthropic, model: claude-3-haiku-20240307, prompt: v1.md, max_tokens: 100}
  - {id: own, provider: openai, model: m, template: "{input}", input_price_per_mtok: 1000, output_price_per_mtok: 2000,
     max_tokens: 10, system: "0123"}
  - {id: local, provider: ollama, model: llama3.1, template: "{input}"}
  - {id: app, python: "nowhere:fn"}
evaluators:
  - contains: {value: x}
""", encoding="utf-8")
    assert cli(["run", str(suite), "--dry-run"]) == 0
    out = capsys.readouterr().out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ")}
    assert "generation estimate (no call was made)" in out
    # 10 cases x 400 characters = 1,000 tokens in; 10 x 100 out; $0.25 / $1.25 per million (genai-prices)
    assert "10 call(s), estimated input ~1,000 tokens" in lines["db"] and "at most 1,000 tokens" in lines["db"]
    assert "$0.25 / $1.25 per million" in lines["db"] and "genai-prices" in lines["db"]
    db_cost = float(lines["db"].split("estimated cost at most $")[1].split()[0])
    assert db_cost == pytest.approx(1000 * 0.25e-6 + 1000 * 1.25e-6, abs=1e-4)
    # the target's own prices: (392 + 4 system characters) x 10 / 4 = 990 tokens in, 100 out
    assert "~990 tokens" in lines["own"] and "the target's prices" in lines["own"]
    assert float(lines["own"].split("estimated cost at most $")[1].split()[0]) == pytest.approx(
        990 * 1e-3 + 100 * 2e-3, abs=1e-4)
    assert "cost unknown" in lines["local"] and "$" not in lines["local"]
    assert "tokens and cost unknown" in lines["app"]
    total = float(out.split("estimated generation cost at most $")[1].split()[0])
    assert total == pytest.approx(db_cost + 1.19, abs=2e-4) and "2 target(s) without a price" in out
    # --batch: the database's batch rate
    assert cli(["run", str(suite), "--dry-run", "--batch"]) == 0
    assert "$0.125 / $0.625 per million" in capsys.readouterr().out
