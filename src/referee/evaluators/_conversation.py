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
from dataclasses import dataclass
from typing import Any, ClassVar

from ..cases._case import Case
from ..cases._templates import transcript
from ..errors import RefereeError
from ..providers._base import JudgeRequest
from ._base import with_output
from ._trajectory_judge import CriteriaJudge, PromptParts, build_prompt, prompt_text, rubric_text

ROLES = ("system", "user", "assistant", "tool")
MODES = ("final", "conversation", "per_turn")
CONVERSATION_MODES = MODES
"""How a conversation is judged: its final turn, the whole conversation, or each turn."""

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
    """A case that is not a conversation referee can judge; the message names the case and the turn."""


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


@dataclass
class ConversationJudge(CriteriaJudge):
    """A multi-turn conversation (the case's ``turns``): ``mode="final"`` judges the last answer in its context,
    ``"conversation"`` the whole exchange, ``"per_turn"`` (or ``"per-turn"``) every assistant reply in the
    context of the turns before it: a row per turn for the command, and from Python one result whose score is
    the turns' mean and which passes when every turn does (each turn's verdict in ``details["turns"]``).
    ``criteria`` (``{id: description}``) replaces the mode's default rubric."""

    name: ClassVar[str] = "conversation"
    evaluator: ClassVar[str] = "conversation"
    case_errors: ClassVar[tuple[type[Exception], ...]] = (ConversationError,)

    mode: str = "final"
    """``final``, ``conversation`` or ``per_turn``."""

    def __post_init__(self) -> None:
        self.mode = self.mode.replace("-", "_")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        super().__post_init__()

    @property
    def default_rubric(self) -> Mapping[str, str]:
        return CONVERSATION_CRITERIA if self.mode == "conversation" else FINAL_TURN_CRITERIA

    def default_template_hash(self) -> str:
        """``referee conversation``'s: the mode and the criteria (so the command and Python agree)."""
        from ..results._files import text_sha256

        return text_sha256(self.mode + repr(sorted(self.criteria.items())))

    @property
    def outcome_criterion(self) -> str | None:
        return "goal_completion" if "goal_completion" in self.criteria else None

    @property
    def row_evaluator(self) -> str:
        return f"conversation_{self.mode}"

    def final_prompt(self, case: Case, conv: list[dict[str, Any]], upto: int) -> PromptParts:
        """Judge ``conv[upto]`` (an assistant turn) with ``conv[:upto]`` as context."""
        blocks = [("transcript", transcript(conv[:upto]) or "(no earlier turns)"),
                  ("final_turn", prompt_text(conv[upto]["content"]))]
        if case.reference is not None:
            blocks.append(("reference", prompt_text(case.reference)))
        rubric = rubric_text(self.criteria, intro="Evaluate the assistant's reply in the final_turn block, "
                             "given the conversation before it in the transcript block.")
        return build_prompt(blocks, rubric)

    def conversation_prompt(self, case: Case, conv: list[dict[str, Any]]) -> PromptParts:
        blocks = [("transcript", transcript(conv))]
        if case.reference is not None:
            blocks.append(("reference", prompt_text(case.reference)))
        rubric = rubric_text(self.criteria, intro="Evaluate the assistant's side of the whole conversation in "
                             "the transcript block.")
        return build_prompt(blocks, rubric)

    def request(self, case: Case, output: Any = None) -> JudgeRequest:
        case = with_output(case, output if output is not None else case.output)
        try:
            return self.request_for(self.prompts(case)[0][1])
        except ConversationError:  # the run makes it an error without a call; a dry run still counts one
            return self.request_for(self.conversation_prompt(case, []))

    def prompts(self, case: Case) -> list[tuple[int | None, PromptParts, dict[str, Any]]]:
        conv = conversation_of(case)
        details = {"turns": len(conv)}
        if self.mode == "conversation":
            return [(None, self.conversation_prompt(case, conv), details)]
        assistant_at = [i for i, t in enumerate(conv) if t["role"] == "assistant"]
        if self.mode == "final":
            return [(None, self.final_prompt(case, conv, assistant_at[-1]), details)]
        return [(i + 1, self.final_prompt(case, conv, i), details) for i in assistant_at]
