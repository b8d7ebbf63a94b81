"""The coverage of generated cases: kept cases per document, per kind (kept share against target share) and per
persona. One computation, :func:`coverage_of`, over case objects or result rows alike (each reads
``metadata.synth``, the provenance ``referee synth`` writes): the terminal table here, the ``--html`` page, the
``referee report`` section and the viewer's panel all draw its figures."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._run import SynthResult

NAME_CHARS = 300
"""A document, kind or persona name is cut to this many characters (the names come from files users give)."""


def _name(v: Any) -> str:
    s = v if isinstance(v, str) else "(none)" if v is None else str(v)
    return s[:NAME_CHARS] or "(none)"


def _documents(prov: Mapping[str, Any]) -> list[str]:
    docs = prov.get("documents")
    if isinstance(docs, list) and docs:
        return list(dict.fromkeys(_name(d) for d in docs))
    chunks = prov.get("chunks")
    if isinstance(chunks, list) and chunks:  # chunk ids are <document>#<n>
        return list(dict.fromkeys(_name(str(c).rpartition("#")[0] or c) for c in chunks))
    return [_name(prov.get("document"))]


def _targets(prov: Mapping[str, Any]) -> dict[str, float]:
    gen = prov.get("generator")
    kinds = gen.get("kinds") if isinstance(gen, Mapping) else None
    if not isinstance(kinds, Mapping):
        return {}
    out = {}
    for k, v in kinds.items():
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1:
            out[_name(k)] = float(v)
    return out


def coverage_of(items: Iterable[Any], *, targets: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The coverage of the generated cases among ``items`` (case dicts, result rows as dicts or objects with ``id``
    and ``metadata``): ``cases`` (generated cases counted, each id once: a run's repeats and targets do not
    count twice), ``document``, ``kind`` and ``persona`` (cases per name; a two-chunk case counts for each of its
    documents) and ``targets`` (each kind's target share: ``targets`` if given, else the plan recorded in the
    cases' provenance). Items without ``metadata.synth`` are not counted."""
    seen: set[str] = set()
    docs: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    personas: Counter[str] = Counter()
    found: dict[str, float] = {}
    for it in items:
        mapping = isinstance(it, Mapping)
        md = it.get("metadata") if mapping else getattr(it, "metadata", None)
        if not isinstance(md, Mapping) or not isinstance(prov := md.get("synth"), Mapping):
            continue
        cid = str(it.get("id") if mapping else getattr(it, "id", None))
        if cid in seen:
            continue
        seen.add(cid)
        for d in _documents(prov):
            docs[d] += 1
        kinds[_name(prov.get("kind"))] += 1
        personas[_name(md.get("persona") if md.get("persona") is not None else prov.get("persona"))] += 1
        if targets is None and not found:
            found = _targets(prov)
    shares = {_name(k): float(v) for k, v in targets.items()} if targets is not None else found
    return {"cases": len(seen), "document": _by_count(docs),
            "kind": {**{k: kinds.get(k, 0) for k in shares}, **_by_count(Counter(
                {k: n for k, n in kinds.items() if k not in shares}))},
            "persona": _by_count(personas), "targets": shares}


def _by_count(counts: Counter[str]) -> dict[str, int]:
    """Names by count, largest first, then by name (the order every view shows)."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else "..." + text[-(width - 3):]


def coverage_table(source: SynthResult | Mapping[str, Any], width: int = 80) -> str:
    """Kept cases per document, per kind (kept share / target share) and per persona, at most ``width`` wide;
    ``source`` is a :class:`SynthResult` or a :func:`coverage_of` result."""
    cov = source if isinstance(source, Mapping) else source.coverage()
    width = max(40, width)
    name_w = width - 2 - 8 - 2 - 16 - 2
    lines = [f"{'':<2}{'':<{name_w}}  {'cases':>8}  {'share':>16}"]
    total = cov.get("cases") or 1
    targets = cov.get("targets", {})
    sections: list[tuple[str, list[tuple[str, int, float | None]]]] = [
        ("per document (a two-chunk case counts for each of its documents)",
         [(k, n, None) for k, n in cov.get("document", {}).items()]),
        ("per kind (kept / target)" if targets else "per kind",
         [(k, n, targets.get(k)) for k, n in cov.get("kind", {}).items()]),
        ("per persona", [(k, n, None) for k, n in cov.get("persona", {}).items()]),
    ]
    for title, rows in sections:
        if not rows:
            continue
        lines.append(_cut(title, width))
        for name, count, target in rows:
            share = f"{count / total:>6.0%}"
            if target is not None:
                share += f" / {target:>6.0%}"
            lines.append(f"  {_cut(name, name_w):<{name_w}}  {count:>8}  {share:>16}")
    return "\n".join(line.rstrip() for line in lines)


def gate_lines(result: SynthResult) -> list[str]:
    """The rejections per gate, in the gates' order, and the totals, as short lines."""
    out = [f"{result.candidates} candidates in {result.rounds} round{'s' if result.rounds != 1 else ''}; "
           f"{len(result.cases)} of {result.requested} kept"]
    for gate, count in result.rejections.items():
        out.append(f"  rejected by {gate:<13} {count:>6}")
    if result.unfilled:
        out.append(f"  unfilled slots (invalid or short replies) {result.unfilled}")
    if result.surplus:
        out.append(f"  passed every gate beyond the count (not written) {result.surplus}")
    return out
