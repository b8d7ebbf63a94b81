"""The stand-ins: a local judge and a local model to try referee without a key. They are NOT models.

**The stand-in judge** reads the judged text and the reference out of the prompt's delimited blocks (referee's
``<output-NONCE>`` blocks, or a user template's own ``<answer>`` / ``<policy>`` tags), scores by token overlap
with the reference (token F1 over content words), gives 0 to refusals and "I don't know" answers, at most 0.3 to an answer
that gives another number where the reference gives one, halves the score
of an answer far too short or too long for its reference, and replies in exactly the shape the request's schema
asks for (template, rubric with quotes copied from the judged text, pairwise, gold, criteria judges, red team; the
claim-level RAG metrics' claims, support and relevance: ``_standin_claims.py``; ``referee synth``'s cases, critic and
answerable requests: ``_standin_synth.py``).
Every rationale says "stand-in judge". Same request, same verdict.

**The stand-in model** answers prompts that ask for no verdict: from a replies file (JSONL objects with ``input``
and ``output``, matched against the prompt's text) or, with none, with a reply saying it has none. A model name
containing ``worse`` gets the first half of each reply (a degraded model, to see a regression).

Both run in this process as ``--provider standin`` (no server, no key), and over the wire in the local server
(``python -m referee.testing --standin``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..errors import UserError
from ._base import Completion, JudgeRequest, Provider

LABEL = "stand-in judge"
RULES = "1"
"""The version of the stand-in's rules, part of its cache identity: a cached verdict of older rules is not reused."""
REPLIES_ENV = "REFEREE_STANDIN_REPLIES"
"""A replies file for the stand-in model when ``--provider standin`` is used as a target."""

_TAG = r"[A-Za-z][\w.:]*(?:-[\w]+)*"
_BLOCK = re.compile(r"<(" + _TAG + r")((?:\s[^<>]*)?)>[ \t]*\n?(.*?)\n?[ \t]*</\1\s*>", re.DOTALL)
_NONCE = re.compile(r"-[0-9a-f]{12}$")
_WORD = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*")

_JUDGED = ("output", "final_output", "answer", "response", "generated", "final_turn", "completion", "reply",
           "prediction", "actual_output")
_PAIR = (("response_1", "output_a", "answer_a", "response_a"), ("response_2", "output_b", "answer_b", "response_b"))
_REFERENCE = ("reference", "expected", "expected_output", "gold", "policy", "ideal", "ideal_answer", "truth",
              "ground_truth", "target", "label", "correct_answer", "reference_answer")
_INPUT = ("input", "question", "task", "transcript", "conversation", "trajectory", "tool_result", "attack", "case",
          "instructions", "rubric", "system", "context", "query", "prompt", "data", "turn", "document", "source",
          "verdict")

_STOP = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being it its this that these "
    "those i you we they he she me my your our their them us do does did so than then there here can could will "
    "would should may might shall have has had not no yes just also very".split())

_REFUSAL = re.compile(
    r"\b(i\s*(?:do\s*not|don'?t|dont)\s+know|i\s*(?:am|'m)\s+not\s+sure|no\s+idea|i\s*(?:can(?:no|')?t|cannot|"
    r"won'?t|will\s+not|am\s+unable\s+to|'m\s+unable\s+to|am\s+not\s+able\s+to)\s+(?:help|answer|assist|provide|"
    r"do\s+that|comply|share|disclose|process)|(?:i\s+)?(?:must|have\s+to)\s+(?:decline|refuse)|"
    r"as\s+an\s+ai\b|unable\s+to\s+(?:answer|help)|not\s+able\s+to\s+(?:answer|help)|n/?a$)",
    re.IGNORECASE)


@dataclass(frozen=True)
class Block:
    name: str
    """The tag's name without the nonce, lower-cased."""
    text: str


def blocks_of(prompt: str) -> list[Block]:
    """The delimited blocks of a prompt, in order (nested tag-like text is escaped by the prompt guard)."""
    out = []
    for m in _BLOCK.finditer(prompt):
        name = _NONCE.sub("", m.group(1)).lower()
        out.append(Block(name, m.group(3)))
    return out


def _plain(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">")


def tokens(text: str) -> list[str]:
    """Content words, lower-cased (stop words left out: overlap in 'the' and 'is' says nothing)."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def token_f1(candidate: str, reference: str) -> float:
    """The token F1 of ``candidate`` against ``reference`` (SQuAD's measure, over content words)."""
    c, r = tokens(candidate), tokens(reference)
    if not c or not r:
        return 0.0
    common: dict[str, int] = {}
    for w in r:
        common[w] = common.get(w, 0) + 1
    overlap = 0
    for w in c:
        if common.get(w, 0) > 0:
            overlap += 1
            common[w] -= 1
    if not overlap:
        return 0.0
    p, rec = overlap / len(c), overlap / len(r)
    return 2 * p * rec / (p + rec)


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d+(?:\.\d+)?", text.replace(",", "")))


def is_refusal(text: str) -> bool:
    """A refusal or an "I don't know"-style answer (short texts only: a long answer that mentions one is judged
    on its content)."""
    t = text.strip()
    if not t:
        return True
    return len(tokens(t)) <= 40 and _REFUSAL.search(t) is not None


@dataclass(frozen=True)
class Grade:
    """The stand-in's grade of one text: the score (0-1) and the rationale that says how it was reached."""

    score: float
    rationale: str


def grade_text(judged: str, reference: str | None, question: str | None = None, *,
               refusal_expected: bool = False) -> Grade:
    """Grade ``judged``: token F1 with the reference (scaled so 0.6 and above is full marks; paraphrases rarely
    share more), 0 for refusals, half for a length far from the reference's; without a reference, 0.6 to 1 by
    how many of the question's words the answer takes up (the question: the input, or the transcript before a
    turn)."""
    judged = _plain(judged)
    if refusal_expected:
        if is_refusal(judged) or re.search(r"\b(can(?:no|')?t|cannot|won'?t|not able|unable|decline|refuse|sorry)\b",
                                           judged, re.IGNORECASE):
            return Grade(1.0, f"{LABEL}: the response declines, as the case expects")
        return Grade(0.0, f"{LABEL}: the response does not decline, and the case expects it to")
    if is_refusal(judged):
        return Grade(0.0, f"{LABEL}: a refusal or \"I don't know\" answer scores 0")
    n = len(tokens(judged))
    if reference is not None and tokens(reference):
        f1 = token_f1(judged, reference)
        score = min(1.0, f1 / 0.6)
        why = f"{LABEL}: token overlap {f1:.2f} with the reference (score {score:.2f})"
        m = len(tokens(reference))
        wrong, missing = sorted(_numbers(judged) - _numbers(reference)), sorted(_numbers(reference) - _numbers(judged))
        if wrong and missing:  # another number where the reference gives one: the classic wrong answer
            score = min(score, 0.3)
            why += f"; gives {', '.join(wrong)} where the reference says {', '.join(missing)}: at most 0.30"
        if n < max(2, m // 4) or n > 6 * m + 20:
            score /= 2
            why += f"; {n} words against the reference's {m}: halved to {score:.2f}"
    elif question is not None and tokens(question):
        q = set(tokens(question))
        cover = len(q & set(tokens(judged))) / len(q)
        score = 0.6 + 0.4 * min(1.0, 2 * cover)  # on topic when it takes up the question's words
        why = f"{LABEL}: no reference; the answer shares {cover:.2f} of the question's words (score {score:.2f})"
        if n < 3:
            score /= 2
            why += f"; only {n} words, score halved"
    else:
        score = 0.5 if n >= 3 else 0.25
        why = f"{LABEL}: nothing to compare with; {n} words"
    return Grade(round(score, 2), why)


@dataclass(frozen=True)
class Reading:
    """What the stand-in reads in a judge prompt."""

    judged: str
    reference: str | None
    question: str | None
    pair: tuple[str, str] | None = None
    refusal_expected: bool = False
    trajectory: str | None = None


def _first(blocks: list[Block], names: tuple[str, ...]) -> Block | None:
    for b in blocks:
        if b.name in names:
            return b
    for b in blocks:
        if b.name.startswith(names):
            return b
    return None


def read_prompt(prompt: str) -> Reading:
    """The judged text, the reference and the question of a judge prompt, from its delimited blocks."""
    blocks = [b for b in blocks_of(prompt) if b.text.strip()]
    a, b = _first(blocks, _PAIR[0]), _first(blocks, _PAIR[1])
    judged = _first(blocks, _JUDGED)
    ref = _first(blocks, _REFERENCE)
    known = {*_JUDGED, *_PAIR[0], *_PAIR[1], *_INPUT}
    if ref is None:  # a user's template names its reference its own way: the one block that is none of the others
        rest = [x for x in blocks if x.name not in known and not x.name.startswith(tuple(known))]
        ref = rest[0] if rest else None
    question = _first(blocks, ("input", "question", "task", "query", "prompt", "attack", "transcript"))
    if judged is None:
        judged = _first(blocks, ("transcript", "conversation", "trajectory")) or (blocks[-1] if blocks else None)
    refusal = bool(re.search(r"the agent should refuse", prompt, re.IGNORECASE))
    traj = _first(blocks, ("trajectory",))
    return Reading(judged=judged.text if judged else prompt, reference=ref.text if ref else None,
                   question=question.text if question else None,
                   pair=(a.text, b.text) if a and b else None, refusal_expected=refusal,
                   trajectory=traj.text if traj else None)


_STEP = re.compile(r"^\s*\d+\.\s+([\w.-]+)\((.*)\)\s+->\s+(.*)$")
_DESTRUCTIVE = re.compile(r"^(delete|drop|remove|destroy|wipe|purge)_?", re.IGNORECASE)
_ADMITS = re.compile(r"\b(error|fail|failed|unable|could not|couldn't|sorry|unavailable|try again|later)\b",
                     re.IGNORECASE)


def trajectory_grades(reading: Reading, outcome: Grade) -> dict[str, Grade]:
    """Per-criterion grades of an agent's steps (``N. tool(args) -> result`` lines): a tool that destroys
    something the input never asked to, repeated identical calls, calls that failed on their arguments, and a
    final answer claiming success after a failed call that was never retried."""
    if not reading.trajectory:
        return {}
    steps = [m.groups() for m in map(_STEP.match, reading.trajectory.splitlines()) if m]
    ask = (reading.question or "").lower()
    verbs = {t: m.group(1).lower() for t, _, _ in steps if (m := _DESTRUCTIVE.match(t))}
    destroyed = [t for t, verb in verbs.items() if verb not in ask]
    done: set[tuple[str, str]] = set()
    repeats = 0  # a call made again after the same call succeeded (a retry after an error is no waste)
    for t, a, r in steps:
        repeats += (t, a) in done
        if not r.startswith("ERROR"):
            done.add((t, a))
    errors = [(t, a) for t, a, r in steps if r.startswith("ERROR")]
    arg_errors = [t for t, _a, r in steps if r.startswith("ERROR") and re.search(
        r"invalid|exceed|not found|unknown|missing|wrong", r, re.IGNORECASE)]
    ok_after = {t for t, _, r in steps if not r.startswith("ERROR")}
    unhandled = [t for t, _ in errors if t not in ok_after]
    out: dict[str, Grade] = {}
    out["tool_selection"] = (Grade(0.2, f"{LABEL}: calls {', '.join(destroyed)}, which the input does not ask for")
                             if destroyed else Grade(1.0, f"{LABEL}: no tool beyond what the input asks for"))
    out["argument_correctness"] = (
        Grade(0.5, f"{LABEL}: {len(arg_errors)} call(s) failed on their arguments ({', '.join(arg_errors)})")
        if arg_errors else Grade(1.0, f"{LABEL}: no call failed on its arguments"))
    eff = max(0.0, 1.0 - 0.25 * repeats)
    out["step_efficiency"] = Grade(round(eff, 2), f"{LABEL}: {len(steps)} step(s), {repeats} repeated identical "
                                                  f"call(s)")
    if unhandled and not _ADMITS.search(reading.judged):
        out["final_output_correctness"] = Grade(
            min(outcome.score, 0.2), f"{LABEL}: the answer does not mention that {', '.join(unhandled)} failed")
    else:
        out["final_output_correctness"] = outcome
    return out


def quote_of(text: str) -> str | None:
    """A short quote copied exactly from ``text`` (the longest plain line's first words), or None."""
    lines = [ln.strip() for ln in _plain(text).splitlines() if ln.strip()]
    if not lines:
        return None
    words = max(lines, key=len).split()
    clean = [w for w in words if "&" not in w]
    if len(clean) != len(words):
        words = clean[:1]
    quote = " ".join(words[:8])
    return quote[:90].rstrip() or None


# -- filling a schema with a grade ----------------------------------------------------------------------------

def _type(schema: Mapping[str, Any]) -> str:
    t = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    return str(t).lower()


class _Filler:
    def __init__(self, reading: Reading, grade: Grade, winner: str | None,
                 per_criterion: Mapping[str, Grade] | None = None) -> None:
        self.reading, self.grade, self.winner = reading, grade, winner
        self.per_criterion = per_criterion or {}

    def value(self, schema: Mapping[str, Any], key: str) -> Any:
        k = key.lower()
        s = self.grade.score
        if "enum" in schema and schema["enum"]:
            options = list(schema["enum"])
            if self.winner is not None and self.winner in options:
                return self.winner
            if all(isinstance(o, (int, float)) and not isinstance(o, bool) for o in options):
                lo, hi = min(options), max(options)
                want = lo + (hi - lo) * s
                return min(options, key=lambda o: (abs(o - want), -o))
            return options[0]
        t = _type(schema)
        if t == "object":
            props: Mapping[str, Any] = schema.get("properties") or {}
            return {name: (_Filler(self.reading, self.per_criterion[name], self.winner).value(sub, name)
                           if name in self.per_criterion else self.value(sub, name))
                    for name, sub in props.items()}
        if t == "array":
            if any(w in k for w in ("evidence", "quote")):
                q = quote_of(self.reading.judged)
                return [q] if q else []
            n = int(schema.get("minItems", 0))
            if "action" in k:
                items = [] if s >= 0.7 else [f"{LABEL}: bring the answer closer to the reference"]
                return items + [f"{LABEL}: item {i + 1}" for i in range(len(items), n)]
            return [self.value(schema.get("items") or {"type": "string"}, key) for _ in range(n)]
        if t in ("number", "integer"):
            lo = float(schema.get("minimum", 0.0))
            hi = float(schema.get("maximum", 1.0 if t == "number" else 5.0))
            x = lo + (hi - lo) * s
            return int(round(x)) if t == "integer" else round(x, 2)
        if t == "boolean":
            return s >= 0.5
        return self.grade.rationale


def _template_criteria(prompt: str) -> list[str]:
    """Criterion names from the JSON example a user's template shows (``{"correctness": {"score": ...}}``)."""
    names: list[str] = []
    for m in re.finditer(r'"([A-Za-z_][\w-]*)"\s*:\s*\{\s*"score"', prompt):
        if m.group(1) not in names:
            names.append(m.group(1))
    return names


def _graded(reading: Reading) -> tuple[Grade, str | None]:
    if reading.pair is None:
        return grade_text(reading.judged, reading.reference, reading.question,
                          refusal_expected=reading.refusal_expected), None
    g1 = grade_text(reading.pair[0], reading.reference, reading.question)
    g2 = grade_text(reading.pair[1], reading.reference, reading.question)
    if abs(g1.score - g2.score) < 0.05:
        return Grade(0.5, f"{LABEL}: the responses score alike ({g1.score:.2f} and {g2.score:.2f})"), "tie"
    first = g1.score > g2.score
    basis = "is closer to the reference" if reading.reference is not None else "takes up more of the question"
    return (Grade(1.0 if first else 0.0,
                  f"{LABEL}: response {'1' if first else '2'} {basis} ({g1.score:.2f} against {g2.score:.2f})"),
            "response_1" if first else "response_2")


def judge_reply(prompt: str, schema: Mapping[str, Any] | None) -> str:
    """The stand-in judge's reply (a JSON object) to a judge prompt, in the shape ``schema`` asks for (without a
    schema: a template verdict with the criteria the prompt's example names)."""
    from ._standin_claims import claims_reply, is_claims_schema
    from ._standin_synth import is_synth_schema, synth_reply

    if schema and is_claims_schema(schema):
        return claims_reply(prompt, schema, tokens=tokens, is_refusal=is_refusal)
    if schema and is_synth_schema(schema):
        return synth_reply(prompt, schema, tokens=tokens)
    reading = read_prompt(prompt)
    grade, winner = _graded(reading)
    filler = _Filler(reading, grade, winner, trajectory_grades(reading, grade))
    if schema:
        out = filler.value(schema, "")
        extra = schema.get("additionalProperties")
        if isinstance(out, dict) and isinstance(extra, dict) and extra:
            for name in _template_criteria(prompt) or ["quality"]:
                out.setdefault(name, filler.value(extra, name))
            if "overall_score" in out:  # last, as a judge writes it
                out["overall_score"] = out.pop("overall_score")
        return json.dumps(out)
    if winner is not None or re.search(r'"winner"', prompt):
        return json.dumps({"winner": winner or "tie", "rationale": grade.rationale})
    crit = {name: {"score": grade.score, "rationale": grade.rationale}
            for name in _template_criteria(prompt) or ["quality"]}
    return json.dumps({**crit, "overall_score": grade.score})


# -- the stand-in model -----------------------------------------------------------------------------------------

def load_replies(path: str | Path) -> dict[str, str]:
    """A replies file: one JSON object a line with ``input`` and ``output`` (``id`` too, for the server's replies
    keyed by case id)."""
    p = Path(path)
    out: dict[str, str] = {}
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{p}: cannot read the stand-in replies file: {exc}") from exc
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise UserError(f"{p}:{n}: not a JSON object: {exc}") from exc
        if not isinstance(obj, dict) or not isinstance(obj.get("output"), str):
            raise UserError(f"{p}:{n} output: each line needs an 'output' string")
        keys = [obj.get(k) for k in ("input", "id")]
        if not any(isinstance(k, str) and k for k in keys):
            raise UserError(f"{p}:{n} input: each line needs an 'input' (or 'id') string")
        for k in keys:
            if isinstance(k, str) and k:
                out[k] = obj["output"]
    return out


def model_reply(prompt: str, replies: Mapping[str, str], model: str = "") -> str:
    """The stand-in model's answer to ``prompt``: the reply recorded for the input it contains (the longest
    match), degraded to its first half for a model named ``worse``."""
    found = replies.get(prompt.strip())
    if found is None:  # the input inside a filled prompt template (or a case id it mentions), as a whole word
        keys = sorted((k for k in replies if k in prompt
                       and re.search(r"(?<!\w)" + re.escape(k) + r"(?!\w)", prompt)), key=len, reverse=True)
        found = replies[keys[0]] if keys else None
    if found is None:
        return "(stand-in model: no recorded reply for this input; give it a replies file or use a real model)"
    if "worse" in model.lower():
        words = found.split()
        return " ".join(words[: max(1, len(words) // 2)])
    return found


def looks_like_judge(text: str) -> bool:
    """Whether a prompt asks for a verdict (referee's judge prompts and the usual judge templates)."""
    return bool(re.search(r"Reply with (?:only|JSON only|the JSON)|overall_score|\"winner\"|\bjudge\b", text,
                          re.IGNORECASE))


def is_judge_request(request: JudgeRequest) -> bool:
    """A request for a verdict (a schema, or a judge's prompt), not for an answer."""
    if request.response_schema:
        return True
    return looks_like_judge("\n".join(m.content for m in request.messages))


class StandinProvider(Provider):
    """``--provider standin``: the stand-in judge (and the stand-in model for targets), in this process."""

    name: ClassVar[str] = "standin"
    default_model: ClassVar[str] = "standin"
    key_env_vars: ClassVar[tuple[str, ...]] = ()

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        super().__init__(model, base_url=base_url, timeout=timeout)
        replies = base_url if base_url and not base_url.startswith(("http://", "https://")) else \
            os.environ.get(REPLIES_ENV)
        self._replies = load_replies(replies) if replies else {}

    def describe(self) -> dict[str, Any]:
        # The replies are part of the model's identity: another file must not be served from the cache.
        digest = hashlib.sha256(json.dumps(sorted(self._replies.items())).encode()).hexdigest()[:16]
        return {**super().describe(), "standin_rules": RULES, "replies": digest if self._replies else None}

    async def complete(self, request: JudgeRequest) -> Completion:
        user = "\n".join(m.content for m in request.messages if m.role == "user")
        if is_judge_request(request):
            text = judge_reply(user, request.response_schema)
        else:
            text = model_reply(request.messages[-1].content if request.messages else "", self._replies,
                               self.model)
        return Completion(text=text, input_tokens=len(user) // 4, output_tokens=len(text) // 4, model=self.model,
                          latency_ms=0.0)
