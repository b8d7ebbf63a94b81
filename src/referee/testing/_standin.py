"""The stand-ins over the wire: responders for :class:`FakeLLMServer` that give the stand-in judge's verdicts and
the stand-in model's answers (:mod:`referee.providers._standin`, the same as ``--provider standin``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..errors import JudgeCannotGrade
from ..providers._standin import judge_reply, looks_like_judge, model_reply
from ._wire import WireRequest


def standin_judge(req: WireRequest) -> str:
    """The stand-in judge over the wire (``python -m referee.testing --standin``): a verdict that follows the
    case (token overlap with the reference, 0 for refusals), in the request's schema, every rationale saying
    "stand-in judge". A request that asks for no verdict gets the stand-in model's answer (no replies: it says
    it has none). Deterministic: the same request, the same reply."""
    return standin_responder()(req)


def standin_responder(replies: Mapping[str, str] | None = None, *,
                      model_only: bool = False) -> Callable[[WireRequest], str]:
    """The stand-ins as one responder: verdicts for judge requests, and answers (from ``replies``, input text or
    case id -> output, see :func:`referee.providers._standin.load_replies`) for the rest; ``model_only``
    answers every request as the model."""
    table = dict(replies or {})

    def respond(req: WireRequest) -> str:
        if not model_only and (req.schema or looks_like_judge(req.prompt_text)):
            try:
                return judge_reply(req.last_user_text, req.schema)
            except JudgeCannotGrade as exc:  # no verdict to give: its reason, which no parser takes for one
                return str(exc)
        return model_reply(req.last_user_text, table, req.model)

    return respond
