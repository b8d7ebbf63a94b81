"""Meta-evaluation of referee's own results files and JudgeBench outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.metaeval._judgebench import judgebench_accuracy, read_outputs
from referee.metaeval._results import absolute_meta, pairwise_from_results


def _jsonl(path: Path, rows: list[dict[str, object]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _prow(cid: str, first: str | None, second: str | None) -> dict[str, object]:
    orders = [{"shown_first": "a", "status": "scored" if first else "unscored", "winner": first},
              {"shown_first": "b", "status": "scored" if second else "unscored", "winner": second}]
    row: dict[str, object] = {"schema_version": 1, "id": cid, "evaluator": "pairwise", "details": {"orders": orders}}
    if first and second:
        w = first if first == second else "tie"
        row.update(winner=w, score={"a": 1.0, "b": 0.0, "tie": 0.5}[w], position_bias_detected=first != second)
    else:
        row["status"] = "unscored"
    return row


def test_pairwise_results_against_gold(tmp_path: Path) -> None:
    res = _jsonl(tmp_path / "pw.jsonl", [_prow("1", "a", "a"), _prow("2", "a", "b"), _prow("3", "b", "b"),
                                          _prow("4", "a", None)])
    gold = _jsonl(tmp_path / "gold.jsonl", [{"id": "1", "label": "a"}, {"id": "2", "label": "b"},
                                            {"id": "3", "label": "a"}, {"id": "4", "label": "a"}])
    out = tmp_path / "m.json"
    assert cli(["metaeval", "pairwise", res, "--gold", gold, "--json-out", str(out), "--n-boot", "100"]) == 0
    m = json.loads(out.read_text())[res]
    assert m["n"] == 4
    assert m["accuracy_noswap"]["estimate"] == pytest.approx(2 / 4)  # 1 right, 2 wrong, 3 wrong, 4 right
    assert m["accuracy_swap"]["estimate"] == pytest.approx(2 / 4)  # 1 and 2 right; 4 is unscored: wrong
    assert m["bias"]["first_shown"]["estimate"] == pytest.approx(1 / 4)
    assert m["bias"]["unparsed_pairs"] == 1


def test_pairwise_results_without_common_gold_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = _jsonl(tmp_path / "pw.jsonl", [_prow("1", "a", "a")])
    gold = _jsonl(tmp_path / "gold.jsonl", [{"id": "zzz", "label": "a"}])
    assert cli(["metaeval", "pairwise", res, "--gold", gold]) == 2
    assert "no ids in common" in capsys.readouterr().err


def test_seed_pairwise_rows_without_orders(tmp_path: Path) -> None:
    res = _jsonl(tmp_path / "seed.jsonl", [{"id": "1", "score": 1.0, "winner": "a", "position_bias_detected": False},
                                           {"id": "2", "score": 0.5, "winner": "tie", "position_bias_detected": True}])
    items = pairwise_from_results(res)
    assert (items[0].noswap, items[0].swap) == ("1", "1")
    assert (items[1].noswap, items[1].swap) == (None, None)  # the orders' verdicts are unknown


def test_absolute_meta_with_raters() -> None:
    humans = {str(i): {"r1": float(i % 5), "r2": float((i + 1) % 5), "r3": float(i % 5)} for i in range(30)}
    judge = {str(i): float(i % 5) for i in range(30)}
    m = absolute_meta(judge, humans, n_boot=100)
    assert m.n == 30 and m.raters == 3
    assert m.spearman.estimate is not None and m.spearman.estimate > 0.5
    assert m.ceiling_kendall is not None and -1 <= m.ceiling_kendall <= 1


def test_absolute_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = _jsonl(tmp_path / "r.jsonl", [{"id": str(i), "score": i / 10} for i in range(10)])
    hum = _jsonl(tmp_path / "h.jsonl", [{"id": str(i), "rater": r, "score": i + (r == "b")} for i in range(10)
                                        for r in ("a", "b")])
    assert cli(["metaeval", "absolute", res, "--human", hum, "--n-boot", "100"]) == 0
    out = capsys.readouterr().out
    assert "Spearman rho vs human mean: 1.000" in out


def test_judgebench_reader_flips_the_swapped_order(tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "o.jsonl", [
        {"pair_id": "p1", "source": "math", "label": "A>B",
         "judgments": [{"decision": "A>B"}, {"decision": "B>A"}]},   # right in both orders
        {"pair_id": "p2", "source": "math", "label": "B>A",
         "judgments": [{"decision": "A>B"}, {"decision": "A>B"}]},   # picks the first shown twice
        {"pair_id": "p3", "source": "code", "label": "A>B",
         "judgments": [{"decision": "A>B"}, {"decision": None}]},    # +1 and 0: correct
    ])
    items = read_outputs(f)
    assert [(v.noswap, v.swap) for v in items] == [("1", "1"), ("1", "2"), ("1", None)]
    assert judgebench_accuracy(items) == pytest.approx(2 / 3)


def test_judgebench_shared_outputs(shared_data: Path) -> None:
    path = shared_data / "judgebench" / "outputs" / "gpt-4o-2024-05-13__arena_hard__o1-mini-2024-09-12.jsonl"
    items = read_outputs(path)
    assert len(items) == 350
    assert sum(v.label == "1" for v in items) == 193  # the README's 193 A>B labels


def test_referee_pairwise_output_feeds_metaeval_pairwise(tmp_path: Path) -> None:
    """`referee pairwise` results -> `referee metaeval pairwise --gold`: per-order accuracy from the real rows."""
    from referee.testing import FakeLLMServer, WireRequest

    cases = _jsonl(tmp_path / "cases.jsonl", [
        {"id": "right", "input": "2+2?", "output_a": "4", "output_b": "5"},
        {"id": "first", "input": "2+3?", "output_a": "5", "output_b": "6"},
        {"id": "bad", "input": "2+4?", "output_a": "6", "output_b": "7"},
    ])
    tmpl = tmp_path / "t.md"
    tmpl.write_text("{input}\n<r1>{response_1}</r1>\n<r2>{response_2}</r2>\n", encoding="utf-8")

    def judge(req: WireRequest) -> str:
        text = req.prompt_text
        first = text.split("<r1>")[1].split("</r1>")[0]
        if "2+4?" in text:
            return "no idea"  # never a verdict: this pair is unscored in both orders
        if "2+3?" in text:
            return json.dumps({"winner": "response_1", "rationale": "first shown"})  # position bias
        return json.dumps({"winner": "response_1" if first == "4" else "response_2", "rationale": "4 is right"})

    out = tmp_path / "pw.jsonl"
    with FakeLLMServer(responder=judge) as srv:
        assert cli(["pairwise", cases, "-t", str(tmpl), "-o", str(out), "--provider", "vllm",
                    "--base-url", srv.openai_base_url, "--model", "m", "--max-retries", "0"]) == 0
    gold = _jsonl(tmp_path / "gold.jsonl", [{"id": "right", "label": "a"}, {"id": "first", "label": "a"},
                                            {"id": "bad", "label": "a"}])
    js = tmp_path / "m.json"
    assert cli(["metaeval", "pairwise", str(out), "--gold", gold, "--json-out", str(js), "--n-boot", "100"]) == 0
    m = json.loads(js.read_text())[str(out)]
    assert m["n"] == 3
    # A shown first: right (a) and first (a) are correct, bad is unscored = wrong.
    assert m["accuracy_noswap"]["estimate"] == pytest.approx(2 / 3)
    # B shown first: right is correct; first picks b (shown first); bad is unscored.
    assert m["accuracy_swap"]["estimate"] == pytest.approx(1 / 3)
    assert m["bias"]["first_shown"]["estimate"] == pytest.approx(1 / 3)
    assert m["bias"]["consistent"]["estimate"] == pytest.approx(1 / 3)
    assert m["bias"]["unparsed_pairs"] == 1


def test_malformed_inputs_name_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pw = _jsonl(tmp_path / "pw.jsonl", [_prow("1", "a", "a")])
    not_obj = tmp_path / "list.jsonl"
    not_obj.write_text("[1, 2]\n", encoding="utf-8")
    assert cli(["metaeval", "pairwise", pw, "--gold", str(not_obj)]) == 2
    assert "list.jsonl:1: expected a JSON object" in capsys.readouterr().err
    assert cli(["metaeval", "absolute", pw, "--human", str(not_obj)]) == 2
    assert "list.jsonl:1" in capsys.readouterr().err
    no_id = _jsonl(tmp_path / "noid.jsonl", [{"rater": "r1", "score": 3}])
    assert cli(["metaeval", "absolute", pw, "--human", no_id]) == 2
    assert "noid.jsonl:1: field 'id'" in capsys.readouterr().err
    raw = _jsonl(tmp_path / "raw.jsonl", [{"idx": 0}])
    assert cli(["metaeval", "parse", raw]) == 2
    assert "raw.jsonl:1: field 'results'" in capsys.readouterr().err
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not json\n", encoding="utf-8")
    assert cli(["metaeval", "parse", str(garbage)]) == 2
    assert "garbage.jsonl:1: malformed JSON" in capsys.readouterr().err
    assert cli(["metaeval", "parse", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl: file not found" in capsys.readouterr().err
    jb = _jsonl(tmp_path / "jb.jsonl", [{"label": "A>B", "judgments": ["x", "y"]}])
    assert cli(["metaeval", "judgebench", jb]) == 2
    assert "jb.jsonl:1: field 'judgments'" in capsys.readouterr().err


def test_absolute_small_sample_is_said_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judged = _jsonl(tmp_path / "j.jsonl", [{"id": "a", "score": 0.2}, {"id": "b", "score": 0.9}])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": "a", "rater": "r1", "score": 4}, {"id": "b", "rater": "r2", "score": 2}])
    assert cli(["metaeval", "absolute", judged, "--human", human, "--n-boot", "100"]) == 0
    out = capsys.readouterr().out
    assert "small sample (2 cases)" in out
    assert "no leave-one-out ceiling" in out
