"""``referee.synth``: documents (or existing cases, or any other source of documents) -> chunks -> generated
candidates -> the gates -> a case file, a rejections file and a coverage report.

Rounds: round 1 asks for the slots the requested count needs; while fewer cases are kept, each next round asks for
the missing count divided by the share kept so far (at least a quarter), up to ``max_rounds`` (default
:data:`MAX_ROUNDS`) or until ``max_cost_usd`` is spent. A round that keeps nothing new stops the run early. The
shortfall, if any, is stated with its cause (the round limit, the budget, the gates that rejected most).
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import UserError
from ..providers._base import Provider
from ..run._judge import Judge, as_judge, sync_twin
from ..runner._client import JudgeClient
from ._documents import Chunk, Corpus, Document, Redactor, Skipped, Splitter, load_documents, redacted
from ._gates import (
    CRITIC_THRESHOLD,
    GATES,
    NEAR_DUPLICATE,
    DuplicateIndex,
    critic_gate,
    leak_gate,
    quote_gate,
    unanswerable_gate,
)
from ._generate import PROMPT_VERSION, BatchOutcome, Candidate, generate_batch
from ._plan import BATCH_SIZE, DEFAULT_KINDS, KINDS, plan_slots, proportions, usable_kinds

MAX_ROUNDS = 4
MAX_N = 100_000
GEN_MAX_TOKENS = 4096
GATE_MAX_TOKENS = 512
DEFAULT_TEMPERATURE = 0.7

DocumentsArg = str | Path | Document | Iterable[str | Path | Document]


class GenerationStore(Protocol):
    """Where generation runs are recorded: the run history (its table of generated cases)."""

    def add_generated_cases(self, batch_id: str, records: Sequence[dict[str, Any]]) -> None: ...


@dataclass
class SynthResult:
    """What a generation run produced and why (see :func:`synth`)."""

    cases: list[dict[str, Any]]
    """The kept cases (at most ``requested``), in slot order: a normal case file's objects."""
    rejected: list[dict[str, Any]]
    """Every rejected candidate with the gate that rejected it and every gate's result so far."""
    requested: int
    rejections: dict[str, int]
    """Per gate (:data:`GATES`, in order), the candidates it rejected (each under the first gate it failed)."""
    unfilled: int = 0
    """Slots the generator's replies did not fill (an invalid or short reply, after one re-ask)."""
    errors: list[str] = field(default_factory=list)
    """Failed generation requests (the provider), each once."""
    rounds: int = 0
    candidates: int = 0
    surplus: int = 0
    """Cases that passed every gate beyond the requested count (not written)."""
    shortfall: str | None = None
    kinds: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per kind: its target share and the share kept."""
    notes: list[str] = field(default_factory=list)
    documents: list[str] = field(default_factory=list)
    chunks: int = 0
    cost_usd: float | None = None
    calls: int = 0
    cached_calls: int = 0
    generator: dict[str, Any] = field(default_factory=dict)
    out: str | None = None
    rejected_out: str | None = None
    generation_id: str = ""
    """This run's id (the ``batch_id`` of its records in the run history)."""
    recorded: str | None = None
    """Where the run was recorded (the store's URL without its password), or None."""

    @property
    def met(self) -> bool:
        return len(self.cases) >= self.requested

    def coverage(self) -> dict[str, Any]:
        """Kept cases per document, per kind and per persona, with each kind's target share
        (:func:`referee.synth.coverage_of`: the one computation the table and the charts draw)."""
        from ._coverage import coverage_of

        return coverage_of(self.cases, targets={k: v["target"] for k, v in self.kinds.items()})

    def to_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "kept": len(self.cases), "candidates": self.candidates,
                "rejections": self.rejections, "unfilled": self.unfilled, "errors": self.errors,
                "rounds": self.rounds, "surplus": self.surplus, "shortfall": self.shortfall, "kinds": self.kinds,
                "coverage": self.coverage(), "notes": self.notes, "documents": self.documents,
                "chunks": self.chunks, "cost_usd": self.cost_usd, "calls": self.calls,
                "cached_calls": self.cached_calls, "generator": self.generator, "out": self.out}

    def store_records(self) -> list[dict[str, Any]]:
        """One record per candidate, kept or rejected, for the run history's generated cases: ``case_id``,
        ``source`` (the text of its source chunks), ``body`` (the case as written, JSON) and ``gate`` (``kept``,
        or the gate that rejected it)."""
        out = []
        for case in [*self.cases, *self.rejected]:
            prov = case["metadata"]["synth"]
            out.append({"case_id": case["id"], "gate": prov.get("rejected_by") or "kept",
                        "source": "\n\n".join(ch["text"] for ch in case.get("contexts", [])),
                        "body": json.dumps(case, ensure_ascii=False, sort_keys=True)})
        return out

    def coverage_table(self, width: int = 80) -> str:
        """The coverage report as a plain-text table at most ``width`` columns wide."""
        from ._coverage import coverage_table

        return coverage_table(self, width)


def _as_documents(documents: DocumentsArg | None, redact: Redactor | None) -> Corpus:
    if documents is None:
        return Corpus()
    items: list[Any] = [documents] if isinstance(documents, str | Path | Document) else list(documents)
    corpus = Corpus()
    paths = [d for d in items if isinstance(d, str | Path)]
    for d in items:
        if not isinstance(d, str | Path | Document):
            raise UserError(f"documents: expected paths or Document objects, got {type(d).__name__}")
        if isinstance(d, Document):
            corpus.documents.append(redacted(d, redact))
    if paths:
        loaded = load_documents(paths, redact=redact)
        corpus.documents[:0] = loaded.documents
        corpus.skipped += loaded.skipped
    return corpus


TracesArg = str | Path | Sequence[Any]


def source_corpus(documents: DocumentsArg | None, from_cases: str | Path | Sequence[str | Path] | None,
                  redact: Redactor | None, from_traces: TracesArg | None = None) -> tuple[Corpus, list[str | Path]]:
    """The documents of a run (``documents``, the cases of ``from_cases`` and the traces of ``from_traces``),
    redacted, and the case files."""
    corpus = _as_documents(documents, redact)
    case_sources = [from_cases] if isinstance(from_cases, str | Path) else list(from_cases or [])
    for p in case_sources:
        corpus.documents += [redacted(d, redact) for d in documents_from_cases(p)]
    if from_traces is not None:
        docs, skipped = documents_from_traces(from_traces)
        corpus.documents += [redacted(d, redact) for d in docs]
        corpus.skipped += skipped
    return corpus, case_sources


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def documents_from_traces(traces: TracesArg) -> tuple[list[Document], list[Skipped]]:
    """Stored production traces as documents (variation seeds): each trace's retrieved contexts are the source,
    with its input as the example question, named ``trace:<trace id>``. ``traces`` are the trace-cases
    :func:`referee.traces.traces_to_cases` returns, or a case file ``referee traces to-cases`` wrote.

    The production answer is never a reference: it is the output under test, and a reference must be quoted from a
    source by the strict rules. A trace that retrieved nothing has no source to quote: it is skipped, with a note."""
    from ..cases import load_cases

    items: Sequence[Any] = load_cases(str(traces)).cases if isinstance(traces, str | Path) else list(traces)
    docs: list[Document] = []
    skipped: list[Skipped] = []
    for t in items:
        md = _get(t, "metadata")
        tid = str((md.get("trace_id") if isinstance(md, Mapping) else None) or _get(t, "id") or "")
        name = f"trace:{tid}"
        parts = []
        for ch in _get(t, "contexts") or []:
            text = ch if isinstance(ch, str) else _get(ch, "text")
            if isinstance(text, str) and text.strip():
                parts.append(text)
        if not parts:
            skipped.append(Skipped(name, "the trace retrieved no documents: no source to quote a reference from"))
            continue
        q = _get(t, "input")
        q = q if isinstance(q, str) else json.dumps(q, ensure_ascii=False) if q is not None else ""
        head = f"Example question: {q}\n\n" if q.strip() else ""
        docs.append(Document(name, head + "\n\n".join(parts), trace_id=tid))
    return docs, skipped


def documents_from_cases(path: str | Path) -> list[Document]:
    """Existing cases as documents (for variations): each case's contexts and reference, with its input as the
    example question, named ``<file>#<case id>``."""
    from ..cases import load_cases

    out = []
    for c in load_cases(str(path)).cases:
        parts = [ch.text for ch in c.contexts if ch.text]
        if isinstance(c.reference, str) and c.reference.strip():
            parts.append(c.reference)
        if parts:
            q = c.input if isinstance(c.input, str) else json.dumps(c.input)
            out.append(Document(f"{path}#{c.id}", f"Example question: {q}\n\n" + "\n\n".join(parts)))
    return out


def _inputs_of(paths: Sequence[str | Path], what: str) -> list[tuple[str, str]]:
    from ..cases import load_cases

    out = []
    for p in paths:
        for c in load_cases(str(p)).cases:
            if c.input is not None:
                out.append((f"{what}:{c.id}", c.input if isinstance(c.input, str) else json.dumps(c.input)))
    return out


def _add(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else round(a + b, 8)


class _Run:
    def __init__(self, *, n: int, chunks: list[Chunk], client: JudgeClient, critic: JudgeClient,
                 kinds: dict[str, float], personas: dict[str, float], seed: int, temperature: float | None,
                 critic_threshold: float, use_cache: bool, concurrency: int, index: DuplicateIndex) -> None:
        self.n, self.chunks, self.client, self.critic = n, chunks, client, critic
        self.by_id = {c.id: c for c in chunks}
        self.kinds, self.personas, self.seed, self.temperature = kinds, personas, seed, temperature
        self.critic_threshold, self.use_cache = critic_threshold, use_cache
        self.sem = asyncio.Semaphore(concurrency)
        self.index = index
        self.kept: list[Candidate] = []
        self.rejected: list[Candidate] = []
        self.rejections = dict.fromkeys(GATES, 0)
        self.unfilled = 0
        self.errors: list[str] = []
        self.cost: float | None = None
        self.calls = self.cached = 0
        self.next_batch = 0

    async def generate(self, batches: int) -> list[Candidate]:
        first = self.next_batch
        self.next_batch += batches

        async def one(b: int) -> BatchOutcome:
            slots = plan_slots(b * BATCH_SIZE, (b + 1) * BATCH_SIZE, seed=self.seed, kinds=self.kinds,
                               personas=self.personas, chunks=self.chunks)
            async with self.sem:
                return await generate_batch(self.client, b, slots, temperature=self.temperature, seed=self.seed,
                                            max_tokens=GEN_MAX_TOKENS, use_cache=self.use_cache)

        outs = await asyncio.gather(*(one(b) for b in range(first, first + batches)))
        cands: list[Candidate] = []
        for o in outs:
            self.cost = _add(self.cost, o.cost_usd)
            self.calls += o.calls
            self.cached += o.cached_calls
            if o.error and not o.candidates:
                if o.error not in self.errors:
                    self.errors.append(o.error)
            self.unfilled += o.missing
            cands += o.candidates
        return cands

    def _reject(self, c: Candidate, gate: str, result: dict[str, Any]) -> None:
        c.gates[gate] = result
        c.rejected_by = gate
        self.rejections[gate] += 1
        self.rejected.append(c)

    async def _judge_gates(self, c: Candidate) -> None:
        async with self.sem:
            res, cost = await unanswerable_gate(self.critic, c, self.chunks, max_tokens=GATE_MAX_TOKENS,
                                                seed=self.seed, use_cache=self.use_cache)
            c.cost_usd = _add(c.cost_usd, cost)
            self.cost = _add(self.cost, cost)
            c.gates["unanswerable"] = res
            if not res["passed"]:
                c.rejected_by = "unanswerable"
                return
            res, cost = await critic_gate(self.critic, c, self.by_id, threshold=self.critic_threshold,
                                          max_tokens=GATE_MAX_TOKENS, seed=self.seed, use_cache=self.use_cache)
            c.cost_usd = _add(c.cost_usd, cost)
            self.cost = _add(self.cost, cost)
            c.gates["critic"] = res
            if not res["passed"]:
                c.rejected_by = "critic"

    async def gate(self, cands: list[Candidate]) -> int:
        """Gate one round's candidates in slot order; returns how many were kept."""
        kept_before = len(self.kept)
        queue = sorted(cands, key=lambda c: c.slot.index)
        while queue:
            pending = DuplicateIndex(self.index.threshold)
            pending_of: dict[str, Candidate] = {}
            provisional: list[Candidate] = []
            deferred: list[tuple[Candidate, str, float]] = []
            for c in queue:
                near = self.index.nearest(c.input)
                if near is not None:
                    self._reject(c, "duplicate", {"passed": False, "of": near.label, "similarity": near.similarity,
                                                  "threshold": self.index.threshold})
                    continue
                twin = pending.nearest(c.input)
                if twin is not None:  # decided once its twin is: a duplicate only of a case that is kept
                    deferred.append((c, twin.label, twin.similarity))
                    continue
                c.gates["duplicate"] = {"passed": True, "threshold": self.index.threshold,
                                        "compared_with": len(self.index)}
                q = quote_gate(c, self.by_id)
                if not q["passed"]:
                    self._reject(c, "quote", q)
                    continue
                c.gates["quote"] = q
                leak = leak_gate(c)
                if not leak["passed"]:
                    self._reject(c, "leak", leak)
                    continue
                c.gates["leak"] = leak
                provisional.append(c)
                label = f"slot:{c.slot.index}"
                pending.add(c.input, label)
                pending_of[label] = c
            await asyncio.gather(*(self._judge_gates(c) for c in provisional))
            for c in provisional:
                if c.rejected_by is None:
                    self.kept.append(c)
                    self.index.add(c.input, f"kept:{case_id(c)}")
                else:
                    self.rejections[c.rejected_by] += 1
                    self.rejected.append(c)
            queue = []
            for c, label, sim in deferred:
                twin_c = pending_of[label]
                if twin_c.rejected_by is None:
                    self._reject(c, "duplicate", {"passed": False, "of": f"kept:{case_id(twin_c)}",
                                                  "similarity": sim, "threshold": self.index.threshold})
                else:
                    queue.append(c)
        return len(self.kept) - kept_before


def _record(result: SynthResult, store: GenerationStore | str | bool | None) -> str | None:
    """Record the run in the run history (see :func:`synth_async`'s ``store``); where, or None."""
    if store is not None and not isinstance(store, str | bool):
        store.add_generated_cases(result.generation_id, result.store_records())
        return type(store).__name__
    from ..store import StoreError, current, display_url, open_store, scope

    with scope(store):
        settings = current()
    if not settings.enabled:
        return None
    url = settings.resolved_url()
    try:
        with open_store(url) as st:
            st.add_generated_cases(result.generation_id, result.store_records())
            return st.display_url
    except StoreError as exc:
        result.notes.append(f"the run was not recorded in the run history: {exc}")
    except Exception as exc:  # a database that refuses the write: the cases are on disk, the run is not lost
        result.notes.append(f"the run was not recorded in the run history ({display_url(url)}): "
                            f"{type(exc).__name__}")
    return None


def case_id(c: Candidate) -> str:
    return f"synth-{c.slot.index + 1:05d}"


def _case(c: Candidate, generator: dict[str, Any], traces: Mapping[str, str]) -> dict[str, Any]:
    s = c.slot
    prov = {"document": s.chunks[0].document, "documents": list(dict.fromkeys(ch.document for ch in s.chunks)),
            "chunk": s.chunks[0].id, "chunks": [ch.id for ch in s.chunks],
            "kind": s.kind, "persona": s.persona, "answerable": c.answerable, "generator": generator,
            "prompt_hash": c.prompt_hash, "prompt_version": PROMPT_VERSION, "seed": generator.get("seed"),
            "slot": s.index, "batch": c.batch,
            "cost_usd": None if c.cost_usd is None else round(c.cost_usd, 8),
            "quotes": [{"chunk": ch, "quote": q} for ch, q in c.quotes], "gates": c.gates}
    trace_ids = list(dict.fromkeys(traces[ch.document] for ch in s.chunks if ch.document in traces))
    if trace_ids:  # made from production traces: which ones
        prov["trace_id"], prov["trace_ids"] = trace_ids[0], trace_ids
    if c.rejected_by:
        prov["rejected_by"] = c.rejected_by
    return {"id": case_id(c), "input": c.input, "reference": c.reference,
            "contexts": [{"id": ch.id, "text": ch.text, "source": ch.document} for ch in s.chunks],
            "category": s.kind, "metadata": {"persona": s.persona, "synth": prov}}


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def rejected_path(out: str | Path) -> Path:
    """Where the rejected candidates of a run writing ``out`` go: ``<out stem>.rejected.jsonl`` beside it."""
    p = Path(out)
    return p.with_name(p.stem + ".rejected.jsonl")


def _write(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    tmp.replace(path)


def _shortfall(run: _Run, n: int, rounds: int, max_rounds: int, stop: str | None) -> str | None:
    if len(run.kept) >= n:
        return None
    most = sorted(((v, g) for g, v in run.rejections.items() if v), reverse=True)
    causes = [f"{g} rejected {v}" for v, g in most]
    if run.unfilled:
        causes.append(f"{run.unfilled} slots left unfilled by invalid or short generator replies")
    if run.errors:
        causes.append(f"generator errors: {run.errors[0]}")
    why = stop or f"the round limit ({max_rounds}) was reached"
    return (f"{len(run.kept)} of {n} cases kept after {rounds} round{'s' if rounds != 1 else ''}: {why}"
            + (f" ({'; '.join(causes)})" if causes else ""))


async def synth_async(
    documents: DocumentsArg | None = None,
    *,
    n: int = 20,
    judge: Judge | str | Provider | None = None,
    critic: Judge | str | Provider | None = None,
    out: str | Path | None = None,
    from_cases: str | Path | Sequence[str | Path] | None = None,
    from_traces: TracesArg | None = None,
    existing: Sequence[str | Path] = (),
    labelled: Sequence[str | Path] = (),
    kinds: Mapping[str, float] | Sequence[str] | None = None,
    personas: Mapping[str, float] | Sequence[str] | None = None,
    splitter: Splitter | None = None,
    seed: int = 0,
    temperature: float | None = DEFAULT_TEMPERATURE,
    critic_threshold: float = CRITIC_THRESHOLD,
    near_duplicate: float = NEAR_DUPLICATE,
    max_rounds: int = MAX_ROUNDS,
    max_cost_usd: float | None = None,
    redact: Redactor | None = None,
    store: GenerationStore | str | bool | None = None,
    on_round: Callable[[int, int, int], None] | None = None,
) -> SynthResult:
    """Generate ``n`` cases from ``documents`` (files, folders, :class:`Document` objects or any iterable of them:
    the source is pluggable), existing cases (``from_cases``: variations) and/or stored production traces
    (``from_traces``: :func:`documents_from_traces`), keeping only those that pass the gates
    (:mod:`referee.synth`). Writes ``out`` (the kept cases, JSONL) and ``<out>.rejected.jsonl`` when given.

    ``judge`` generates (any configured provider; ``"standin"`` without a key); ``critic`` judges the
    unanswerable and critic gates (default: ``judge``). ``store``: the run history the run is recorded in
    (every candidate, kept or rejected: :meth:`SynthResult.store_records`), as every run is: None the one in force
    (``REFEREE_STORE``, else ``.referee/history.sqlite``), False none, True the default, a URL or file path, or
    any object with ``add_generated_cases(batch_id, records)``. A store that cannot be written is a note, never a
    lost run (the case files are written first).
    """
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_N:
        raise UserError(f"n must be a whole number from 1 to {MAX_N:,}, got {n!r}")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or not 1 <= max_rounds <= 50:
        raise UserError(f"max_rounds must be a whole number from 1 to 50, got {max_rounds!r}")
    for name, v, lo, hi in (("critic_threshold", critic_threshold, 1, 5), ("near_duplicate", near_duplicate, 0.05, 1),
                            ("temperature", temperature, 0, 2), ("max_cost_usd", max_cost_usd, 0, 1e9)):
        if v is None and name in ("temperature", "max_cost_usd"):
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not lo <= v <= hi:
            raise UserError(f"{name} must be a number from {lo} to {hi}, got {v!r}")
    kind_shares = proportions(kinds if kinds is not None else DEFAULT_KINDS, KINDS, "kinds")
    persona_shares = proportions(personas, None, "personas") if personas else {}
    corpus, case_sources = source_corpus(documents, from_cases, redact, from_traces)
    inputs = [*(d.name for d in corpus.documents), *map(str, case_sources), *map(str, existing),
              *map(str, labelled)]
    if out is not None:
        for p in [*inputs, *(str(x) for x in ([documents] if isinstance(documents, str | Path) else []))]:
            if Path(p).exists() and (_same_file(out, p) or _same_file(rejected_path(out), p)):
                raise UserError(f"{out}: the output would overwrite an input ({p}); choose another --out")
    splitter = splitter or Splitter()
    chunks = splitter.split_all(corpus.documents)
    notes = [f"skipped {s.name}: {s.reason}" for s in corpus.skipped]
    if not chunks:
        raise UserError("no text to generate cases from: " + ("; ".join(notes) if notes else
                                                              "no documents given (documents, from_cases or "
                                                              "from_traces)"))
    notes += usable_kinds(kind_shares, chunks)
    index = DuplicateIndex(near_duplicate)
    for label, text in [*_inputs_of(existing, "existing"), *_inputs_of(labelled, "labelled")]:
        index.add(text, label)

    gen_judge = as_judge(judge)
    client = gen_judge.client()
    critic_client = as_judge(critic).client() if critic is not None else client
    generator = {"provider": client.provider.name, "model": client.provider.model, "temperature": temperature,
                 "seed": seed, "prompt_version": PROMPT_VERSION,
                 "kinds": {k: round(v, 4) for k, v in kind_shares.items()}}
    run = _Run(n=n, chunks=chunks, client=client, critic=critic_client, kinds=kind_shares, personas=persona_shares,
               seed=seed, temperature=temperature, critic_threshold=critic_threshold, use_cache=gen_judge.cache,
               concurrency=gen_judge.concurrency, index=index)
    rounds = 0
    stop: str | None = None
    candidates = 0
    try:
        while len(run.kept) < n and rounds < max_rounds:
            if max_cost_usd is not None and run.cost is not None and run.cost >= max_cost_usd:
                stop = f"the budget (${max_cost_usd:g}) was spent"
                break
            missing = n - len(run.kept)
            share = len(run.kept) / candidates if candidates else 1.0
            batches = max(1, math.ceil(missing / max(share, 0.25) / BATCH_SIZE))
            rounds += 1
            cands = await run.generate(batches)
            candidates += len(cands)
            got = await run.gate(cands)
            if on_round is not None:
                on_round(rounds, len(cands), got)
            if got == 0 and len(run.kept) < n:
                stop = f"round {rounds} kept no new case"
                break
    finally:
        await client.aclose()
        if critic_client is not client:
            await critic_client.aclose()
    if max_cost_usd is not None and run.cost is None:
        notes.append("the budget could not be enforced: the generator's model has no known price")
    kept = sorted(run.kept, key=lambda c: c.slot.index)
    surplus = kept[n:]
    kept = kept[:n]
    traces = {d.name: d.trace_id for d in corpus.documents if d.trace_id}
    cases = [_case(c, generator, traces) for c in kept]
    rejected = [_case(c, generator, traces) for c in sorted(run.rejected, key=lambda c: c.slot.index)]
    kept_kinds = Counter(c.slot.kind for c in kept)
    result = SynthResult(
        cases=cases, rejected=rejected, requested=n, rejections=run.rejections, unfilled=run.unfilled,
        errors=run.errors, rounds=rounds, candidates=candidates, surplus=len(surplus),
        shortfall=_shortfall(run, n, rounds, max_rounds, stop),
        kinds={k: {"target": round(v, 4), "kept": round(kept_kinds.get(k, 0) / len(kept), 4) if kept else 0.0}
               for k, v in kind_shares.items()},
        notes=notes, documents=[d.name for d in corpus.documents], chunks=len(chunks), cost_usd=run.cost,
        calls=client.stats.calls, cached_calls=client.stats.cached, generator=generator,
        generation_id=uuid.uuid4().hex)
    if out is not None:
        _write(Path(out), cases)
        _write(rejected_path(out), rejected)
        result.out, result.rejected_out = str(out), str(rejected_path(out))
    result.recorded = _record(result, store)
    return result


synth = sync_twin(synth_async, "The synchronous twin of :func:`synth_async`.")
