"""A suite's targets run as one call: generate, evaluate, compare, gate (what ``referee run`` does with targets).

The CLI parses its options, calls :func:`run_targets` and prints the :class:`TargetsRun`; a Python user gets the
same results, comparison, gate verdicts, Markdown and exit code without it. The comparison's and the gates'
modules (numpy, the statistics) are imported once the targets have run, never when this module is imported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import UserError

if TYPE_CHECKING:
    from ..aggregate import Summary
    from ..gates._engine import GateResult
    from ..targets._compare import TargetComparison
    from ._targets import TargetOutcome


@dataclass
class TargetGate:
    """The suite's gates applied to one target's results (against ``baseline``, a target id or results file)."""

    target: str
    baseline: str | None
    code: int
    """1 when a gate failed or the target graded nothing (the verdict rule), else 0."""
    gates: list[GateResult]
    summary: Summary


@dataclass
class TargetsRun:
    """The outcome of :func:`run_targets`: each target's run (results file, rows, generation counts), the targets x
    evaluators comparison, the gated targets' verdicts, the Markdown summary (the ``--markdown`` text) and the
    exit code ``referee run`` returns (1 when a generation or a gate failed, or the gated run graded nothing,
    else 0)."""

    outcomes: list[TargetOutcome]
    comparison: TargetComparison
    failed_generations: int
    gated: list[TargetGate]
    markdown: str
    exit_code: int
    nothing_graded: list[str] = dataclasses.field(default_factory=list)
    """Why the run fails by the verdict rule, one line each: every gated target that graded nothing (with
    ``gates=False``, the run as a whole), e.g. ``target v2: nothing was graded (0 of 12 rows scored: ...)``."""

    @property
    def passed(self) -> bool:
        """Every generation succeeded, every gate passed and the gated run graded something."""
        return self.exit_code == 0


class TargetsReporter(Protocol):
    """Told each step of :func:`run_targets` as it completes (``referee run`` prints there), so that what was
    already paid for is shown even when a later step (a baseline that does not read, a gate) raises."""

    def ran(self, outcomes: list[TargetOutcome]) -> None:
        """Every target has generated and been evaluated; its results file is written."""

    def compared(self, comparison: TargetComparison, failed_generations: int) -> None:
        """The targets x evaluators comparison is made."""

    def gating(self, target: str, baseline: str | None) -> None:
        """The gates of ``target`` (against ``baseline``) are about to be checked."""

    def gated(self, gate: TargetGate) -> None:
        """One gated target's verdicts are in (called per gated target, in order)."""


def resolve_gate_targets(gates: Any, ids: list[str], all_ids: list[str], out_dir: Path,
                         base_dir: Path) -> tuple[str | None, str | None, Path | None]:
    """(candidate target id, baseline label, baseline results file) of the gates; errors (exit 2) before anything
    runs. ``gates.baseline`` names a target of the suite (its results in ``out_dir``) or a results file."""
    from ..suites._model import BASELINE_ONLY_GATES

    baseline = gates.baseline
    candidate = gates.candidate
    if candidate is not None and candidate not in ids:
        raise UserError(f"gates.candidate '{candidate}' is not among the targets run ({', '.join(ids)})")
    if baseline is None:
        if any(getattr(gates, k) for k in BASELINE_ONLY_GATES):
            raise UserError("the suite's gates compare with a baseline: set gates.baseline to a target id")
        return candidate, None, None
    if baseline not in all_ids:  # a results file, as in a suite without targets (the loader checked it exists)
        path = Path(baseline) if Path(baseline).is_absolute() else base_dir / baseline
        if not path.exists():  # a run in the history (main, last, a run id, @COMMIT): resolved when gating
            return candidate, baseline, None
        return candidate, baseline, path
    path = out_dir / f"{baseline}.jsonl"
    if baseline not in ids and not path.exists():
        raise UserError(f"gates.baseline '{baseline}' is not among the targets run (--targets "
                        f"{','.join(ids)}) and {path} does not exist: run it too")
    if candidate is None:
        others = [i for i in ids if i != baseline]
        if len(others) != 1:
            raise UserError(f"gates.baseline is target '{baseline}': name the gated target with gates.candidate "
                            f"(one of {', '.join(others) or 'none'})")
        candidate = others[0]
    return candidate, baseline, path


def _judge_binder(judge: Any) -> tuple[Callable[[Any], tuple[Any, Any]], Any]:
    """``bind`` for :func:`run_suite_targets` from a :class:`referee.Judge` (or ``"provider:model"``), and the
    judge config the manifests record."""
    from ..runner._session import run_sync
    from ._judge import as_judge
    from ._suite import bind_settings

    j = as_judge(judge)

    def bind(suite: Any) -> tuple[Any, Any]:
        if not suite.llm_specs:
            return suite, None
        client = j.client()
        return bind_settings(suite, j.settings(client)), client

    probe = j.client()  # the key and the model are checked before any target runs
    try:
        config = j.config(probe.provider.model)
    finally:
        run_sync(probe.aclose())
    return bind, config


def run_targets(suite: Any, out_dir: str | Path, *, targets: Sequence[str] | None = None, judge: Any = None,
                bind: Callable[[Any], tuple[Any, Any]] | None = None, concurrency: int = 8, gates: bool = True,
                use_cache: bool = True, batch: bool = False, engine: Any = None, command: list[str] | None = None,
                judge_config: Any = None, all_target_ids: Sequence[str] | None = None,
                reporter: TargetsReporter | None = None) -> TargetsRun:
    """Run every target of ``suite`` (a suite file's path or a loaded :class:`~referee.suites.Suite`) on its cases,
    evaluate each target's outputs, write one results file per target in ``out_dir`` (``<target id>.jsonl``, with
    its manifest), compare the targets and apply the suite's gates to ``gates.candidate`` against
    ``gates.baseline`` (every target when no candidate is named) - ``referee run suite.yaml`` with targets.

    ``targets``: run only these target ids. LLM evaluators are judged by ``judge`` (a :class:`referee.Judge` or
    ``"provider:model"``; default :meth:`referee.Judge.for_suite`: the environment, then the suite's ``judge:``), or bound by ``bind(suite) -> (bound suite,
    client or None)``, called once per target. ``gates=False`` reports only. ``reporter`` (a
    :class:`TargetsReporter`) is told each step as it completes; nothing is printed otherwise. ``concurrency`` bounds the judge
    calls in flight across the run; ``batch`` generates and judges through the provider's batch API.
    What is wrong before any call (an unknown target id, a missing prompt file, a gate naming no target) raises
    :class:`~referee.UserError`; a failed generation is an ``error`` row and makes ``exit_code`` 1."""
    from ._targets import build_targets, run_suite_targets

    if isinstance(suite, str | Path):
        from ..suites import load_suite

        suite = load_suite(str(suite))
    if all_target_ids is None:
        all_target_ids = [t.id for t in suite.targets]
    if targets is not None:
        from ..targets._loader import select

        suite = dataclasses.replace(suite, targets=select(suite.targets, list(targets)))
    if not suite.targets:
        raise UserError(f"suite {suite.name} has no targets to run")
    out_dir = Path(out_dir)
    if out_dir.suffix in (".jsonl", ".json", ".ndjson") or out_dir.is_file():
        raise UserError(f"{out_dir}: with targets, the output is a folder (one results file per target goes in it)")
    if bind is None:
        if suite.llm_specs:
            from ._judge import Judge

            # No judge given: the suite's own ``judge:`` settings, under the environment's, as ``referee run``.
            bind, judge_config = _judge_binder(judge if judge is not None else Judge.for_suite(suite.judge))
        else:
            def bind(s: Any) -> tuple[Any, Any]:
                return s, None
    suite_gates = suite.gates
    ids = [t.id for t in suite.targets]
    candidate, baseline, baseline_path = resolve_gate_targets(suite_gates, ids, list(all_target_ids), out_dir,
                                                              suite.base_dir)
    built = build_targets(suite.targets, suite.base_dir, use_cache=use_cache, batch=batch)  # exit 2 before any call
    if batch:  # every case starts at once so that the requests go into one job
        concurrency = max(concurrency, len(suite.cases))
    outcomes = run_suite_targets(suite, built, out_dir, bind=bind, concurrency=concurrency,
                                 command=command if command is not None else ["referee", "python-api"],
                                 judge_config=judge_config, engine=engine)
    if reporter is not None:
        reporter.ran(outcomes)
    # Imported once the targets have run (numpy, for the intervals, loads in the background while they do).
    from ..targets._compare import compare_targets, render_comparison_markdown

    results = [(o.target.id, o.results) for o in outcomes]
    if baseline is not None and baseline_path is not None and baseline not in ids:
        results.append((baseline, baseline_path))  # an earlier run of that target, or a results file
    comparison = compare_targets(results, threshold=suite_gates.threshold if suite_gates.threshold is not None
                                 else suite.scoring.threshold, n_boot=suite_gates.n_boot,
                                 boot_seed=suite_gates.boot_seed, rows={o.target.id: o.outcome.rows for o in outcomes})
    failed = sum(o.generation.failed for o in outcomes)
    if reporter is not None:
        reporter.compared(comparison, failed)
    code = 1 if failed else 0
    md = [render_comparison_markdown(comparison, suite.name)]
    if failed:
        md.append(f"\n{failed} generation(s) failed: they are error rows, never judged.\n")
    gated: list[TargetGate] = []
    nothing_graded: list[str] = []
    if not gates:  # report only; the verdict rule still holds over the run as a whole
        from ..gates._engine import exit_code, graded_check, verdict

        scored = sum(o.outcome.manifest.totals.scored for o in outcomes)
        entry = graded_check(scored, sum(len(o.outcome.rows) for o in outcomes))
        if entry is not None:
            nothing_graded.append(entry.message)
            md.append(f"\n{entry.message}.\n")
        code = max(code, exit_code(verdict([], scored)))
    else:
        from ..calibrate._panel import panel_agreement
        from ..gates._engine import GRADED_FLAG
        from ..reports._markdown_summary import image_refs, render_markdown
        from ..results._io import read_results
        from ..suites._gating import gate_summary, summary_exit_code

        images = image_refs(suite.cases)  # the cases' own images (the targets' inputs), named beside each case
        # A baseline named from the run history is never another target of this same run.
        sibling_runs = {o.outcome.manifest.run_id for o in outcomes if o.outcome.manifest.run_id}
        for tid in [candidate] if candidate is not None else ids:
            # Absolute: gating resolves a relative baseline against the suite's folder, not the working one.
            if reporter is not None:
                reporter.gating(tid, baseline)
            g = suite_gates.model_copy(update={"baseline": str(baseline_path.resolve()) if baseline_path else baseline,
                                               "candidate": None})
            summary, verdicts = gate_summary(out_dir / f"{tid}.jsonl", g, threshold=suite.scoring.threshold,
                                             base_dir=suite.base_dir, siblings=sibling_runs)
            gate_code = summary_exit_code(summary, verdicts)
            nothing_graded += [f"target {tid}: {v.message}" for v in verdicts if v.flag == GRADED_FLAG and v.failed]
            gated.append(TargetGate(tid, baseline, gate_code, verdicts, summary))
            if reporter is not None:
                reporter.gated(gated[-1])
            code = max(code, gate_code)
            # A judge panel's figures, as `referee score` computes them from the target's results file.
            panels = panel_agreement(read_results(out_dir / f"{tid}.jsonl").rows)
            md.append(f"\n#### target `{tid}`" + (f" against baseline `{baseline}`" if baseline else "") + "\n\n"
                      + render_markdown(summary, verdicts, gate_code, panels=panels, images=images))
    return TargetsRun(outcomes=outcomes, comparison=comparison, failed_generations=failed, gated=gated,
                      markdown="".join(md), exit_code=code, nothing_graded=nothing_graded)
