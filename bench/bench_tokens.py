"""Input tokens per judge request: the seed runner's request against referee's, for one template and case.

Builds, through referee's own code paths (the template judge and the Anthropic provider's request body, no
network), the request of one case three ways:

- seed: what the seed's ``run_judge.py`` sends: the filled template as the one user message;
- referee (default): system prompt with the data notice, values neutralised, the verdict schema as a forced tool;
- referee --request-format seed: referee's seed-exact mode.

and prints the prompt-bearing characters of each request (system, messages, tool name, description and JSON
schema) with their tokens: counted by tiktoken's ``cl100k_base`` when it is installed, else estimated as
characters / 4 (the line says which). The provider's own hidden tool-use preamble (Anthropic adds one to any
request with tools) is not in the request body, so it is not counted: the referee default's real overhead is
larger than printed.

    python bench/bench_tokens.py                 # the built-in template and a 1.2k-character ticket
    python bench/bench_tokens.py --template T.txt --case case.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from referee.cases import Case
from referee.evaluators._base import JudgeSettings
from referee.evaluators._judge import TemplateJudge
from referee.providers._anthropic import AnthropicProvider
from referee.providers._base import JudgeRequest

# A rubric-style judge template of the shape the seed's skill documents ({input}, {output}, one object per
# criterion plus overall_score), about 1.2k characters.
TEMPLATE = """You are grading one AI response against a written rubric. You are not the system under test:
judge only what is shown below.

## Task being evaluated
Summarise a customer support ticket for the on-call engineer: what broke, for whom, since when, and what
has been tried.

## Input
{input}

## Output to grade
{output}

## Rubric
Score each criterion from 0.0 to 1.0:

- factual_accuracy: every fact in the summary is in the ticket (1.0); any invented or wrong fact (0.0).
- completeness: the account, the error, the start time and the steps tried are all there.
- concision: five sentences or fewer, no filler.

## Instructions
- Grade strictly against the rubric: do not reward pleasant writing that misses a criterion.
- An empty, refusing or broken output scores 0.0 on every criterion.
- Give a one-sentence rationale per criterion.
- Reply with valid JSON only, no other text:

{
  "factual_accuracy": {"score": 0.0, "rationale": "..."},
  "completeness": {"score": 0.0, "rationale": "..."},
  "concision": {"score": 0.0, "rationale": "..."},
  "overall_score": 0.0
}
"""

_TICKET = ("Customer: Northwind Traders (account NW-20417, enterprise plan). Reported 2024-03-11 09:42 UTC by "
           "their IT lead. Since the 03:00 UTC maintenance window, every export job to their S3 bucket fails "
           "with error E_SIGNATURE_MISMATCH after about 40 seconds; imports and the dashboard work. They rotated "
           "the access key at 08:15 and re-entered it in the integration settings, with no change. They also "
           "tried a smaller export (one table, 2 MB): same error. Their bucket policy has not changed in six "
           "months according to their cloud team. Three nightly reports for their finance department depend on "
           "these exports and the first deadline is 17:00 UTC today. They ask whether the maintenance changed "
           "the signing region, because their bucket is in eu-central-2, which they say was added recently. "
           "Attached: two job ids (exp-88121, exp-88164) and a screenshot of the error banner. The customer's "
           "contract includes a four-hour response time for severity 2 incidents; they marked this severity 2. "
           "A second user at the same company confirms the same error from a different office network, so "
           "they rule out their proxy. They can share a HAR file of the failing request if engineering needs "
           "it, and they are available on the bridge line until 18:00 UTC.")
CASE: dict[str, Any] = {
    "id": "ticket-001",
    "input": _TICKET,
    "output": ("Northwind Traders (NW-20417) cannot export to S3 since the 03:00 UTC maintenance: every job fails "
               "with E_SIGNATURE_MISMATCH after ~40 s. Rotating the key and a small export did not help. Their "
               "bucket is in eu-central-2; they suspect a signing-region change. Three finance reports are due at "
               "17:00 UTC; severity 2."),
}


def _counter() -> tuple[str, Callable[[str], int]]:
    try:
        import tiktoken
    except ImportError:
        return "characters / 4 (no tokenizer installed)", lambda text: round(len(text) / 4)
    try:
        enc = tiktoken.get_encoding("cl100k_base")
    except Exception:  # tiktoken downloads its encodings on first use: offline, none may be cached
        return "characters / 4 (tiktoken's cl100k_base not cached, and no network)", lambda text: round(len(text) / 4)
    return "tiktoken cl100k_base", lambda text: len(enc.encode(text))


def prompt_text(payload: dict[str, Any]) -> str:
    """The parts of an Anthropic Messages API body the model reads (and the input tokens bill): the system
    prompt, every message, and each tool's name, description and JSON schema."""
    parts = [str(payload.get("system", ""))]
    parts += [str(m["content"]) for m in payload.get("messages", [])]
    for tool in payload.get("tools", []):
        parts += [tool["name"], tool["description"], json.dumps(tool["input_schema"], separators=(",", ":"))]
    return "".join(parts)


def seed_payload(template: str, case: dict[str, Any]) -> dict[str, Any]:
    """The seed runner's request body, built here by its documented rule (plain ``{key}`` replacement,
    non-strings as ``json.dumps(value, indent=2)``), independently of referee's code."""
    prompt = template
    for key, value in case.items():
        prompt = prompt.replace("{" + key + "}", value if isinstance(value, str) else json.dumps(value, indent=2))
    return {"model": "m", "max_tokens": 1024, "messages": [{"role": "user", "content": prompt}]}


def referee_payload(template: str, case: dict[str, Any], request_format: str) -> dict[str, Any]:
    judge = TemplateJudge(template, request_format=request_format)
    judge.bind(JudgeSettings(client=None))
    request: JudgeRequest = judge.request(Case(id=str(case["id"]), data=case))
    provider = AnthropicProvider("m", api_key="not-sent")  # builds the body only: nothing is sent
    return provider._payload(request)  # noqa: SLF001 - the body as the provider would send it


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--template", type=Path, default=None, help="A judge template (default: the built-in one).")
    ap.add_argument("--case", type=Path, default=None, help="One case as a JSON object (default: the built-in one).")
    args = ap.parse_args(argv)
    template = args.template.read_text(encoding="utf-8") if args.template else TEMPLATE
    case = json.loads(args.case.read_text(encoding="utf-8")) if args.case else CASE
    how, count = _counter()
    seed = prompt_text(seed_payload(template, case))
    forms = [("seed run_judge.py", seed),
             ("referee (default)", prompt_text(referee_payload(template, case, "referee"))),
             ("referee --request-format seed", prompt_text(referee_payload(template, case, "seed")))]
    base = count(seed)
    print(f"tokens counted by {how}; template {len(template)} chars, case input {len(str(case.get('input', '')))} "
          f"chars")
    print(f"{'request':<32}{'chars':>8}{'tokens':>8}{'vs seed':>10}")
    for name, text in forms:
        tokens = count(text)
        print(f"{name:<32}{len(text):>8}{tokens:>8}{(tokens - base) / base:>+10.1%}")
    if forms[2][1] != seed:
        print("warning: the seed-exact mode's prompt differs from the seed's", file=sys.stderr)
        return 1
    billed(template, case)
    return 0


def _criteria(template: str) -> list[str]:
    """The criterion names of the template's JSON example (``"name": {"score"``), else one."""
    import re

    return re.findall(r'"([A-Za-z_][\w-]*)"\s*:\s*\{\s*"score"', template) or ["quality"]


_IN, _OUT = 3.0, 15.0  # $ per million tokens: any prices; the ratio does not depend on them


def billed(template: str, case: dict[str, Any]) -> None:
    """What a provider that bills every character it is sent charges per case: ``referee judge`` run for real
    (in this process, over the Anthropic wire to a local server that counts the whole request body, JSON and
    all, as input tokens at characters / 4, and the reply the same way), by default and with
    ``--request-format seed``, against the seed runner's request body for the same case and reply."""
    import tempfile

    from referee.cli import cli
    from referee.results import read_results
    from referee.testing import FakeLLMServer, Reply, WireRequest

    names = _criteria(template)
    verdict = json.dumps({**{n: {"score": 0.8, "rationale": "Every fact in the summary is in the ticket."}
                             for n in names}, "overall_score": 0.8})

    def bill(req: WireRequest) -> Reply:  # one valid verdict for every request: one call per case each way
        return Reply(text=verdict, input_tokens=round(len(req.raw_body) / 4), output_tokens=round(len(verdict) / 4))

    import os

    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-bench-local-only")  # the local server's, never sent out
    costs: dict[str, float] = {}
    inputs: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(bill) as srv:
        d = Path(tmp)
        (d / "t.md").write_text(template, encoding="utf-8")
        (d / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
        for name, extra in (("referee (default)", []), ("referee --request-format seed", ["--request-format", "seed"])):
            out = d / f"{len(costs)}.jsonl"
            code = cli(["judge", str(d / "cases.jsonl"), "-t", str(d / "t.md"), "-o", str(out), "--provider",
                        "anthropic", "--base-url", srv.url, "--no-cache", "--input-price-per-mtok", str(_IN),
                        "--output-price-per-mtok", str(_OUT), *extra])
            rows = read_results(out).rows
            usage = rows[0].usage
            if code not in (0, 1) or rows[0].cost_usd is None or usage is None or usage.calls != 1:
                raise SystemExit(f"{name}: referee judge exited {code}; one call with its cost was expected")
            costs[name] = rows[0].cost_usd
            inputs[name] = usage.input_tokens or 0
            if not costs.get("seed run_judge.py"):  # the seed's body for the same case, and the same reply
                body = json.dumps(seed_payload(template, case)).encode()
                costs = {"seed run_judge.py": (round(len(body) / 4) * _IN + round(len(verdict) / 4) * _OUT) / 1e6,
                         **costs}
                inputs = {"seed run_judge.py": round(len(body) / 4), **inputs}
    base = costs["seed run_judge.py"]
    print("\nbilled per case by a provider that counts every character it is sent (characters / 4, the whole "
          "request body; reply the same)")
    print(f"  {'request':<30}{'input tokens':>13}{'x seed':>8}{'$ per case':>12}{'x seed':>8}")
    for name, c in costs.items():
        n = inputs[name]
        print(f"  {name:<30}{n:>13}{n / inputs['seed run_judge.py']:>8.2f}{c:>12.6f}{c / base:>8.2f}")


if __name__ == "__main__":
    sys.exit(main())
