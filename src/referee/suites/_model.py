"""The suite file format (YAML), as pydantic models. The JSON Schema published with the package is generated
from these plus each built-in evaluator's options (``referee.suites.schema``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..targets._model import ModelEntry, PromptEntry, TargetSpec

RESERVED_ENTRY_KEYS = ("id", "weight", "threshold", "critical", "field", "description", "panel", "aligned")
"""Keys of an evaluator entry that configure how the suite uses it; the one other key is its name."""


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Scoring(_M):
    """How the evaluators of a case combine into the case's score and pass verdict."""

    mode: Literal["weighted_mean", "all_pass", "min"] = Field(
        default="weighted_mean",
        description="weighted_mean: weighted mean of the evaluator scores; all_pass: 1 when every evaluator "
                    "passes, else 0; min: the lowest evaluator score. A failed critical evaluator makes the case "
                    "score 0 in every mode.")
    threshold: float = Field(default=0.7, ge=0, le=1, description="A case passes when its score >= threshold.")


class JudgeDefaults(_M):
    """Default settings of the LLM judge for LLM evaluators (command-line flags override them)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    template: str | None = Field(default=None, description="Prompt template text with {placeholders} from the case.")
    template_file: str | None = Field(default=None, description="Prompt template file, relative to the suite file.")
    rubric: str | None = Field(default=None, description="Criteria for referee's built-in judge template.")
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = None
    seed: int | None = None
    concurrency: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(default=None, ge=0)
    input_price_per_mtok: float | None = Field(default=None, ge=0)
    output_price_per_mtok: float | None = Field(default=None, ge=0)


class PanelJudge(_M):
    """One judge of a panel (``judges:``), when a ``provider:model`` string is not enough."""

    provider: str
    model: str | None = None
    base_url: str | None = None
    weight: float = Field(default=1.0, ge=0, description="Its weight under the weighted rule.")
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=4, ge=0)
    input_price_per_mtok: float | None = Field(default=None, ge=0)
    output_price_per_mtok: float | None = Field(default=None, ge=0)


class PanelOptions(_M):
    """How a panel of judges (``judges:``) combines its verdicts on one evaluator (docs/panels.md)."""

    rule: Literal["majority", "mean", "median", "min", "all_pass", "weighted"] | None = Field(
        default=None, description="majority (default), mean, median, min, all_pass or weighted.")
    quorum: int | None = Field(default=None, ge=1, description="Judges that must grade a case for a verdict "
                                                               "(default: a strict majority of the panel).")
    tie: Literal["unscored", "strict", "first"] | None = Field(
        default=None, description="An even split: unscored (default), strict (a fail; pairwise: a tie) or first "
                                  "(the first judge listed that graded decides).")
    threshold: float | None = Field(default=None, ge=0, le=1,
                                    description="Pass mark of the score rules (default: the evaluator's own).")
    escalate_below: float | None = Field(
        default=None, gt=0, le=1, description="Escalate a case whose panel agreement is below this (referee calibrate "
                                              "--target-agreement chooses it), or with no verdict.")
    escalate_to: str | PanelJudge | None = Field(
        default=None, description="The stronger judge escalated cases go to (default: none: they are unscored and "
                                  "flagged needs_human).")


BASELINE_ONLY_GATES = ("fail_on_regression", "fail_on_cost_regression", "fail_on_latency_regression",
                       "fail_on_significant_regression", "fail_on_inconclusive")
"""Gates that compare with ``gates.baseline`` and so need one."""


class Gates(_M):
    """CI gates, with the names and meaning of ``referee score``'s options (dashes become underscores)."""

    threshold: float | None = Field(default=None, ge=0, le=1, description="Pass threshold for the gates (default: "
                                    "scoring.threshold).")
    fail_under: float | None = Field(default=None, ge=0, le=1, description="Fail when the pass rate is below this.")
    baseline: str | None = Field(default=None, description="Baseline results file, relative to the suite file; in a "
                                 "suite with targets, a target id (the gates compare the candidate with it).")
    candidate: str | None = Field(default=None, description="With targets: the target the gates apply to (default: "
                                  "the other target when there are two and baseline names one, else every target).")
    fail_on_regression: bool = False
    fail_on_significant_regression: bool = False
    fail_on_cost_regression: bool = False
    fail_on_latency_regression: bool = False
    cost_regression_tolerance: float = Field(default=0.2, ge=0)
    latency_regression_tolerance: float = Field(default=0.2, ge=0)
    fail_if_mean_cost_above: float | None = Field(default=None, ge=0)
    fail_if_mean_latency_above: float | None = Field(default=None, ge=0)
    fail_if_unscored_above: float | None = Field(default=None, ge=0, le=1)
    min_case_pass_rate: float | None = Field(default=None, ge=0, le=1)
    fail_on_inconclusive: bool = False
    n_boot: int | None = Field(default=None, ge=1)
    boot_seed: int | None = None


EvaluatorEntry = str | dict[str, Any]


class SuiteFile(_M):
    """A referee suite: cases, the evaluators applied to each, how they combine, the judge and the gates."""

    model_config = ConfigDict(extra="forbid", title="referee suite", allow_inf_nan=False)

    name: str | None = None
    description: str | None = None
    cases: str | list[dict[str, Any]] = Field(
        ..., description="A cases file (.jsonl, .yaml, .json; relative to the suite file) or a list of cases.")
    plugins: list[str] = Field(default_factory=list,
                               description="Python modules to import first (they register evaluators).")
    evaluators: list[EvaluatorEntry] = Field(
        ..., min_length=1,
        description="Evaluator names, or {name: {option: value}, weight, threshold, critical, id, field}. "
                    "A name may be a dotted path module:attr to a plugin.")
    scoring: Scoring = Field(default_factory=lambda: Scoring())
    judge: JudgeDefaults | None = None
    judges: list[str | PanelJudge] | None = Field(
        default=None, min_length=1, description="A panel: every LLM evaluator is judged by each of these "
                                                "(provider:model strings or mappings) and the verdicts combined.")
    panel: PanelOptions | None = Field(default=None, description="How the panel combines (per evaluator: its "
                                                                 "entry's panel key).")
    gates: Gates = Field(default_factory=lambda: Gates())
    concurrency: int | None = Field(default=None, ge=1, description="Cases evaluated at once (default 8).")
    targets: list[TargetSpec] | None = Field(
        default=None, description="Systems under test: referee generates each case's output with every target, then "
                                  "evaluates; one results file per target.")
    prompts: list[PromptEntry | str] | None = Field(
        default=None, description="With models: every prompt x model pair is a target (id <prompt>@<model>).")
    models: list[ModelEntry] | None = Field(default=None, description="With prompts: the models of the matrix "
                                                                      "(provider:model strings work too).")
    monitor: dict[str, Any] | None = Field(
        default=None, description="Online evaluation of production traces by `referee monitor` (docs/monitoring.md): "
                                  "traces, sampling, quiet_seconds, budget, export, alerts, redact. Read and "
                                  "checked by referee.traces; offline runs ignore it.")


class EntryMeta(_M):
    """The reserved keys of one evaluator entry."""

    id: str | None = Field(default=None, description="Label of this evaluator in results (default: its name).")
    weight: float = Field(default=1.0, ge=0)
    threshold: float | None = Field(default=None, ge=0, le=1,
                                    description="Pass when the evaluator's score >= threshold (default: its own).")
    critical: bool = False
    field: str = Field(default="output", description="Case field the evaluator looks at.")
    description: str | None = None
    panel: PanelOptions | None = Field(default=None, description="This LLM evaluator's panel rule (with judges:).")
    aligned: str | None = Field(default=None, description="An aligned judge file (referee align), relative to the "
                                                          "suite: this LLM judge's scores are mapped through it.")
