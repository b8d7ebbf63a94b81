"""A panel of judges on any LLM evaluator: :class:`PanelEvaluator` runs one evaluator once per judge and
combines the verdicts by a rule (:func:`combine_panel`).

**Rules.** Over the judges that graded the case (a judge whose result is unscored or an error is left out):

- ``majority``: pass/fail by the judges' votes (their own verdicts, else ``score >= threshold``); pairwise
  winners by the plurality of ``a`` and ``b`` (tie votes abstain). The score is the mean of the judges on the
  winning side (pairwise: 1, 0 or 0.5 for a, b, tie).
- ``mean``, ``median``, ``min``: that statistic of the scores; passes at ``threshold``. Pairwise: the winner is
  the side the statistic leans to (``min`` has no meaning for a winner and is refused for ``pairwise``).
- ``all_pass``: passes only when every graded judge passes, scored by the lowest score; pairwise: the winner
  all named, else a tie.
- ``weighted``: the mean score with each judge's ``weight`` (pairwise: a weighted plurality); passes at
  ``threshold``.

**Quorum.** At least ``quorum`` judges must grade (default: a strict majority of the panel, ``k // 2 + 1``);
below it the case is unscored (an error when every judge failed with an error), never the minority's vote.

**Escalation** (``escalate_below``, ``escalate_to``): a case whose panel agreement is below the threshold
``referee calibrate --target-agreement`` chose, or with no verdict, goes to a stronger judge, whose verdict
replaces the panel's (flag ``escalated``), or is left unscored for a human (flag ``needs_human``).

**Ties** (an even pass/fail or a/b split under ``majority`` or ``weighted``): ``tie="unscored"`` (default) makes
the case unscored, ``strict`` makes it a fail (pairwise: a tie), ``first`` takes the vote of the first judge
listed (of those that graded).

The row keeps every judge's own result, cost and latency in ``details["panel"]``
(:mod:`referee.results._panel`); its ``usage`` and ``cost_usd`` are the sums, its ``latency_ms`` the slowest
judge (they run concurrently). Each judge is called through its own client, whose calls and cost count in
the run's totals (:meth:`referee.runner.JudgeClient.add_member`).
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ..errors import OptionError, UserError
from ..providers._base import JudgeRequest
from ..results._check import CheckResult
from ..results._panel import REASON_CHARS, PanelRecord, PanelVote
from ._base import JudgeSettings, LLMEvaluator

if TYPE_CHECKING:
    from ..cases._case import Case
    from ..providers._base import Provider
    from ..runner._client import JudgeClient

RULES = ("majority", "mean", "median", "min", "all_pass", "weighted")
TIES = ("unscored", "strict", "first")
Rule = Literal["majority", "mean", "median", "min", "all_pass", "weighted"]
Tie = Literal["unscored", "strict", "first"]
DEFAULT_THRESHOLD = 0.7
"""The pass mark of the score rules when the evaluator has none of its own (a suite's default threshold)."""

_MEMBER_FIELDS = ("provider", "model", "base_url", "weight", "timeout", "max_retries", "input_price_per_mtok",
                  "output_price_per_mtok")


@dataclass(frozen=True)
class PanelMember:
    """One judge of a panel: which provider and model (``"openai:gpt-4o-mini"`` or a mapping with these
    fields), its weight under ``weighted``, and how to call it. Sampling settings (max_tokens, temperature,
    seed, cache) are the run's."""

    provider: str | Provider
    model: str | None = None
    base_url: str | None = None
    weight: float = 1.0
    timeout: float = 60.0
    max_retries: int = 4
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.provider, str):
            name, sep, model = self.provider.partition(":")
            if sep:
                if self.model is not None and model and model != self.model:
                    raise UserError(f"panel judge {self.provider!r} with model {self.model!r}: two models")
                object.__setattr__(self, "provider", name)
                object.__setattr__(self, "model", self.model or model or None)
            if not self.provider:
                raise UserError("panel judge: empty provider name")
        for name in ("weight", "timeout", "input_price_per_mtok", "output_price_per_mtok"):
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0 or (
                    name == "timeout" and v == 0):
                raise UserError(f"panel judge {self.label}: {name} must be a finite number >= 0, got {v!r}")

    @property
    def label(self) -> str:
        name = self.provider if isinstance(self.provider, str) else self.provider.name
        model = self.model if isinstance(self.provider, str) else (self.model or self.provider.model)
        return f"{name}:{model}" if model else name

    @classmethod
    def parse(cls, value: Any) -> PanelMember:
        """A member from ``"provider:model"``, a mapping of the fields, a :class:`PanelMember`, a Provider, or any
        object with ``provider`` and ``model`` attributes (a :class:`referee.Judge`)."""
        if isinstance(value, PanelMember):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - set(_MEMBER_FIELDS))
            if unknown:
                raise UserError(f"panel judge: unknown field(s) {', '.join(unknown)} (known: "
                                f"{', '.join(_MEMBER_FIELDS)})")
            if "provider" not in value:
                raise UserError("panel judge: a mapping needs 'provider'")
            return cls(**dict(value))
        from ..providers._base import Provider

        if isinstance(value, Provider):
            return cls(value)
        if hasattr(value, "provider") and hasattr(value, "model"):
            return cls(**{f: getattr(value, f) for f in _MEMBER_FIELDS if hasattr(value, f)})
        raise UserError(f"panel judge: expected 'provider:model', a mapping or a Judge, got {type(value).__name__}")

    def client(self, run: JudgeClient) -> JudgeClient:
        """This judge's client: the run's own when it is the same provider and model, else a new one sharing the
        run's cache and counting in its totals."""
        from ..runner._client import JudgeClient, RetryPolicy

        if isinstance(self.provider, str):
            # A judge of the run's provider without a URL of its own goes where the run's judge goes (a proxy,
            # a local server): the key is that provider's, sent to the endpoint the user chose for it.
            same = self.provider == run.provider.name
            base_url = self.base_url or (getattr(run.provider, "base_url", None) if same else None)
            if same and (self.model or None) == (run.provider.model or None) and (
                    base_url == getattr(run.provider, "base_url", None)):
                return run
            from ..errors import JudgeNeedsModel
            from ..providers import get_provider

            if self.provider in ("ollama", "vllm", "lmstudio") and not self.model:
                raise JudgeNeedsModel(self.provider)
            provider = get_provider(self.provider, self.model, base_url=base_url, timeout=self.timeout)
        else:
            if self.provider is run.provider:
                return run
            provider = self.provider
        c = JudgeClient(provider, cache=run.cache, retry=RetryPolicy(max_retries=self.max_retries),
                        input_price_per_mtok=self.input_price_per_mtok,
                        output_price_per_mtok=self.output_price_per_mtok)
        run.add_member(c)
        return c


def members_of(judges: Sequence[Any]) -> tuple[PanelMember, ...]:
    """Panel members from a list of judges (see :meth:`PanelMember.parse`); an empty list is refused."""
    if isinstance(judges, str | Mapping) or not isinstance(judges, Sequence) or not judges:
        raise UserError("a panel needs a non-empty list of judges")
    return tuple(PanelMember.parse(j) for j in judges)


@dataclass
class PanelEvaluator(LLMEvaluator):
    """``inner`` judged once by each judge of ``members``, combined by ``rule`` (module text)."""

    name: ClassVar[str] = "panel"
    inner: LLMEvaluator = field(default=None)  # type: ignore[assignment]
    members: tuple[PanelMember, ...] = ()
    rule: Rule = "majority"
    quorum: int | None = None
    tie: Tie = "unscored"
    threshold: float | None = None
    """The pass mark of the score rules and of votes without a verdict (default: the evaluator's own
    ``threshold``, else 0.7)."""
    escalate_below: float | None = None
    """Escalate a case whose panel agreement (the share of graded judges voting with the verdict) is below
    this, as ``referee calibrate --target-agreement`` chooses it; a case with no verdict (tied, below quorum)
    is escalated too. To ``escalate_to`` when given, else the row is unscored and flagged ``needs_human``."""
    escalate_to: Any = None
    """A stronger judge (``provider:model`` or a mapping) whose verdict replaces the panel's on escalated
    cases."""
    _bound: list[LLMEvaluator] = field(init=False, repr=False, default_factory=list, compare=False)
    _stronger: LLMEvaluator | None = field(init=False, repr=False, default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.inner, LLMEvaluator):
            raise OptionError("panel", f"a panel judges an LLM evaluator, not {type(self.inner).__name__}")
        if isinstance(self.inner, PanelEvaluator):
            raise OptionError("panel", "a panel of panels is not supported")
        self.members = members_of(list(self.members))
        if self.rule not in RULES:
            raise OptionError("panel.rule", f"{self.rule!r} is not one of {', '.join(RULES)}")
        if self.tie not in TIES:
            raise OptionError("panel.tie", f"{self.tie!r} is not one of {', '.join(TIES)}")
        if self.rule == "min" and self.inner.name == "pairwise":
            raise OptionError("panel.rule", "min has no meaning for a pairwise winner (use majority, mean, median, "
                                            "all_pass or weighted)")
        if self.quorum is not None and (isinstance(self.quorum, bool) or not isinstance(self.quorum, int)
                                        or not 1 <= self.quorum <= len(self.members)):
            raise OptionError("panel.quorum", f"{self.quorum!r} is not a whole number from 1 to the "
                                              f"{len(self.members)} judges")
        if self.threshold is not None and not (isinstance(self.threshold, int | float)
                                               and 0 <= self.threshold <= 1):
            raise OptionError("panel.threshold", f"{self.threshold!r} is not in 0-1")
        if self.escalate_below is not None and (isinstance(self.escalate_below, bool) or not isinstance(
                self.escalate_below, int | float) or not 0 < self.escalate_below <= 1):
            raise OptionError("panel.escalate_below", f"{self.escalate_below!r} is not in (0, 1]")
        if self.escalate_to is not None:
            self.escalate_to = PanelMember.parse(self.escalate_to)

    # What the rest of the run reads of an evaluator: the inner one's identity.
    @property
    def row_evaluator(self) -> str:
        return self.inner.row_evaluator

    @property
    def template_hash(self) -> str:
        return str(getattr(self.inner, "template_hash", "") or "")

    @property
    def category(self) -> str | None:
        return getattr(self.inner, "category", None)

    @property
    def needed(self) -> int:
        """Judges that must grade a case for a verdict."""
        return self.quorum if self.quorum is not None else len(self.members) // 2 + 1

    @property
    def pass_mark(self) -> float:
        if self.threshold is not None:
            return float(self.threshold)
        own = getattr(self.inner, "threshold", None)
        return float(own) if isinstance(own, int | float) and not isinstance(own, bool) else DEFAULT_THRESHOLD

    def bind(self, settings: JudgeSettings) -> None:
        super().bind(settings)
        run = settings.client
        self._bound = [self.inner.bound(JudgeSettings(
            client=None if run is None else m.client(run), max_tokens=settings.max_tokens,
            temperature=settings.temperature, seed=settings.seed, use_cache=settings.use_cache))
            for m in self.members]
        self._stronger = None
        if isinstance(self.escalate_to, PanelMember):
            self._stronger = self.inner.bound(JudgeSettings(
                client=None if run is None else self.escalate_to.client(run), max_tokens=settings.max_tokens,
                temperature=settings.temperature, seed=settings.seed, use_cache=settings.use_cache))

    def with_defaults(self, **defaults: Any) -> LLMEvaluator:
        import dataclasses

        return dataclasses.replace(self, inner=self.inner.with_defaults(**defaults))

    def request(self, case: Case, output: Any) -> JudgeRequest:
        return self.inner.request(case, output)

    def call_requests(self, case: Case, output: Any) -> list[JudgeRequest]:
        """Every judge's requests: the evaluator's, once per judge (dry runs count them all). Each carries its
        judge's name, so that requests alike in text but sent to different judges count as different calls."""
        import dataclasses

        evs = self._bound or [self.inner] * len(self.members)
        return [PanelRequest(**{f.name: getattr(r, f.name) for f in dataclasses.fields(JudgeRequest)}, judge=m.label)
                for m, ev in zip(self.members, evs, strict=True) for r in ev.call_requests(case, output)]

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        missing = self.unbound()
        if missing is not None:
            return missing
        results = await asyncio.gather(*(_timed(ev, case, output) for ev in self._bound))
        res = combine_panel([r for r, _ in results], self.members, rule=self.rule, quorum=self.needed,
                            tie=self.tie, threshold=self.pass_mark, latencies=[ms for _, ms in results])
        if self.escalate_below is None and self.escalate_to is None:
            return res
        agreement = res.details["panel"]["agreement"]
        low = res.status != "scored" or agreement is None or (
            self.escalate_below is not None and agreement < self.escalate_below)
        if not low:
            return res
        return await self._escalate(res, case, output)

    async def _escalate(self, res: CheckResult, case: Case, output: Any) -> CheckResult:
        """The stronger judge's verdict in place of the panel's, or no verdict: a case for a human."""
        record = res.details["panel"]
        why = ("the panel gave no verdict" if res.status != "scored" else
               f"panel agreement {record['agreement']:.2f} is below {self.escalate_below:g}")
        if self._stronger is not None and isinstance(self.escalate_to, PanelMember):
            er, ms = await _timed(self._stronger, case, output)
            record["escalated"] = _panel_vote(self.escalate_to, er, ms).__dict__
            if er.usage is not None:
                res.usage = er.usage if res.usage is None else res.usage + er.usage
            if er.cost_usd is not None:
                res.cost_usd = round((res.cost_usd or 0.0) + er.cost_usd, 8)
            if er.status == "scored":
                out = CheckResult(score=er.score, passed=er.passed, winner=er.winner, criteria=er.criteria,
                                  reason=f"escalated to {self.escalate_to.label} ({why}): {er.reason}"[:1000],
                                  usage=res.usage, cost_usd=res.cost_usd, judge=res.judge,
                                  latency_ms=(res.latency_ms or 0.0) + ms, details=res.details,
                                  flags=[*res.flags, "escalated"])
                return out
            why += f"; {self.escalate_to.label} could not grade it either ({er.problem})"
        record["needs_human"] = True
        return CheckResult(score=None, status="unscored", reason=f"needs a human: {why}",
                           error_message=f"needs a human: {why}", usage=res.usage, cost_usd=res.cost_usd,
                           judge=res.judge, latency_ms=res.latency_ms, details=res.details,
                           flags=[*res.flags, "needs_human"])


@dataclass(frozen=True)
class PanelRequest(JudgeRequest):
    """A panel judge's request as a dry run counts it: the evaluator's request and the judge it goes to."""

    judge: str = ""

    def cache_material(self) -> dict[str, Any]:
        return {**super().cache_material(), "judge": self.judge}


async def _timed(ev: LLMEvaluator, case: Case, output: Any) -> tuple[CheckResult, float]:
    t0 = time.perf_counter()
    try:
        res = await ev.evaluate_async(case, output)
    except Exception as exc:  # noqa: BLE001 - one judge's failure is its vote missing, not a stopped panel
        from ..runner._engine import is_fatal

        if is_fatal(exc):
            raise  # a bad key or unknown model repeats for every case: stop the run, as with one judge
        res = CheckResult.error(f"{type(exc).__name__}: {exc}")
    if not isinstance(res, CheckResult):
        res = CheckResult.error(f"returned {type(res).__name__}, not a CheckResult")
    elif res.status == "scored" and (res.score is None or not 0.0 <= res.score <= 1.0 or res.score != res.score):
        res = CheckResult.error(f"returned score {res.score!r}; scores are 0-1")
    return res, (time.perf_counter() - t0) * 1000


_WINNER_SCORE = {"a": 1.0, "b": 0.0, "tie": 0.5}


def _lean(x: float) -> Literal["a", "b", "tie"]:
    return "a" if x > 0.5 else "b" if x < 0.5 else "tie"


def _vote(r: CheckResult, mark: float) -> bool:
    assert r.score is not None
    return r.passed if r.passed is not None else r.score >= mark


def combine_panel(results: Sequence[CheckResult], members: Sequence[PanelMember], *, rule: str = "majority",
                  quorum: int | None = None, tie: str = "unscored", threshold: float = DEFAULT_THRESHOLD,
                  latencies: Sequence[float | None] | None = None) -> CheckResult:
    """The panel's result from each judge's (in ``members`` order), by ``rule``, ``quorum`` and ``tie``."""
    if len(results) != len(members) or not results:
        raise ValueError("one result per panel judge")
    k = len(members)
    need = quorum if quorum is not None else k // 2 + 1
    lat = list(latencies) if latencies is not None else [None] * k
    votes = [_panel_vote(m, r, ms) for m, r, ms in zip(members, results, lat, strict=True)]
    graded = [(i, r) for i, r in enumerate(results) if r.status == "scored" and r.score is not None]
    out = _totals(results, members, lat)
    record = PanelRecord(rule=rule, quorum=need, tie=tie, graded=len(graded), members=votes)

    def finish(res: CheckResult) -> CheckResult:
        res.usage, res.cost_usd, res.judge, res.latency_ms = out.usage, out.cost_usd, out.judge, out.latency_ms
        res.details = {"panel": record.to_dict()}
        if all("cached" in r.flags for r in results):
            res.flags = [*res.flags, "cached"]
        return res

    def unscored(why: str, status: Literal["unscored", "error"] = "unscored") -> CheckResult:
        problems = "; ".join(f"{v.judge} {v.status}: {v.error or v.reason or v.status}"[:200]
                             for v in votes if v.status != "scored")
        msg = why + (f" ({problems})" if problems else "")
        raw = next((r.raw_reply for r in results if r.raw_reply), None)
        return finish(CheckResult(score=None, status=status, reason=msg, error_message=msg, raw_reply=raw))

    if len(graded) < need:
        every_error = all(r.status == "error" for r in results)
        return unscored(f"panel below quorum: {len(graded)} of {k} judges graded, {need} needed",
                        "error" if every_error else "unscored")
    pairwise = any(r.winner is not None for _, r in graded)
    scores = [float(r.score) for _, r in graded if r.score is not None]
    weights = [members[i].weight for i, _ in graded]
    if pairwise:
        winners = [r.winner or _lean(float(r.score or 0.5)) for _, r in graded]
        if rule in ("majority", "weighted"):
            w = weights if rule == "weighted" else [1.0] * len(winners)
            a = sum(x for x, v in zip(w, winners, strict=True) if v == "a")
            b = sum(x for x, v in zip(w, winners, strict=True) if v == "b")
            winner: Literal["a", "b", "tie"]
            if a != b:
                winner = "a" if a > b else "b"
            else:
                record.tied = True
                if tie == "unscored":
                    return unscored(f"panel tied: {a:g} for a, {b:g} for b")
                winner = winners[0] if tie == "first" else "tie"
        elif rule == "all_pass":
            winner = winners[0] if len(set(winners)) == 1 else "tie"
        elif rule in ("mean", "median"):
            stat = statistics.fmean(scores) if rule == "mean" else statistics.median(scores)
            winner = _lean(stat)
        else:
            raise UserError("min has no meaning for a pairwise winner")
        record.agreement = sum(v == winner for v in winners) / len(winners)
        score = (statistics.fmean(scores) if rule == "mean" else statistics.median(scores) if rule == "median"
                 else _WINNER_SCORE[winner])
        res = CheckResult(score=round(score, 6), winner=winner,
                          reason=_reason(rule, winner, graded, members, votes))
        if len(set(winners)) > 1:
            res.flags = ["panel_split"]
        return finish(res)
    passes = [_vote(r, threshold) for _, r in graded]
    passed: bool
    if rule == "majority":
        n_pass, n_fail = sum(passes), len(passes) - sum(passes)
        if n_pass != n_fail:
            passed = n_pass > n_fail
        else:
            record.tied = True
            if tie == "unscored":
                return unscored(f"panel tied: {n_pass} pass, {n_fail} fail")
            passed = passes[0] if tie == "first" else False
        side = [s for s, p in zip(scores, passes, strict=True) if p == passed]
        score = statistics.fmean(side) if side else statistics.fmean(scores)
    elif rule == "all_pass":
        passed = all(passes)
        score = min(scores)
    else:
        if rule == "weighted":
            if sum(weights) <= 0:
                return unscored("panel: the graded judges' weights sum to 0")
            score = sum(w * s for w, s in zip(weights, scores, strict=True)) / sum(weights)
        elif rule == "mean":
            score = statistics.fmean(scores)
        elif rule == "median":
            score = statistics.median(scores)
        else:
            score = min(scores)
        passed = score >= threshold
    record.agreement = sum(p == passed for p in passes) / len(passes)
    res = CheckResult(score=round(min(1.0, max(0.0, score)), 6), passed=passed,
                      reason=_reason(rule, "pass" if passed else "fail", graded, members, votes))
    if len(set(passes)) > 1:
        res.flags = ["panel_split"]
    return finish(res)


def _reason(rule: str, verdict: str, graded: list[tuple[int, CheckResult]], members: Sequence[PanelMember],
            votes: list[PanelVote]) -> str:
    said = ", ".join(f"{members[i].label} {votes[i].vote or '?'}" for i, _ in graded)
    return f"panel ({rule}) {verdict}: {said}"


def _panel_vote(m: PanelMember, r: CheckResult, latency: float | None) -> PanelVote:
    return PanelVote(
        judge=m.label, status=r.status, score=r.score, passed=r.passed, winner=r.winner,
        reason=(r.reason or "")[:REASON_CHARS], error=(r.error_message or None) if r.status != "scored" else None,
        cost_usd=r.cost_usd, latency_ms=_ms(r.latency_ms if r.latency_ms is not None else latency),
        input_tokens=r.usage.input_tokens if r.usage else None,
        output_tokens=r.usage.output_tokens if r.usage else None, cached="cached" in r.flags, weight=m.weight)


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


@dataclass
class _Totals:
    usage: Any
    cost_usd: float | None
    judge: Any
    latency_ms: float | None


def _totals(results: Sequence[CheckResult], members: Sequence[PanelMember],
            latencies: Sequence[float | None]) -> _Totals:
    from ..results._schema import JudgeInfo

    usage = None
    for r in results:
        if r.usage is not None:
            usage = r.usage if usage is None else usage + r.usage
    costs = [r.cost_usd for r in results if r.cost_usd is not None]
    hashes = [r.judge.template_hash for r in results if r.judge is not None and r.judge.template_hash]
    judge = JudgeInfo(provider="panel", model="+".join(m.label for m in members),
                      template_hash=hashes[0] if hashes else None)
    lats = [x for x in (*[r.latency_ms for r in results], *latencies) if x is not None]
    return _Totals(usage, round(sum(costs), 8) if costs else None, judge,
                   round(max(lats), 3) if lats else None)
