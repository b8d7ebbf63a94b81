"""One call per meta-evaluation of recorded files (``referee metaeval <name>`` prints what these return).

Each reads its inputs, computes the figures and returns them as data; nothing here prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, UserError
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED
from ._judgebench import judgebench_accuracy, judgebench_by_category, read_outputs
from ._llmbar import (
    dataset_path,
    parse_raw,
    read_lengths,
    read_published,
    read_raw_results,
    read_verdicts,
    with_lengths,
)
from ._pairwise import PairVerdict, PairwiseMeta, llmbar_statistics, pairwise_meta
from ._results import pairwise_from_results, read_gold


def llmbar_meta(root: str | Path, *, subsets: Iterable[str] = (), evaluators: Iterable[str] = (),
                strategies: Iterable[str] = (), n_boot: int = DEFAULT_N_BOOT,
                seed: int = DEFAULT_SEED) -> dict[str, PairwiseMeta]:
    """LLMBar (``root`` holds ``verdicts.csv``): the figures of each (subset, judge, strategy) group kept by the
    filters (empty: all), keyed ``"subset judge strategy"``; output lengths from ``data/<subset>/dataset.json``
    when it is there (for the length bias). A :class:`UserError` when no group matches."""
    subsets, evaluators, strategies = set(subsets), set(evaluators), set(strategies)
    groups = read_verdicts(Path(root) / "verdicts.csv")
    sel = {k: v for k, v in groups.items()
           if (not subsets or k[0] in subsets) and (not evaluators or k[1] in evaluators)
           and (not strategies or k[2] in strategies)}
    if not sel:
        raise UserError("no verdicts match the --subset/--evaluator/--strategy filters")
    lengths: dict[str, list[tuple[int, int]]] = {}
    out: dict[str, PairwiseMeta] = {}
    for key, items in sorted(sel.items()):
        ds = dataset_path(root, key[0])
        if ds.exists():
            lengths.setdefault(key[0], read_lengths(ds))
            items = with_lengths(items, lengths[key[0]])
        out[" ".join(key)] = pairwise_meta(items, n_boot=n_boot, seed=seed)
    return out


@dataclass
class PublishedCheck:
    """LLMBar's ``statistics_published.csv`` recomputed from ``verdicts.csv``."""

    groups: int
    """(subset, judge, strategy) groups with published statistics."""
    cells: int
    """Published cells recomputed."""
    mismatches: list[str] = field(default_factory=list)
    """One line per differing cell (or group without verdicts)."""

    @property
    def identical(self) -> int:
        return self.cells - len(self.mismatches)


def check_published(root: str | Path) -> PublishedCheck:
    """Recompute every cell of ``root/statistics_published.csv`` from ``root/verdicts.csv``."""
    groups = read_verdicts(Path(root) / "verdicts.csv")
    pub_path = Path(root) / "statistics_published.csv"
    if not pub_path.exists():
        raise InputError("file not found", file=str(pub_path))
    published = read_published(pub_path)
    check = PublishedCheck(groups=len(published), cells=0)
    for key, row in published.items():
        if key not in groups:
            check.mismatches.append(f"{'/'.join(key)} has published statistics but no verdicts")
            continue
        for col, val in llmbar_statistics(groups[key]).items():
            check.cells += 1
            if not _same_cell(row[col], val):
                check.mismatches.append(f"{' '.join(key)} {col}: published {row[col]}, recomputed {val}")
    return check


def _same_cell(published: str, value: str | float) -> bool:
    if isinstance(value, str):
        return published == value
    if published.lower() == "nan":
        return value != value
    # Compare at the precision the CSV was written with (repr of a float: exact round trip).
    return float(published) == value or abs(float(published) - value) <= 1e-15


def verdicts_meta(table: str | Path, *, n_boot: int = DEFAULT_N_BOOT,
                  seed: int = DEFAULT_SEED) -> dict[str, PairwiseMeta]:
    """A verdict table (CSV: idx|id, label, winner_noswap, winner_swap [, subset, evaluator, strategy]): the
    figures per group (keyed by its columns, else the file name)."""
    groups = read_verdicts(table)
    return {(" ".join(k) or Path(table).name): pairwise_meta(v, n_boot=n_boot, seed=seed)
            for k, v in sorted(groups.items())}


@dataclass
class JudgeBenchMeta:
    """One JudgeBench outputs file: the pairwise figures, and JudgeBench's own accuracy (a pair is correct
    when the two orders' +1/-1/0 sum is > 0), overall and per category."""

    meta: PairwiseMeta
    accuracy: float
    by_category: dict[str, tuple[int, float]]
    """``{category: (pairs, accuracy)}`` in the paper's order."""

    @property
    def pairs(self) -> int:
        return sum(n for n, _ in self.by_category.values())

    def to_dict(self) -> dict[str, Any]:
        return {**self.meta.to_dict(), "judgebench_accuracy": self.accuracy,
                "judgebench_by_category": {c: {"pairs": n, "accuracy": a} for c, (n, a) in self.by_category.items()}}


def judgebench_meta(outputs: Sequence[str | Path], *, n_boot: int = DEFAULT_N_BOOT,
                    seed: int = DEFAULT_SEED) -> dict[str, JudgeBenchMeta]:
    """JudgeBench judge outputs (``outputs/<model>__<judge>__<judge_model>.jsonl``), keyed by file stem."""
    out: dict[str, JudgeBenchMeta] = {}
    for path in outputs:
        items = read_outputs(path)
        out[Path(path).stem] = JudgeBenchMeta(pairwise_meta(items, n_boot=n_boot, seed=seed),
                                              judgebench_accuracy(items), judgebench_by_category(items))
    return out


def results_meta(results: Sequence[str | Path], *, gold: str | Path | None = None, n_boot: int = DEFAULT_N_BOOT,
                 seed: int = DEFAULT_SEED) -> dict[str, PairwiseMeta]:
    """``referee pairwise`` results files against gold labels (JSONL ``{id, label: a|b|tie}``; without them
    only agreement and bias mean anything), keyed by path. A :class:`UserError` when a file shares no id with
    the gold labels."""
    labels = read_gold(gold) if gold is not None else None
    out: dict[str, PairwiseMeta] = {}
    for path in results:
        items: list[PairVerdict] = pairwise_from_results(path, labels)
        if labels is not None and not any(v.label is not None for v in items):
            raise UserError(f"no ids in common between {path} and {gold}")
        out[str(path)] = pairwise_meta(items, n_boot=n_boot, seed=seed)
    return out


@dataclass
class ParseReplay:
    """Recorded judge completions replayed through referee's pairwise reply parser."""

    total: int = 0
    parsed: int = 0
    """Completions that parse to a winner."""
    agree: int = 0
    """Completions whose parsed winner is the recorded verdict."""
    recorded_unparsed: int = 0
    unparsed_ok: int = 0
    """Of ``recorded_unparsed``, those referee leaves unscored too."""
    differences: list[str] = field(default_factory=list)
    """The first disagreements (file, order, both verdicts, the end of the completion)."""


def replay_completions(raw_files: Iterable[str | Path], *, show: int = 10) -> ParseReplay:
    """Replay LLMBar ``raw_results/*.jsonl`` completions through the pairwise reply parser; the first ``show``
    disagreements are kept. A :class:`UserError` when the files hold no comparison completion."""
    rep = ParseReplay()
    for path in raw_files:
        for rv in read_raw_results(path):
            rep.total += 1
            got = parse_raw(rv)
            rep.parsed += got is not None
            if rv.recorded is None:
                rep.recorded_unparsed += 1
                rep.unparsed_ok += got is None
            if got == rv.recorded:
                rep.agree += 1
            elif len(rep.differences) < show:
                rep.differences.append(f"{rv.file} ({'swapped' if rv.swap else 'original'} order): recorded "
                                       f"{rv.recorded}, parsed {got}: ...{rv.completion[-160:]!r}")
    if rep.total == 0:
        raise UserError("no comparison completions in the given files (rating strategies keep scores only)")
    return rep
