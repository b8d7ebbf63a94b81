"""The agent-eval scripts' behaviour, side by side: each test pins one thing a migrating CI job relies on (or the
documented flag that gives it back), and the migration page's table is checked against the CLI's flags."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import click
import pytest

from referee.cli import referee
from referee.testing import FakeLLMServer, WireRequest
from tests.support.cli import run_cli

Cap = pytest.CaptureFixture[str]
REPO = Path(__file__).resolve().parents[2]
KEY = "sk-test-0123456789abcdef"

JUDGE_TEMPLATE = """Grade the output.
## Input
{input}
## Output to grade
{output}
Respond with valid JSON only:
{"accuracy": {"score": 0.0, "rationale": "..."}, "overall_score": 0.0}
"""
PAIR_TEMPLATE = "Question: {input}\n<r1>{response_1}</r1>\n<r2>{response_2}</r2>\nReply with JSON.\n"


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def _judge_args(tmp: Path, srv: FakeLLMServer, cases: str, *extra: str, provider: str = "openai") -> list[str]:
    t = tmp / "judge.md"
    t.write_text(JUDGE_TEMPLATE, encoding="utf-8")
    base = srv.openai_base_url if provider == "openai" else srv.url
    return ["judge", cases, "-t", str(t), "-o", str(tmp / "out.jsonl"), "--provider", provider,
            "--base-url", base, "--model", "m", *extra]


def _pair_args(tmp: Path, srv: FakeLLMServer, cases: str, *extra: str, provider: str = "openai") -> list[str]:
    t = tmp / "pair.md"
    t.write_text(PAIR_TEMPLATE, encoding="utf-8")
    base = srv.openai_base_url if provider == "openai" else srv.url
    return ["pairwise", cases, "-t", str(t), "-o", str(tmp / "pairs_out.jsonl"), "--provider", provider,
            "--base-url", base, "--model", "m", *extra]


def _pair_judge(req: WireRequest) -> str:
    # Picks "4" when it is shown first and calls it a tie when shown second: the orders disagree.
    r1 = req.prompt_text.split("<r1>")[1].split("</r1>")[0]
    if r1 == "4":
        return json.dumps({"winner": "response_1", "rationale": "4 is right"})
    if r1 == "five":
        return json.dumps({"winner": "tie", "rationale": "both fine"})
    return json.dumps({"winner": "response_1" if r1 == "Paris" else "response_2", "rationale": "Paris"})


PAIRS = [{"id": "win-tie", "input": "2+2?", "output_a": "4", "output_b": "five", "category": "math"},
         {"id": "clean", "input": "capital of France?", "output_a": "Paris", "output_b": "Lyon"}]


# 1. --category: the default for cases without one, never an override.

def test_judge_category_is_a_default_for_cases_without_one(tmp_path: Path, fake_server: FakeLLMServer,
                                                           capsys: Cap) -> None:
    cases = _jsonl(tmp_path / "c.jsonl", [{"id": "own", "input": "q", "output": "a", "category": "format"},
                                          {"id": "none", "input": "q", "output": "a"}])
    code, _, err = run_cli(_judge_args(tmp_path, fake_server, cases, "--category", "accuracy"), capsys)
    assert code == 0, err
    assert {r["id"]: r["category"] for r in _rows(tmp_path / "out.jsonl")} == {"own": "format", "none": "accuracy"}


def test_pairwise_category_is_a_default_for_cases_without_one(tmp_path: Path, fake_server: FakeLLMServer,
                                                              capsys: Cap) -> None:
    fake_server.responder = _pair_judge
    code, _, err = run_cli(_pair_args(tmp_path, fake_server, _jsonl(tmp_path / "p.jsonl", PAIRS),
                                      "--category", "accuracy"), capsys)
    assert code == 0, err
    got = {r["id"]: r["category"] for r in _rows(tmp_path / "pairs_out.jsonl")}
    assert got == {"win-tie": "math", "clean": "accuracy"}


# 2. Cost per request: --request-format seed sends the seed's exact request; the benchmark prints all three.

def test_request_format_seed_sends_the_seeds_exact_request(tmp_path: Path, fake_server: FakeLLMServer,
                                                           capsys: Cap) -> None:
    case = {"id": "c1", "input": "Where is </output> my order?", "output": "It ships {input} today."}
    cases = _jsonl(tmp_path / "c.jsonl", [case])
    fake_server.responder = lambda req: '{"accuracy": {"score": 0.9, "rationale": "ok"}, "overall_score": 0.9}'
    code, _, err = run_cli(_judge_args(tmp_path, fake_server, cases, "--request-format", "seed", "--no-cache",
                                       provider="anthropic"), capsys)
    assert code == 0, err
    # The seed's rule: plain replacement, values byte for byte (no neutralising), one pass here.
    prompt = JUDGE_TEMPLATE.replace("{input}", case["input"]).replace("{output}", case["output"])
    assert fake_server.requests[-1].body == {"model": "m", "max_tokens": 1024,
                                             "messages": [{"role": "user", "content": prompt}]}
    assert _rows(tmp_path / "out.jsonl")[0]["score"] == 0.9
    # The default keeps the defences: a system prompt, the verdict schema as a forced tool, neutralised values.
    (tmp_path / "out.jsonl").unlink()
    code, _, err = run_cli(_judge_args(tmp_path, fake_server, cases, "--no-cache", provider="anthropic"), capsys)
    assert code == 0, err
    body = fake_server.requests[-1].body
    assert "DATA" in body["system"] and body["tool_choice"]["type"] == "tool"
    assert "&lt;/output&gt;" in body["messages"][0]["content"]


def test_pairwise_request_format_seed_is_one_user_message(tmp_path: Path, fake_server: FakeLLMServer,
                                                          capsys: Cap) -> None:
    fake_server.responder = _pair_judge
    code, _, err = run_cli(_pair_args(tmp_path, fake_server, _jsonl(tmp_path / "p.jsonl", PAIRS[1:]),
                                      "--request-format", "seed", provider="anthropic"), capsys)
    assert code == 0, err
    bodies = [r.body for r in fake_server.requests]
    assert len(bodies) == 2 and all(set(b) == {"model", "max_tokens", "messages"} for b in bodies)
    assert {b["messages"][0]["content"] for b in bodies} == {
        PAIR_TEMPLATE.format_map({"input": "capital of France?", "response_1": x, "response_2": y})
        for x, y in (("Paris", "Lyon"), ("Lyon", "Paris"))}


def test_bench_tokens_prints_tokens_per_request_for_the_three_forms(capsys: Cap) -> None:
    spec = importlib.util.spec_from_file_location("bench_tokens", REPO / "bench" / "bench_tokens.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main([]) == 0
    out = capsys.readouterr().out
    tokens = {m.group(1).strip(): int(m.group(3))
              for m in re.finditer(r"^(seed run_judge\.py|referee \(default\)|referee --request-format seed)"
                                   r"\s+(\d+)\s+(\d+)", out, re.MULTILINE)}
    assert len(tokens) == 3, out
    assert tokens["referee --request-format seed"] == tokens["seed run_judge.py"]
    assert tokens["referee (default)"] > tokens["seed run_judge.py"]


# 3. --regression-min-drop: still-passing cases that dropped sharply are regressions of kind magnitude_drop.

# The seed's worked example (ids, categories, scores): a baseline, a run with a regression hidden in accuracy,
# and a run whose two accuracy/grounding cases still pass but dropped by more than 0.2.
EXAMPLE = [("acc_01", "accuracy", 1.0, 1.0, 0.75), ("acc_02", "accuracy", 0.9, 0.9, 0.9),
           ("acc_03", "accuracy", 1.0, 0.4, 1.0), ("acc_04", "accuracy", 0.8, 0.8, 0.8),
           ("acc_05", "accuracy", 0.9, 0.9, 0.9), ("acc_06", "accuracy", 0.9, 0.3, 0.9),
           ("acc_07", "accuracy", 1.0, 1.0, 1.0), ("acc_08", "accuracy", 0.8, 0.5, 0.8),
           ("fmt_01", "format", 1.0, 1.0, 1.0), ("fmt_02", "format", 0.9, 1.0, 0.9),
           ("fmt_03", "format", 1.0, 1.0, 1.0), ("fmt_04", "format", 0.6, 0.9, 0.6),
           ("fmt_05", "format", 0.9, 0.95, 0.9), ("grnd_01", "grounding", 0.9, 0.9, 0.9),
           ("grnd_02", "grounding", 1.0, 1.0, 0.72), ("grnd_03", "grounding", 0.8, 0.8, 0.8),
           ("grnd_04", "grounding", 0.9, 0.9, 0.9), ("tool_01", "tool_use", 1.0, 1.0, 1.0),
           ("tool_02", "tool_use", 0.9, 0.9, 0.9), ("tool_03", "tool_use", 0.6, 0.6, 0.6)]


def _example(tmp: Path, column: int, name: str) -> str:
    return _jsonl(tmp / name, [{"id": r[0], "category": r[1], "score": r[column]} for r in EXAMPLE])


def test_regression_min_drop_needs_a_baseline(tmp_path: Path, capsys: Cap) -> None:
    code, _, err = run_cli(["score", _example(tmp_path, 2, "b.jsonl"), "--regression-min-drop", "0.2"], capsys)
    assert code == 2 and "--regression-min-drop" in err and "--baseline" in err


def test_regression_min_drop_flags_still_passing_drops(tmp_path: Path, capsys: Cap) -> None:
    base, cur = _example(tmp_path, 2, "b.jsonl"), _example(tmp_path, 4, "drop.jsonl")
    # Every case still passes: --fail-on-regression alone sees nothing, as in the seed.
    code, _, _ = run_cli(["score", cur, "--baseline", base, "--fail-on-regression"], capsys)
    assert code == 0
    out_json = tmp_path / "s.json"
    code, out, err = run_cli(["score", cur, "--baseline", base, "--fail-on-regression", "--regression-min-drop",
                              "0.2", "--json-out", str(out_json)], capsys)
    assert code == 1
    assert "Passed before, failing now: 0" in out and "Still passing, but dropped sharply" in out
    assert "GATE FAILED: --fail-on-regression" in err and "dropped sharply" in err
    regs = json.loads(out_json.read_text())["regressions"]
    assert regs == [{"id": "acc_01", "baseline_score": 1.0, "current_score": 0.75, "kind": "magnitude_drop"},
                    {"id": "grnd_02", "baseline_score": 1.0, "current_score": 0.72, "kind": "magnitude_drop"}]
    # A drop within the bar is no regression; a case that crosses the threshold is one, once, of the other kind.
    code, _, _ = run_cli(["score", cur, "--baseline", base, "--fail-on-regression", "--regression-min-drop", "0.3"],
                         capsys)
    assert code == 0
    run_cli(["score", _example(tmp_path, 3, "reg.jsonl"), "--baseline", base, "--regression-min-drop", "0.2",
             "--json-out", str(out_json)], capsys)
    assert {(r["id"], r["kind"]) for r in json.loads(out_json.read_text())["regressions"]} == {
        ("acc_03", "threshold_crossing"), ("acc_06", "threshold_crossing"), ("acc_08", "threshold_crossing")}


# 4. --ci --json-out: the seed's confidence keys.

def test_ci_json_out_carries_the_seeds_confidence_keys(tmp_path: Path, capsys: Cap) -> None:
    base, cur = _example(tmp_path, 2, "b.jsonl"), _example(tmp_path, 3, "reg.jsonl")
    out_json = tmp_path / "s.json"
    assert run_cli(["score", cur, "--baseline", base, "--json-out", str(out_json)], capsys)[0] == 0
    plain = json.loads(out_json.read_text())
    assert not {"confidence", "per_category_confidence", "multiple_comparisons_correction"} & set(plain)
    assert run_cli(["score", cur, "--baseline", base, "--ci", "--json-out", str(out_json)], capsys)[0] == 0
    s = json.loads(out_json.read_text())
    conf = s["confidence"]
    assert conf["pass_rate_ci"]["point"] == 0.8 and conf["pass_rate_ci"]["n"] == 20
    assert set(conf["pass_rate_ci"]) == {"point", "ci_lo", "ci_hi", "n", "n_boot", "ci_width_reliable"}
    assert conf["mean_score_ci"]["point"] == pytest.approx(0.8375)
    diff = conf["paired_pass_rate_diff"]
    assert (diff["point_a"], diff["point_b"], diff["diff"]) == (0.8, 0.9, -0.1)
    assert {"ci_lo", "ci_hi", "p_value", "significant_at_0.05", "significant_after_correction", "n",
            "n_boot", "ci_width_reliable"} <= set(diff)
    acc = s["per_category_confidence"]["accuracy"]
    assert acc["n"] == 8 and acc["paired_pass_rate_diff"]["diff"] == -0.375
    assert not acc["paired_pass_rate_diff"]["significant_after_correction"]
    # 2 run-wide + 2 x 4 categories, as the seed counts them.
    assert s["multiple_comparisons_correction"] == {"method": "benjamini_hochberg", "family_alpha": 0.05,
                                                    "n_tests": 10}


def test_ci_json_out_skips_a_sole_category(tmp_path: Path, capsys: Cap) -> None:
    base = _jsonl(tmp_path / "b.jsonl", [{"id": f"c{i}", "score": 1.0, "category": "accuracy"} for i in range(5)])
    cur = _jsonl(tmp_path / "c.jsonl", [{"id": f"c{i}", "score": 0.0, "category": "accuracy"} for i in range(5)])
    out_json = tmp_path / "s.json"
    run_cli(["score", cur, "--baseline", base, "--ci", "--json-out", str(out_json)], capsys)
    s = json.loads(out_json.read_text())
    assert s["multiple_comparisons_correction"]["n_tests"] == 2
    assert "skipped_reason" in s["per_category_confidence"]["accuracy"]


# 5. --skip-invalid: nothing left is exit 1 with an empty results file; an undecodable line is one invalid case.

def test_skip_invalid_with_no_valid_case_left(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    # Each case lacks a different field, so no field is missing from every case (that would be a template typo).
    cases = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "input": "q"}, {"id": "b", "output": "x"}])
    code, out, err = run_cli(_judge_args(tmp_path, fake_server, cases, "--skip-invalid"), capsys)
    assert code == 1
    assert "--skip-invalid: continuing with 0/2 valid case(s)." in err
    assert out == f"Graded 0/0 case(s) -> {tmp_path / 'out.jsonl'}\n"
    assert (tmp_path / "out.jsonl").read_text() == "" and not fake_server.requests
    fake_server.responder = _pair_judge
    pairs = _jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "q", "output_a": "x"},
                                          {"id": "b", "input": "q", "output_b": "y"}])
    code, _, err = run_cli(_pair_args(tmp_path, fake_server, pairs, "--skip-invalid"), capsys)
    assert code == 1 and "continuing with 0/2" in err
    assert (tmp_path / "pairs_out.jsonl").read_text() == ""


def test_skip_invalid_skips_an_undecodable_line(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    lines = [json.dumps({"id": f"c{i}", "input": "q", "output": "a"}) for i in range(20)]
    lines[7] = '{"id": "bad\\ud800", "input": "q", "output": "a"}'  # a lone surrogate: not Unicode
    cases = tmp_path / "c.jsonl"
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run_cli(_judge_args(tmp_path, fake_server, str(cases)), capsys)
    assert code == 2 and f"{cases}:8" in err  # without the flag the file is refused, naming the line
    code, out, err = run_cli(_judge_args(tmp_path, fake_server, str(cases), "--skip-invalid"), capsys)
    assert code == 0, err
    assert f"{cases}:8" in err and "continuing with 19/20" in err
    assert len(_rows(tmp_path / "out.jsonl")) == 19 and out.startswith("Graded 19/19 case(s) -> ")


# 6. Pairwise: the seed's rationale on a disagreement, and its line on stdout.

def test_pairwise_seed_rationale_and_stdout_line(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    fake_server.responder = _pair_judge
    code, out, err = run_cli(_pair_args(tmp_path, fake_server, _jsonl(tmp_path / "p.jsonl", PAIRS)), capsys)
    assert code == 0, err
    assert out == f"Judged 2/2 case(s) -> {tmp_path / 'pairs_out.jsonl'} (1 position-bias disagreement(s))\n"
    assert "A wins" in err  # referee's own line stays on stderr
    rows = {r["id"]: r for r in _rows(tmp_path / "pairs_out.jsonl")}
    assert rows["win-tie"]["rationale"] == ("Position bias detected — orderings disagreed (favored a first, tie "
                                            "second). Ordering 1: 4 is right | Ordering 2: both fine")
    assert rows["clean"]["rationale"] == "Paris"


# 7. Calibration: the seed's stdout lines and its Action text in the log.

CAL = [("cal_01", 0.9, 0.9), ("cal_02", 0.9, 0.1), ("cal_03", 0.95, 0.9), ("cal_04", 0.9, 0.9),
       ("cal_05", 0.85, 0.1), ("cal_06", 0.9, 0.85), ("cal_07", 0.4, 0.4), ("cal_08", 0.85, 0.85)]
LOG = ("# Judge prompt\n\n| Date | Cases checked | Mean delta vs human | Action taken |\n|---|---|---|---|\n"
       "| — | — | — | not yet calibrated |\n")


def test_calibrate_prints_the_seeds_lines_and_logs_its_action(tmp_path: Path, capsys: Cap) -> None:
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": i, "score": j} for i, j, _ in CAL])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": i, "score": h} for i, _, h in CAL])
    log = tmp_path / "prompt.md"
    log.write_text(LOG, encoding="utf-8")
    code, out, err = run_cli(["calibrate", judge, human, "--update-log", str(log)], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[:3] == ["Calibration: 8 case(s) checked, mean delta 0.206 (threshold 0.2)", "",
                         "Per-case (worst agreement first):"]
    # Worst first by the exact delta, as the seed sorts (0.9 - 0.85 is a hair above 0.95 - 0.9), ties by id.
    assert lines[3:12] == ["  cal_02: judge=0.90 human=0.10 delta=0.80", "  cal_05: judge=0.85 human=0.10 delta=0.75",
                           "  cal_06: judge=0.90 human=0.85 delta=0.05", "  cal_03: judge=0.95 human=0.90 delta=0.05",
                           "  cal_01: judge=0.90 human=0.90 delta=0.00", "  cal_04: judge=0.90 human=0.90 delta=0.00",
                           "  cal_07: judge=0.40 human=0.40 delta=0.00", "  cal_08: judge=0.85 human=0.85 delta=0.00",
                           ""]
    action = "ACTION NEEDED: mean delta 0.206 exceeds 0.2 — revise the judge prompt"
    assert f"⚠ {action}" in lines and f"Logged to {log}" in lines
    assert f"| 8 | 0.206 | {action} |" in log.read_text(encoding="utf-8")
    assert "Agreement with human labels" in err and "Agreement" not in out  # referee's tables on stderr
    code, out, _ = run_cli(["calibrate", judge, human, "--threshold", "0.25", "--update-log", str(log)], capsys)
    assert code == 0 and "OK: none needed (mean delta 0.206 within 0.25)" in out
    assert "| 8 | 0.206 | none needed (mean delta 0.206 within 0.25) |" in log.read_text(encoding="utf-8")


# 8. Docs that disagreed with the code.

def test_judge_help_says_how_cost_is_priced(capsys: Cap) -> None:
    code, out, _ = run_cli(["judge", "--help"], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert "only with both prices" not in text and "genai-prices" in text


def test_score_docs_quote_the_worked_examples_p_values(tmp_path: Path, capsys: Cap) -> None:
    out_json = tmp_path / "s.json"
    run_cli(["score", _example(tmp_path, 3, "reg.jsonl"), "--baseline", _example(tmp_path, 2, "b.jsonl"),
             "--json-out", str(out_json)], capsys)
    p = {(t["scope"], t["metric"]): t["p_value"] for t in json.loads(out_json.read_text())["comparison"]["tests"]}
    docs = " ".join((REPO / "docs" / "score.md").read_text(encoding="utf-8").split())
    quoted = (f"paired p {p['overall', 'pass rate']:.3f} / {p['overall', 'mean score']:.3f} overall (pass rate / "
              f"mean score) and {p['accuracy', 'pass rate']:.3f} / {p['accuracy', 'mean score']:.3f} for `accuracy`")
    assert quoted in docs


# The migration page's table: one line per difference, and every flag it names exists.

def _migration_rows() -> list[list[str]]:
    text = (REPO / "docs" / "migrating-from-agent-eval.md").read_text(encoding="utf-8")
    section = text.split("## Every remaining difference", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        # A `|` inside backticks (none are used today) would split a cell: the 3-cell check below catches it.
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        rows.append(cells)
    assert rows[0] == ["agent-eval behaviour", "referee behaviour", "flag restoring agent-eval's"]
    return rows[1:]


def _flags(command: str) -> set[str]:
    ctx = click.Context(referee)
    cmd = referee.get_command(ctx, command)
    assert cmd is not None, f"no command 'referee {command}'"
    return {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}


def test_migration_table_flags_exist_in_the_cli() -> None:
    rows = _migration_rows()
    assert len(rows) >= 20
    named = 0
    for seed, ours, restore in rows:
        assert seed and ours and restore, (seed, ours, restore)
        if restore.startswith("none"):
            assert "`referee " not in restore
            continue
        uses = re.findall(r"`referee ([a-z]+)((?: --?[a-z][a-z0-9-]*(?: [^`\s-][^`\s]*)?)+)`", restore)
        assert uses, f"restoring flag not given as `referee <command> --flag`: {restore}"
        for command, args in uses:
            for flag in re.findall(r"(--?[a-z][a-z0-9-]*)", args):
                assert flag in _flags(command), f"referee {command} has no {flag}"
                named += 1
    assert named >= 5


def test_migration_table_referee_column_names_only_real_flags() -> None:
    every = set().union(*(_flags(name) for name in referee.list_commands(click.Context(referee))))
    named = {flag for _, ours, _ in _migration_rows() for code in re.findall(r"`([^`]*)`", ours)
             for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", code)}
    assert named, "the referee column names no flag"
    assert named <= every, f"flags no referee command has: {sorted(named - every)}"
