"""``referee conversation CASES --out R``: judge multi-turn conversations (final turn, whole, or per turn)."""

from __future__ import annotations

import click

from ..cases import Case
from ..evaluators.conversation import MODES, ConversationError, ConversationJudge, conversation_of
from ..results._manifest import TemplateInfo, text_sha256
from ..runner._session import error_row, execute
from ._agents import ensure_parent, new_manifest, read_criteria, summarise, unique_cases
from ._common import JudgeOptions, build_client, echo_err, judge_options


@click.command("conversation")
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Results JSONL.")
@click.option("--mode", type=click.Choice([m.replace("_", "-") for m in MODES]), default="final",
              show_default=True,
              help="final: the last reply in the context of the turns before it; conversation: the whole "
                   "conversation (consistency, memory, goal completion); per-turn: every assistant reply, "
                   "one row each with its turn number.")
@click.option("--criteria", "criteria_file", type=click.Path(dir_okay=False), default=None,
              help="YAML mapping criterion id -> description (replaces the mode's default rubric).")
@click.option("--category", default=None, help="Category for every row (default: each case's own).")
@judge_options(default_concurrency=8)
def command(cases: str, out: str, mode: str, criteria_file: str | None, category: str | None,
            judge: JudgeOptions) -> int:
    """Judge conversations in CASES: 'turns' [{role, content}], 'input' the final user turn, 'output' the reply."""
    criteria = read_criteria(criteria_file)
    case_list, skipped = unique_cases(cases)
    mode_id = mode.replace("-", "_")
    client = build_client(judge)
    cj = ConversationJudge(client, mode_id, criteria, max_tokens=judge.max_tokens, temperature=judge.temperature,
                           seed=judge.seed, use_cache=not judge.no_cache, category=category)
    rubric_hash = text_sha256(mode_id + repr(sorted(cj.criteria.items())))
    cj.judge_info = client.judge_info(rubric_hash)
    manifest = new_manifest("conversation", cases, case_list, judge=judge.config(client.provider.model),
                            system_under_test=judge.system_model,
                            template=TemplateInfo(path=criteria_file, sha256=rubric_hash))
    manifest.extra["mode"] = mode_id

    def key(c: Case) -> tuple[str, int | None, int | None]:
        """Per-turn rows carry their turn: a case is done when its first judged turn is in the file."""
        if mode_id != "per_turn":
            return (c.id, None, None)
        try:
            conv = conversation_of(c)
        except ConversationError:
            return (c.id, None, None)
        return (c.id, None, next(i + 1 for i, t in enumerate(conv) if t["role"] == "assistant"))

    outcome = execute(out=ensure_parent(out), manifest=manifest, items=case_list, key=key,
                      evaluate=cj.evaluate,
                      on_error=lambda c, exc: error_row(c.id, exc, evaluator=cj.evaluator,
                                                        category=category or c.category),
                      client=client, concurrency=judge.concurrency, label="judging", skipped=skipped)
    if outcome.resume_note:
        echo_err(outcome.resume_note)
    summarise(outcome.rows, out)
    return 0 if outcome.manifest.totals.scored else 1
