"""What an alignment would cost, with no call made (``referee align --dry-run``): the judge calls of each method
and the optimizer's call, priced from the prompts' length (about four characters a token) and an upper bound of
``max_tokens`` per reply."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..cases._case import Case
from ..errors import UserError
from ..evaluators.checks._judge import LLMJudge
from ._prompt import example_text, prompt_part
from ._rejudge import MAX_OPTIMIZER_CASES

CHARS_PER_TOKEN = 4


@dataclass
class Estimate:
    judge_calls: int
    optimizer_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    lines: list[str] = field(default_factory=list)


def _tokens(chars: float) -> int:
    return int(chars / CHARS_PER_TOKEN) + 1


def estimate_alignment(methods: Sequence[str], *, judge: LLMJudge | None, cases: Mapping[str, Case], n_labels: int,
                       holdout: float, examples: int, candidates: int, max_tokens: int,
                       judge_price: tuple[float, float] | None, optimizer_price: tuple[float, float] | None,
                       optimizer_max_tokens: int = 2048) -> Estimate:
    """The calls and cost of aligning by ``methods`` on ``n_labels`` labelled cases (``cases``: the judge's,
    to measure its prompt). Prices are USD per million (input, output) tokens; None: no cost reported. The
    refit on every label (a map fitted after the prompt methods) is counted: it runs only when the result is
    kept, so the figure is an upper bound."""
    if judge is None or not ({"examples", "instructions"} & set(methods)):
        return Estimate(0, 0, 0, 0, 0.0, [f"referee align --method {'+'.join(methods)}: no model call (the score "
                                         "map is fitted on the scores already in RESULTS): $0.00"])
    if not isinstance(judge, LLMJudge):
        raise UserError(f"examples and instructions align an llm_judge (a rubric or a template); "
                        f"{type(judge).__name__} is not one")
    some = list(cases.values())[: max(1, n_labels)]
    per_call = sum(len(m.content) for c in some for m in judge.request(c).messages) / max(1, len(some))
    per_example = sum(sum(len(v) for v in example_text(c).values()) + 200 for c in some) / max(1, len(some))
    n_train = round(n_labels * (1 - holdout))
    shown = per_example * (examples if "examples" in methods else 0)
    calls = n_labels  # the fitted prompt on every labelled case
    in_chars = n_labels * (per_call + shown)
    opt_calls = 0
    opt_in = opt_out = 0
    if "instructions" in methods:
        calls += candidates * n_train
        in_chars += candidates * n_train * per_call
        opt_calls = 1
        opt_in = _tokens(len(prompt_part(judge)[1]) + MAX_OPTIMIZER_CASES * per_example + 1500)
        opt_out = optimizer_max_tokens
    if "map" in methods:
        calls += n_labels  # the refit's scores, when kept
        in_chars += n_labels * (per_call + shown)
    j_in, j_out = _tokens(in_chars), calls * max_tokens
    cost: float | None = 0.0
    for (ti, to), price in (((j_in, j_out), judge_price), ((opt_in, opt_out), optimizer_price)):
        if ti == 0 and to == 0:
            continue
        if price is None or cost is None:
            cost = None
            continue
        cost += ti / 1e6 * price[0] + to / 1e6 * price[1]
    lines = [f"referee align --method {'+'.join(methods)} on {n_labels} labelled cases:",
             f"  at most {calls} judge calls (~{j_in} input tokens, <= {j_out} output tokens)",
             *([f"  {opt_calls} optimizer call (~{opt_in} input, <= {opt_out} output tokens)"] if opt_calls else []),
             "cost: " + (f"at most ${cost:.4f}" if cost is not None else
                         "not known (no public price: give the judge's and optimizer's prices per million tokens)"),
             "every call goes through the response cache: a rerun with the same labels",
             "costs nothing"]
    return Estimate(calls, opt_calls, j_in + opt_in, j_out + opt_out, cost, lines)
