"""What ``summarize`` returns: the options and the aggregate dataclasses every report renders."""

from __future__ import annotations

from dataclasses import dataclass, field

from .._util._display import to_html, to_rich
from ..stats import (
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    Interval,
)
from . import _display

SMALL_SAMPLE = 20
NEAR_DUPLICATE_RATIO = 0.82
LOWEST_SHOWN = 3
PASS_RULE_WARNING = "the rows' own 'passed' disagrees with score >="


@dataclass
class ScoreOptions:
    """How rows are scored: the pass threshold and rule, the bootstrap, the adversarial categories and
    the baseline comparison's settings (``referee score``'s flags)."""

    threshold: float = 0.7
    n_boot: int = DEFAULT_N_BOOT
    boot_seed: int = DEFAULT_SEED
    alpha: float = 0.05
    adversarial_categories: frozenset[str] = frozenset()
    """Normalised category names reported as attack types, apart from correctness."""
    target_drop: float = 0.05
    allow_case_set_change: bool = False
    pass_rule: str = "threshold"
    """``threshold`` (the seed's ``score >= threshold``) or ``evaluator`` (the row's own ``passed`` where it
    has one): applied to every pass statistic, both tracks and the baseline alike."""
    cost_rows: str = "scored"
    """Rows whose cost and latency enter the means (and their gates): ``scored`` (the seed's meaning: its
    runners write no row for a case they could not grade) or ``all`` (unscored and error rows too)."""
    regression_min_drop: float | None = None
    """A case still passing whose score fell by more than this since the baseline is a regression too (kind
    ``magnitude_drop``; the seed's ``--regression-min-drop``). None: only pass-to-fail cases are."""


@dataclass
class Group:
    """Aggregate of one group of cases (everything, one category, one attack type)."""

    name: str
    rows: int
    cases: int
    """Cases with at least one scored row: the n of every rate and mean."""
    unscored: int
    errors: int
    pass_rate: Interval
    """Percentile bootstrap CI."""
    pass_rate_wilson: Interval
    mean: Interval
    mean_cost: float | None
    mean_latency_ms: float | None
    pass_at_k: float | None = None
    """Share of cases where at least one repeat passes (repeats only)."""
    pass_all_k: float | None = None
    """pass^k: share of cases where every repeat passes (repeats only)."""

    def __repr__(self) -> str:
        return f"<Group {self.name}: {self.cases} cases, pass rate {self.pass_rate}, mean {self.mean}>"

    @property
    def unscored_rate(self) -> float:
        return (self.unscored + self.errors) / self.rows if self.rows else 0.0


@dataclass
class CaseLine:
    """One case as reports show it."""

    id: str
    category: str
    score: float | None
    """Mean over scored repeats."""
    passed: bool | None
    rationale: str | None
    line: int
    repeats: int = 1
    pass_share: float | None = None
    sd: float | None = None
    min: float | None = None
    max: float | None = None
    baseline_score: float | None = None
    status: str = "scored"
    verdict_source: str = "threshold"
    """``evaluator`` when the pass verdict came from the rows' own ``passed`` (``--pass-rule evaluator``)."""


@dataclass
class PairedTest:
    """A paired test of one metric in one scope against the baseline (difference, CI, raw and adjusted p)."""

    scope: str
    """``overall`` or a category name."""
    metric: str
    """``pass rate`` or ``mean score``."""
    n: int
    diff: float
    lo: float | None
    hi: float | None
    p_value: float
    p_adjusted: float | None = None
    direction: str = "none"
    """``drop``, ``improvement`` or ``none``; drops are one Benjamini-Hochberg family, the rest the other."""
    significant: bool = False
    point_a: float | None = None
    """The current run's mean of the metric on the tested shared cases (the seed's ``point_a``)."""
    point_b: float | None = None
    """The baseline's mean on the same cases (``point_b``)."""
    method: str = "paired percentile bootstrap"
    """With ``(Cornish-Fisher expansion, n large)`` where resampling would be slow and the expansion is as
    accurate (see ``stats.counts``)."""


@dataclass
class Power:
    """How large a pass-rate drop this many cases can detect, and how many cases a ``target_drop`` needs."""

    n: int
    sd: float
    basis: str
    min_detectable_drop: float | None
    target_drop: float
    cases_needed: int | None
    detectable: bool = True
    """False when the minimum detectable drop exceeds 100 points: no drop in pass rate can be detected."""


@dataclass
class Comparison:
    """The results against a baseline: shared cases, regressions and fixes, the paired tests and the verdict."""

    baseline: str
    baseline_overall: Group
    shared: int
    missing: list[str]
    """Case ids in the baseline but not in the current results."""
    added: list[str]
    regressions: list[CaseLine]
    """Cases that passed in the baseline and fail now (the seed's definition); the first 200, lowest first."""
    regression_count: int
    fixed: int
    lost_scores: list[str]
    """Cases that passed in the baseline and are unscored now: not a regression, not a pass either."""
    tests: list[PairedTest]
    skipped: list[str]
    mcnemar_b: int
    mcnemar_c: int
    mcnemar_p: float
    verdict: str
    """REGRESSED, INCONCLUSIVE, IMPROVED or NO REGRESSION."""
    verdict_reason: str
    adversarial_regressions: list[CaseLine] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Differences between the runs other than the system (judge prompt, judge model)."""
    regression_scores: list[tuple[str, float, float]] = field(default_factory=list)
    """Every correctness regression as (id, baseline score, current score), in the current file's order:
    the seed's JSON ``regressions`` list (kind ``threshold_crossing``)."""
    magnitude_drops: list[CaseLine] = field(default_factory=list)
    """With ``regression_min_drop``: cases passing in both runs whose score fell by more than it (the first
    200, largest drop first)."""
    magnitude_drop_count: int = 0
    magnitude_drop_scores: list[tuple[str, float, float]] = field(default_factory=list)
    """Every magnitude drop as (id, baseline score, current score), in the current file's order (kind
    ``magnitude_drop`` in the JSON ``regressions`` list)."""
    regression_min_drop: float | None = None
    category_tests: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    """Per category of the shared cases: (shared scored cases, why its paired tests were skipped or None)."""

    def __repr__(self) -> str:
        return _display.comparison_repr(self)

    def _repr_html_(self) -> str:
        return to_html(_display.comparison_headline(self), _display.comparison_blocks(self),
                       ok=self.verdict != "REGRESSED")

    def __rich__(self) -> object:
        return to_rich(_display.comparison_headline(self), _display.comparison_blocks(self),
                       ok=self.verdict != "REGRESSED")


@dataclass
class RepeatInfo:
    max_repeats: int
    flaky: list[CaseLine]
    """Cases with repeats on both sides of the threshold (the first 50)."""
    flaky_count: int = 0
    below_min_pass_rate: list[CaseLine] = field(default_factory=list)
    """The first 50 cases under ``--min-case-pass-rate``."""
    below_min_count: int = 0


@dataclass
class Summary:
    """Everything ``referee score`` reports about one results file: overall and per-category groups, the
    lowest cases, the adversarial track, warnings, power, repeats and the comparison with a baseline."""

    path: str
    threshold: float
    n_boot: int
    boot_seed: int
    overall: Group
    categories: list[Group]
    lowest: list[CaseLine]
    adversarial: list[Group]
    adversarial_failures: list[CaseLine]
    warnings: list[str]
    power: Power | None
    repeats: RepeatInfo | None = None
    comparison: Comparison | None = None
    small_sample: bool = False
    pass_rule: str = "threshold"
    cost_rows: str = "scored"
    """Which rows the mean cost and latency are over (see ``ScoreOptions.cost_rows``)."""
    self_grading: str | None = None
    """The self-grading caveat (rows whose judge graded its own model's output), or None."""
    self_grading_rows: int = 0

    def __repr__(self) -> str:
        return _display.summary_repr(self)

    def _repr_html_(self) -> str:
        return to_html(_display.summary_headline(self), _display.summary_blocks(self))

    def __rich__(self) -> object:
        return to_rich(_display.summary_headline(self), _display.summary_blocks(self))
