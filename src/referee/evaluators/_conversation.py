"""Multi-turn conversations: the final turn judged in context, the whole conversation, or every assistant turn.

A case's ``turns`` (``[{role, content}]``) is the conversation so far; as in the seed, ``input`` may hold the
final user turn and ``output`` the reply under evaluation. Modes:

- ``final``: the last assistant reply, judged with everything before it as context (relevance to the final
  turn, consistency with earlier turns, memory of what the user said).
- ``conversation``: the whole conversation (consistency, memory, goal completion).
- ``per_turn``: one row per assistant turn, each judged in the context of the turns before it; rows carry
  ``turn`` (1-based position of that reply in the conversation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cases import Case
from ..errors import RefereeError
from ..results._schema import ResultRow
from ..runner._client import JudgeClient
from ..templates import transcript
from ._trajectory_judge import CriteriaJudge, PromptParts, as_text, build_prompt, rubric_text

ROLES = ("system", "user", "assistant", "tool")
MODES = ("final", "conversation", "per_turn")

FINAL_TURN_CRITERIA: dict[str, str] = {
    "relevance": "Does the final reply answer what the user asked in the final turn, read in context?",
    "consistency": "Is the final reply consistent with what the assistant said earlier (no contradictions)?",
    "memory": "Does the final reply use what the user said in earlier turns (names, numbers, constraints) "
              "instead of forgetting or asking again?",
}
CONVERSATION_CRITERIA: dict[str, str] = {
    "consistency": "Is the assistant consistent across the whole conversation (no contradictions)?",
    "memory": "Does the assistant remember and use what the user said in earlier turns?",
    "goal_completion": "By the end, has the user's goal been achieved or correctly resolved?",
}


class ConversationError(RefereeError, ValueError):
    pass


def conversation_of(case: Case) -> list[dict[str, Any]]:
    """The full conversation: ``turns``, then ``input`` as the final user turn (unless it already is the last
    turn), then ``output`` as the assistant's reply. Unknown roles raise, naming case and turn."""
    where = f"{case.where}: " if case.where else ""
    turns = case.turns
    if turns is None:
        raise ConversationError(f"{where}case '{case.id}': no 'turns' (expected a list of {{role, content}})")
    conv: list[dict[str, Any]] = []
    for i, t in enumerate(turns):
        role = str(t.get("role", "")).strip().lower()
        if role not in ROLES:
            raise ConversationError(f"{where}case '{case.id}', turn {i + 1}: unknown role {t.get('role')!r} "
                                    f"(expected one of {', '.join(ROLES)})")
        conv.append({"role": role, "content": t.get("content")})
    inp = case.input
    if inp is not None and not (conv and conv[-1]["role"] == "user" and conv[-1]["content"] == inp):
        if not conv or conv[-1]["role"] != "assistant" or case.output is not None:
            conv.append({"role": "user", "content": inp})
    if case.output is not None:
        conv.append({"role": "assistant", "content": case.output})
    if not any(t["role"] == "assistant" for t in conv):
        raise ConversationError(f"{where}case '{case.id}': no assistant turn to judge (no assistant turns and no "
                                "output)")
    return conv


class ConversationJudge(CriteriaJudge):
    evaluator = "conversation"

    def __init__(self, client: JudgeClient, mode: str = "final", criteria: Mapping[str, str] | None = None,
                 **kwargs: Any) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        default = CONVERSATION_CRITERIA if mode == "conversation" else FINAL_TURN_CRITERIA
        super().__init__(client, criteria or default, **kwargs)
        self.mode = mode
        self.evaluator = f"conversation_{mode}"
        self.outcome_criterion = "goal_completion" if "goal_completion" in self.criteria else None

    def final_prompt(self, case: Case, conv: list[dict[str, Any]], upto: int) -> PromptParts:
        """Judge ``conv[upto]`` (an assistant turn) with ``conv[:upto]`` as context."""
        blocks = [("transcript", transcript(conv[:upto]) or "(no earlier turns)"),
                  ("final_turn", as_text(conv[upto]["content"]))]
        if case.reference is not None:
            blocks.append(("reference", as_text(case.reference)))
        rubric = rubric_text(self.criteria, intro="Evaluate the assistant's reply in the final_turn block, "
                             "given the conversation before it in the transcript block.")
        return build_prompt(blocks, rubric)

    def conversation_prompt(self, case: Case, conv: list[dict[str, Any]]) -> PromptParts:
        blocks = [("transcript", transcript(conv))]
        if case.reference is not None:
            blocks.append(("reference", as_text(case.reference)))
        rubric = rubric_text(self.criteria, intro="Evaluate the assistant's side of the whole conversation in "
                             "the transcript block.")
        return build_prompt(blocks, rubric)

    async def evaluate(self, case: Case) -> list[ResultRow]:
        try:
            conv = conversation_of(case)
        except ConversationError as exc:
            return [self.error(case, str(exc), evaluator=self.evaluator, category=self.category)]
        if self.mode == "conversation":
            return [await self.judge(case, self.conversation_prompt(case, conv), details={"turns": len(conv)})]
        assistant_at = [i for i, t in enumerate(conv) if t["role"] == "assistant"]
        if self.mode == "final":
            last = assistant_at[-1]
            return [await self.judge(case, self.final_prompt(case, conv, last), details={"turns": len(conv)})]
        rows = []
        for i in assistant_at:
            rows.append(await self.judge(case, self.final_prompt(case, conv, i), turn=i + 1,
                                         details={"turns": len(conv)}))
        return rows
