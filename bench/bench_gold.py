"""Token and cost of gold-standard grading: one judge call per criterion vs all criteria in one call.

Runs ``referee gold`` twice over the same dataset against the local FakeLLMServer and reads the run
manifests' totals. The fake server reports token counts it computes from the text it receives and sends
(``ceil(chars / 4)``, the usual ~4 characters per token for English; no tokenizer is installed), so the
figures are estimates of real usage but the *ratio* between the two modes is what the bench measures: both
modes pay for the same documents, the per-criterion mode pays for them once per criterion.

    .venv/bin/python bench/bench_gold.py [--cases 5] [--criteria 6] [--doc-chars 6000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import random
import tempfile
from pathlib import Path

from referee.cli import cli
from referee.results._manifest import RunManifest
from referee.testing import FakeLLMServer, Reply, WireRequest

# USD per million tokens (Claude Sonnet list prices, the criteria files' default judge).
IN_PRICE, OUT_PRICE = 3.0, 15.0
WORDS = ("scope requirement user login session audit export billing invoice latency retry owner milestone "
         "risk metric rollout flag tenant admin report").split()


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _doc(rng: random.Random, chars: int, title: str) -> str:
    lines = [f"# {title}"]
    while sum(len(x) + 1 for x in lines) < chars:
        lines.append(f"## {rng.choice(WORDS).title()}")
        lines += ["- " + " ".join(rng.choice(WORDS) for _ in range(12)) + "." for _ in range(4)]
    return "\n".join(lines)


def _respond(req: WireRequest) -> Reply:
    item = {"pass": True, "score": 2, "reasoning": "The generated document matches the gold standard here.",
            "quotes": []}
    schema = req.schema or {}
    if "criteria" in schema.get("properties", {}):
        ids = schema["properties"]["criteria"]["required"]
        text = json.dumps({"criteria": dict.fromkeys(ids, item)})
    else:
        text = json.dumps(item)
    return Reply(text=text, input_tokens=_tokens(req.prompt_text), output_tokens=_tokens(text))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=5)
    ap.add_argument("--criteria", type=int, default=6)
    ap.add_argument("--doc-chars", type=int, default=6000)
    args = ap.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(responder=_respond) as srv:
        root = Path(tmp)
        crit = root / "criteria.yaml"
        crit.write_text("skill: bench\ngold_standard_file: gold.md\ngenerated_file_patterns: [out.md]\n"
                        f"pass_threshold: {args.criteria}\ncriteria:\n" + "".join(
                            f"  - id: c{i}\n    name: Criterion {i}\n    weight: {'critical' if i == 0 else 'important'}\n"
                            f"    prompt: Check that section {i} of the gold standard is covered with the same "
                            "meaning, and flag anything missing or moved.\n" for i in range(args.criteria)))
        for i in range(args.cases):
            (root / "ds" / f"case{i}").mkdir(parents=True)
            (root / "ds" / f"case{i}" / "input.yaml").write_text("{}\n")
            (root / "ds" / f"case{i}" / "gold.md").write_text(_doc(rng, args.doc_chars, f"Gold {i}"))
            (root / "res" / f"case{i}").mkdir(parents=True)
            (root / "res" / f"case{i}" / "out.md").write_text(_doc(rng, args.doc_chars, f"Generated {i}"))
        results = {}
        for mode, extra in (("per-criterion", []), ("single-call", ["--single-call"])):
            out = root / mode
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                code = cli(["gold", "--criteria", str(crit), "--dataset", str(root / "ds"), "--results-dir",
                            str(root / "res"), "--output", str(out), "--provider", "openai", "--base-url",
                            srv.openai_base_url, "--no-cache", "--input-price-per-mtok", str(IN_PRICE),
                            "--output-price-per-mtok", str(OUT_PRICE), *extra])
            m = RunManifest.read(out / "results.jsonl")
            assert code == 0 and m is not None, f"{mode} run failed (exit {code})"
            t = m.totals
            results[mode] = (t.provider_calls, t.input_tokens or 0, t.output_tokens or 0, t.cost_usd or 0.0)
    print(f"gold grading: {args.cases} cases x {args.criteria} criteria, documents ~{args.doc_chars} chars each "
          f"(tokens = ceil(chars/4), prices ${IN_PRICE}/${OUT_PRICE} per MTok)")
    print(f"{'mode':<15}{'calls':>7}{'input tok':>12}{'output tok':>12}{'cost USD':>11}")
    for mode, (calls, tin, tout, cost) in results.items():
        print(f"{mode:<15}{calls:>7}{tin:>12}{tout:>12}{cost:>11.4f}")
    per, single = results["per-criterion"], results["single-call"]
    print(f"single-call saves {100 * (1 - single[1] / per[1]):.1f}% of input tokens, "
          f"{100 * (1 - single[3] / per[3]):.1f}% of cost, {per[0] - single[0]} calls")


if __name__ == "__main__":
    main()
