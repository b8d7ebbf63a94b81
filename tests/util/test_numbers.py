"""Numbers are checked (nan/inf/negative options, absurd token counts, every call counted)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from referee.cli import cli, referee
from referee.cli._outputs import MAY_BE_NEGATIVE, check_numbers
from referee.errors import UserError
from referee.results import read_results
from referee.results._manifest import RunManifest
from referee.testing import FakeLLMServer, Reply


def _float_options() -> Iterator[tuple[str, click.Command, click.Parameter]]:
    ctx = click.Context(referee)

    def walk(cmd: click.Command, name: str) -> Iterator[tuple[str, click.Command, click.Parameter]]:
        if isinstance(cmd, click.Group):
            for sub in cmd.list_commands(ctx):
                child = cmd.get_command(ctx, sub)
                assert child is not None
                yield from walk(child, f"{name} {sub}".strip())
            return
        for p in cmd.params:
            if isinstance(p.type, click.types.FloatParamType):
                yield name, cmd, p

    yield from walk(referee, "")


OPTIONS = list(_float_options())


def test_every_float_option_of_every_command_refuses_nan_inf_and_negatives() -> None:
    assert len(OPTIONS) > 30  # thresholds, gates, prices, temperatures, timeouts of every command
    for _name, cmd, p in OPTIONS:
        assert p.name is not None
        for bad in (math.nan, math.inf, -math.inf):
            with pytest.raises(UserError, match="not a finite number"):
                check_numbers(cmd, {p.name: bad})
        if p.name not in MAY_BE_NEGATIVE:
            with pytest.raises(UserError, match="must not be negative"):
                check_numbers(cmd, {p.name: -0.5})
        check_numbers(cmd, {p.name: 0.5})  # an ordinary value passes


@pytest.fixture
def results(tmp_path: Path) -> Path:
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps({"id": f"c{i}", "status": "scored", "score": 0.1}) + "\n" for i in range(5)))
    return p


@pytest.mark.parametrize("argv", [["--fail-under", "nan"], ["--threshold", "nan"], ["--fail-under", "inf"],
                                  ["--fail-if-mean-cost-above", "nan"], ["--fail-if-unscored-above", "nan"]])
def test_score_gates_refuse_nan(argv: list[str], results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["score", str(results), *argv]) == 2  # --fail-under nan passed every gate (exit 0)
    err = capsys.readouterr().err
    assert "finite" in err or "not in the range" in err


def test_a_judge_temperature_or_price_that_is_not_a_number_is_refused(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.jsonl").write_text('{"id": "a", "output": "x"}\n')
    (tmp_path / "t.md").write_text("{output}")
    base = ["judge", str(tmp_path / "c.jsonl"), "-t", str(tmp_path / "t.md"), "-o", str(tmp_path / "r.jsonl"),
            "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"]
    for extra in (["--temperature", "-1"], ["--input-price-per-mtok", "-3"], ["--output-price-per-mtok", "nan"]):
        assert cli([*base, *extra]) == 2
    assert not (tmp_path / "r.jsonl").exists()
    capsys.readouterr()


@pytest.mark.parametrize("entry", ["python: {timeout_s: .nan}", "python: {timeout_s: .inf}",
                                   "python: {timeout_s: -1}", "contains: {value: x}\n    threshold: .nan"])
def test_suite_numbers_are_checked(entry: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.jsonl").write_text('{"id": "a", "output": "x"}\n')
    (tmp_path / "s.yaml").write_text(f"name: s\ncases: c.jsonl\nevaluators:\n  - {entry}\n")
    assert cli(["validate", str(tmp_path / "s.yaml")]) == 2
    assert "s.yaml" in capsys.readouterr().err


@pytest.mark.parametrize("tokens", [-5, 10**12])
def test_absurd_token_counts_make_the_row_an_error_not_a_cost(tokens: int, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.jsonl").write_text('{"id": "a", "output": "x"}\n{"id": "b", "output": "y"}\n')
    (tmp_path / "t.md").write_text("{output}")
    good = '{"overall_score": 0.5}'
    with FakeLLMServer(responder=lambda req: good) as srv:
        srv.script(Reply(text=good, input_tokens=tokens))
        os.environ["OPENAI_API_KEY"] = "sk-test-not-a-real-key"
        try:
            cli(["judge", str(tmp_path / "c.jsonl"), "-t", str(tmp_path / "t.md"), "-o", str(tmp_path / "r.jsonl"),
                 "--provider", "openai", "--base-url", srv.openai_base_url, "--concurrency", "1",
                 "--input-price-per-mtok", "2.5", "--output-price-per-mtok", "10", "--max-retries", "0"])
        finally:
            del os.environ["OPENAI_API_KEY"]
    capsys.readouterr()
    rows = {r.id: r for r in read_results(tmp_path / "r.jsonl").rows}
    assert rows["a"].status == "error" and "tokens" in (rows["a"].error or "") and rows["a"].cost_usd is None
    assert rows["b"].status == "scored" and rows["b"].cost_usd is not None and 0 < rows["b"].cost_usd < 1
    man = RunManifest.read(tmp_path / "r.jsonl")
    assert man is not None and man.totals is not None
    assert man.totals.cost_usd is not None and 0 < man.totals.cost_usd < 1


def test_provider_calls_count_failed_requests_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.jsonl").write_text('{"id": "a", "output": "x"}\n')
    (tmp_path / "t.md").write_text("{output}")
    with FakeLLMServer(responder=lambda req: '{"overall_score": 0.5}') as srv:
        srv.script(Reply(status=500), Reply(status=503))
        os.environ["OPENAI_API_KEY"] = "sk-test-not-a-real-key"
        try:
            cli(["judge", str(tmp_path / "c.jsonl"), "-t", str(tmp_path / "t.md"), "-o", str(tmp_path / "r.jsonl"),
                 "--provider", "openai", "--base-url", srv.openai_base_url, "--max-retries", "3"])
        finally:
            del os.environ["OPENAI_API_KEY"]
        sent = len(srv.requests)
    capsys.readouterr()
    man = RunManifest.read(tmp_path / "r.jsonl")
    assert sent == 3 and man is not None and man.totals is not None and man.totals.provider_calls == sent


def test_rubric_numbers_are_checked(tmp_path: Path) -> None:
    from referee.errors import InputError
    from referee.rubrics._loader import load_rubric

    f = tmp_path / "r.yaml"
    f.write_text("name: r\nfail_below: .nan\ncriteria:\n  - {id: a, weight: 1.0}\n")
    with pytest.raises((InputError, UserError)):
        load_rubric(str(f))
