"""Prices: the user's flags win; otherwise genai-prices prices the provider's own token counts (cached input and
batch rates included); unknown models and local servers get no cost, never an invented one."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from referee.providers import Completion, FakeProvider, JudgeRequest, Message
from referee.runner import JudgeClient
from referee.runner._prices import Pricer
from referee.testing import FakeLLMServer, Reply
from tests.support.judging import KEY, judge_args, read_rows, run, verdict

# Long-stable list prices (USD per million tokens) of two old models, as genai-prices lists them.
HAIKU3 = "claude-3-haiku-20240307"  # 0.25 in, 1.25 out
MINI = "gpt-4o-mini"  # 0.15 in, 0.075 cached in, 0.60 out


def test_user_prices_win_over_the_database() -> None:
    p = Pricer("anthropic", input_per_mtok=1.0, output_per_mtok=2.0)
    assert p.source == "user"
    assert p.cost(HAIKU3, 1000, 100) == pytest.approx(0.0012)
    assert p.cost(HAIKU3, 1000, 100, batch=True) == pytest.approx(0.0006)  # batch jobs bill half
    assert p.cost(HAIKU3, None, 100) is None  # no invented token counts


def test_database_prices_standard_cached_and_batch() -> None:
    p = Pricer("openai")
    assert p.source is not None and p.source.startswith("genai-prices ")
    assert p.cost(MINI, 1000, 100) == pytest.approx(1000 * 0.15e-6 + 100 * 0.6e-6)
    # 400 of the 1000 input tokens came from the provider's prompt cache, at the cached-input rate.
    assert p.cost(MINI, 1000, 100, cache_read_tokens=400) == pytest.approx(600 * 0.15e-6 + 400 * 0.075e-6
                                                                           + 100 * 0.6e-6)
    assert p.cost(MINI, 1000, 100, batch=True) == pytest.approx((1000 * 0.15e-6 + 100 * 0.6e-6) / 2)
    assert Pricer("anthropic").cost(HAIKU3, 1000, 100) == pytest.approx(1000 * 0.25e-6 + 100 * 1.25e-6)


def test_unknown_model_has_no_cost_and_one_warning(capsys: pytest.CaptureFixture[str],
                                                    caplog: pytest.LogCaptureFixture) -> None:
    p = Pricer("openai")
    with caplog.at_level(logging.WARNING, logger="referee"):
        assert p.cost("my-finetune-xyz", 1000, 100) is None
        assert p.cost("my-finetune-xyz", 1000, 100) is None
    (warning,) = [r for r in caplog.records if "no price for model 'my-finetune-xyz'" in r.getMessage()]
    assert warning.levelno == logging.WARNING and warning.name.startswith("referee.")
    assert "--input-price-per-mtok" in warning.getMessage()
    assert capsys.readouterr().err == ""  # the library logs; printing is the CLI's business (below)
    # The reported model (a dated snapshot) is tried first, then the configured one.
    assert p.cost("gpt-4o-mini-2024-07-18", 10, 10) == p.cost(MINI, 10, 10) is not None
    assert p.cost("snapshot-unknown", 10, 10, fallback_model=MINI) == p.cost(MINI, 10, 10)


def test_the_cli_shows_the_unpriced_model_warning_as_one_stderr_line(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    fake_server.responder = lambda req: Reply(text=verdict(0.8), input_tokens=2000, output_tokens=200)
    args = judge_args(tmp_path, fake_server, provider="anthropic")
    args[args.index("--model") + 1] = "my-finetune-xyz"
    code, _, err = run(args, capsys)
    assert code == 0, err
    (line,) = [ln for ln in err.splitlines() if "no price" in ln]
    assert line.startswith("referee: warning: genai-prices ") and line.endswith(
        "has no price for model 'my-finetune-xyz' at 'anthropic'; cost is not reported (give "
        "--input-price-per-mtok and --output-price-per-mtok)")
    assert [r.get("cost_usd") for r in read_rows(tmp_path / "results.jsonl")] == [None] * 3
    logger = logging.getLogger("referee")  # the CLI left the host's logging as it found it
    assert not logger.handlers and logger.propagate and logger.level == logging.NOTSET


def test_local_servers_have_no_price() -> None:
    from referee.providers import get_provider

    prov = get_provider("ollama", "llama3.1")
    assert prov.price_id() is None and Pricer(prov.price_id()).source is None
    assert JudgeClient(prov).cost(1000, 100) is None


async def test_client_prices_each_completion_from_its_own_counts() -> None:
    client = JudgeClient(FakeProvider([verdict()], model=MINI, input_tokens=1000, output_tokens=100))
    client.pricer.provider_id = "openai"  # FakeProvider has no public price; price it as OpenAI's
    c = await client.complete(JudgeRequest(messages=(Message("user", "x"),)))
    assert c.input_tokens == 1000
    assert client.stats.cost_usd == pytest.approx(1000 * 0.15e-6 + 100 * 0.6e-6)
    assert client.cost_of(Completion(text="", input_tokens=1000, output_tokens=100, model=MINI, batch=True)) \
        == pytest.approx((1000 * 0.15e-6 + 100 * 0.6e-6) / 2)


def test_judge_run_priced_from_the_database_records_source_and_version(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    fake_server.responder = lambda req: Reply(text=verdict(0.8), input_tokens=2000, output_tokens=200)
    args = judge_args(tmp_path, fake_server, provider="anthropic")
    args[args.index("--model") + 1] = HAIKU3
    code, out, err = run(args, capsys)
    assert code == 0, err
    expected = 2000 * 0.25e-6 + 200 * 1.25e-6
    assert [r["cost_usd"] for r in read_rows(tmp_path / "results.jsonl")] == [pytest.approx(expected)] * 3
    m = json.loads((tmp_path / "results.manifest.json").read_text())
    from importlib.metadata import version

    assert m["judge"]["price_source"] == f"genai-prices {version('genai-prices')}"
    assert m["judge"]["input_price_per_mtok"] is None
    assert m["totals"]["cost_usd"] == pytest.approx(3 * expected)


def test_judge_run_with_user_prices_records_user(fake_server: FakeLLMServer, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    fake_server.responder = lambda req: Reply(text=verdict(0.8), input_tokens=2000, output_tokens=200)
    args = judge_args(tmp_path, fake_server, "--input-price-per-mtok", "10", "--output-price-per-mtok", "20",
                      provider="anthropic")
    args[args.index("--model") + 1] = HAIKU3
    assert run(args, capsys)[0] == 0
    assert [r["cost_usd"] for r in read_rows(tmp_path / "results.jsonl")] == [pytest.approx(0.024)] * 3
    m = json.loads((tmp_path / "results.manifest.json").read_text())
    assert m["judge"]["price_source"] == "user"


def test_dry_run_estimates_from_the_database_and_at_the_batch_rate(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from referee.cli import cli

    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "output": "x" * 400}) + "\n"
                                                  for i in range(10)))
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"""cases: cases.jsonl
judge: {{provider: anthropic, model: {HAIKU3}, rubric: "- accuracy: right"}}
evaluators: [llm_judge]
""")
    assert cli(["run", str(suite), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "estimated cost at most $" in out and "$0.25 / $1.25 per million" in out and "genai-prices" in out
    standard = float(out.split("estimated cost at most $")[1].split()[0])
    assert cli(["run", str(suite), "--dry-run", "--batch"]) == 0
    out = capsys.readouterr().out
    assert "$0.125 / $0.625 per million" in out and "(batch rate)" in out
    assert float(out.split("estimated cost at most $")[1].split()[0]) == pytest.approx(standard / 2, abs=1e-4)
    # A local server has no price: the estimate says so rather than invent one.
    assert cli(["run", str(suite), "--dry-run", "--provider", "ollama", "--model", "llama3.1"]) == 0
    assert "cost unknown" in capsys.readouterr().out
