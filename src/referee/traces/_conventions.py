"""The names of the OpenTelemetry GenAI evaluation event, in one place: the convention is still marked
*development*, so a rename upstream is a change here only (GenAI semantic conventions, ``gen_ai.evaluation.result``
event, as of semantic-conventions v1.41.0 / semantic-conventions-genai v0.1.0)."""

EVALUATION_EVENT = "gen_ai.evaluation.result"
"""The event (an OTLP log record's ``event_name``) carrying one evaluation of one span."""
EVALUATION_NAME = "gen_ai.evaluation.name"
"""The metric's name (the evaluator's name in the suite)."""
SCORE_VALUE = "gen_ai.evaluation.score.value"
"""The score, a double; absent when the case was not scored."""
SCORE_LABEL = "gen_ai.evaluation.score.label"
"""``pass`` or ``fail`` (the evaluator's verdict at its threshold); absent when not scored."""
EXPLANATION = "gen_ai.evaluation.explanation"
"""The judge's reason (bounded in length)."""
ERROR_TYPE = "error.type"
"""Why a case was not scored (``unscored``, ``error`` or a skip reason); never sent with a score."""
RESPONSE_ID = "gen_ai.response.id"
"""The evaluated model response's id, when the span recorded one."""

__all__ = ["ERROR_TYPE", "EVALUATION_EVENT", "EVALUATION_NAME", "EXPLANATION", "RESPONSE_ID", "SCORE_LABEL",
           "SCORE_VALUE"]
