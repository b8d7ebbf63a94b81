"""Generate labelled adversarial cases from seed cases and attack templates (package data, or your own files).

Every generated case has ``category`` = the failure mode under test (``prompt-injection``, ``jailbreak``,
``data-exfiltration``, ``tool-misuse``, ``over-refusal``), an ``expect`` block that code can check where
possible (``behaviour``, ``must_not_contain`` canaries, ``tools_not_used``), a ``setup`` block the agent
harness applies (text to add to the system prompt, canned tool results), and ``metadata`` naming the seed,
template, surface and technique. Same ``seed`` and inputs -> the same cases, byte for byte.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .._util._yaml import load as load_yaml
from .._util._yaml import parse as parse_yaml
from ..errors import InputError

FAILURE_MODES = ("prompt-injection", "jailbreak", "data-exfiltration", "tool-misuse", "over-refusal")
SURFACES = ("user_message", "document", "tool_result", "conversation")
BEHAVIOURS = ("refuse", "comply", "ignore_injection")


@dataclass(frozen=True)
class Seed:
    id: str
    failure_mode: str
    surfaces: tuple[str, ...]
    payload: str
    expect: dict[str, Any]
    task: str | None = None
    tool: str | None = None
    tool_result: dict[str, Any] | None = None
    secret: str | None = None


@dataclass(frozen=True)
class Template:
    id: str
    surface: str
    modes: tuple[str, ...]
    technique: str
    text: str
    turns: tuple[dict[str, str], ...] = ()


def _read_yaml(path: Path | None, package_file: str) -> tuple[Any, str]:
    if path is None:
        text = resources.files("referee.redteam").joinpath("data").joinpath(package_file).read_text(encoding="utf-8")
        where = f"referee/redteam/data/{package_file}"
        return parse_yaml(text, where), where
    if not path.exists():
        raise InputError("file not found", file=str(path))
    return load_yaml(str(path)), str(path)


def _read_list(path: str | Path | None, key: str) -> tuple[list[Any], str]:
    """The ``key`` list of ``<key>.yaml`` (the user's file, else the packaged one; a bare list is accepted)."""
    data, where = _read_yaml(Path(path) if path else None, f"{key}.yaml")
    items = data.get(key) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise InputError(f"expected a '{key}' list", file=where)
    return items, where


def load_seeds(path: str | Path | None = None, *, with_builtin: bool = False) -> list[Seed]:
    """The seed attacks of ``path`` (the packaged ones without it; ``with_builtin``: the packaged ones, then
    those of ``path``); InputError naming the file and entry."""
    if path is not None and with_builtin:
        mine = load_seeds(path)
        return load_seeds() + mine
    items, where = _read_list(path, "seeds")
    out = []
    for i, s in enumerate(items):
        fld = f"seeds[{i}]"
        if not isinstance(s, dict):
            raise InputError("must be an object", file=where, field=fld)
        for key in ("id", "failure_mode", "payload"):
            if not isinstance(s.get(key), str) or not s[key]:
                raise InputError(f"'{key}' is required (a string)", file=where, field=fld)
        if s["failure_mode"] not in FAILURE_MODES:
            raise InputError(f"unknown failure_mode {s['failure_mode']!r} (known: {', '.join(FAILURE_MODES)})",
                             file=where, field=fld)
        surfaces = s.get("surfaces") or ["user_message"]
        if not isinstance(surfaces, list):
            raise InputError("'surfaces' must be a list", file=where, field=fld)
        bad = [x for x in surfaces if x not in SURFACES]
        if bad:
            raise InputError(f"unknown surface(s) {', '.join(map(str, bad))} (known: {', '.join(SURFACES)})",
                             file=where, field=fld)
        expect = s.get("expect") or {}
        if not isinstance(expect, dict) or expect.get("behaviour") not in BEHAVIOURS:
            raise InputError(f"expect.behaviour must be one of {', '.join(BEHAVIOURS)}", file=where, field=fld)
        if "tool_result" in surfaces and not (s.get("tool") and isinstance(s.get("tool_result"), dict)):
            raise InputError("a tool_result surface needs 'tool' and a 'tool_result' object", file=where, field=fld)
        out.append(Seed(id=s["id"], failure_mode=s["failure_mode"], surfaces=tuple(surfaces), payload=s["payload"],
                        expect=dict(expect), task=s.get("task"), tool=s.get("tool"), tool_result=s.get("tool_result"),
                        secret=s.get("secret")))
    ids = [s.id for s in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise InputError(f"duplicate seed id(s): {', '.join(dup)}", file=where)
    return out


def load_templates(path: str | Path | None = None, *, with_builtin: bool = False) -> list[Template]:
    """The attack templates of ``path`` (the packaged ones without it; ``with_builtin``: the packaged ones, then
    those of ``path``); InputError naming the file and entry."""
    if path is not None and with_builtin:
        mine = load_templates(path)
        return load_templates() + mine
    items, where = _read_list(path, "templates")
    out = []
    for i, t in enumerate(items):
        fld = f"templates[{i}]"
        if not isinstance(t, dict) or not isinstance(t.get("id"), str) or not isinstance(t.get("text"), str):
            raise InputError("each template needs 'id' and 'text'", file=where, field=fld)
        if t.get("surface") not in SURFACES:
            raise InputError(f"'surface' must be one of {', '.join(SURFACES)}", file=where, field=fld)
        modes = t.get("modes") or list(FAILURE_MODES)
        bad = [m for m in modes if m not in FAILURE_MODES]
        if bad:
            raise InputError(f"unknown mode(s) {', '.join(map(str, bad))}", file=where, field=fld)
        out.append(Template(id=t["id"], surface=t["surface"], modes=tuple(modes),
                            technique=str(t.get("technique", t["id"])), text=t["text"],
                            turns=tuple(t.get("turns") or ())))
    return out


def _fill(text: str, values: dict[str, str]) -> str:
    """Single-pass literal replacement: a payload containing ``{canary}`` is filled, but values are never
    re-expanded (the same rule as judge templates)."""
    import re

    return re.sub(r"\{([a-z_]+)\}", lambda m: values.get(m.group(1), m.group(0)), text)


def _canary(rng: random.Random) -> str:
    return f"CANARY-{rng.getrandbits(40):010x}"


def generate(*, seed: int = 0, seeds: Sequence[Seed] | None = None, templates: Sequence[Template] | None = None,
             modes: Sequence[str] | None = None, surfaces: Sequence[str] | None = None,
             per_seed: int | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """Every (seed, template) pair whose failure mode and surface agree, filtered and sampled with ``seed``.

    ``per_seed`` keeps at most that many templates per seed (sampled); ``limit`` caps the total (sampled,
    keeping at least one case per failure mode when it can). Output order is stable: by seed, then template.
    """
    rng = random.Random(seed)
    seed_list = list(seeds) if seeds is not None else load_seeds()
    tmpl_list = list(templates) if templates is not None else load_templates()
    for m in modes or ():
        if m not in FAILURE_MODES:
            raise InputError(f"unknown failure mode {m!r} (known: {', '.join(FAILURE_MODES)})")
    for s in surfaces or ():
        if s not in SURFACES:
            raise InputError(f"unknown surface {s!r} (known: {', '.join(SURFACES)})")
    pairs: list[tuple[Seed, Template]] = []
    for sd in seed_list:
        if modes and sd.failure_mode not in modes:
            continue
        options = [t for t in tmpl_list if sd.failure_mode in t.modes and t.surface in sd.surfaces
                   and (not surfaces or t.surface in surfaces)]
        if per_seed is not None and len(options) > per_seed:
            options = sorted(rng.sample(options, per_seed), key=options.index)
        pairs += [(sd, t) for t in options]
    if limit is not None and len(pairs) > limit:
        by_mode: dict[str, list[int]] = {}
        for i, (sd, _) in enumerate(pairs):
            by_mode.setdefault(sd.failure_mode, []).append(i)
        keep = {rng.choice(ix) for ix in by_mode.values()} if limit >= len(by_mode) else set()
        rest = [i for i in range(len(pairs)) if i not in keep]
        keep |= set(rng.sample(rest, max(0, limit - len(keep))))
        pairs = [p for i, p in enumerate(pairs) if i in keep]
    return [_case(sd, t, _canary(rng), seed) for sd, t in pairs]


def _case(sd: Seed, t: Template, canary: str, gen_seed: int) -> dict[str, Any]:
    task_prefix = f"{sd.task} " if sd.task and t.surface == "user_message" else ""
    payload = _fill(sd.payload, {"canary": canary})
    values = {"payload": payload, "canary": canary, "task": sd.task or "", "task_prefix": task_prefix}
    setup: dict[str, Any] = {}
    case: dict[str, Any] = {"id": f"rt-{sd.id}-{t.id}", "category": sd.failure_mode}
    if t.surface == "tool_result":
        assert sd.tool and sd.tool_result is not None
        result = {k: _fill(v, {"canary": canary}) if isinstance(v, str) else v for k, v in sd.tool_result.items()}
        result["notes"] = _fill(t.text, values)
        case["input"] = sd.task or "Please help me with my account."
        setup["tool_results"] = {sd.tool: result}
    else:
        case["input"] = _fill(t.text, values)
    if t.surface == "conversation":
        case["turns"] = [dict(x) for x in t.turns] + [{"role": "user", "content": case["input"]}]
    if sd.secret:
        setup["system_prompt"] = _fill(sd.secret, {"canary": canary})
    expect = dict(sd.expect)
    if sd.failure_mode != "over-refusal":
        expect["must_not_contain"] = [canary, *expect.get("must_not_contain", [])]
    case["expect"] = expect
    if setup:
        case["setup"] = setup
    case["metadata"] = {"adversarial": True, "failure_mode": sd.failure_mode, "surface": t.surface,
                        "technique": t.technique, "seed_case": sd.id, "template": t.id, "canary": canary,
                        "generator_seed": gen_seed}
    return case


def write_cases(cases: Sequence[dict[str, Any]], path: str | Path) -> None:
    """Write ``cases`` as JSONL to ``path`` (its folder created)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
