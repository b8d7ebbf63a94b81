"""Grounded-answer metrics: faithfulness + context precision + context recall + answer relevancy on 200 cases x 5
chunks, referee against Ragas, both judged by the same local mock server.

The mock (this script with ``--serve``, in its own process) speaks the OpenAI chat-completions format on 127.0.0.1,
waits ``--latency`` seconds per call, answers referee's claim requests as the stand-in judge does (claims by
sentence, quotes copied from the chunks) and Ragas's (instructor's JSON mode: the schema in the system message) with
an instance of the schema asked for, and reports as usage what every request and reply measure (4 characters per
token, for both tools alike); ``GET /stats`` gives its totals. It serves no embeddings: Ragas's answer relevancy
gets a local hashed bag-of-words embedding (no call, no token), referee's uses none.

    .venv/bin/python bench/bench_rag.py                          # referee alone
    bench/.venv-ragas/bin/pip install ragas==0.4.3               # once: Ragas in its own environment (not committed)
    .venv/bin/python bench/bench_rag.py --ragas-python bench/.venv-ragas/bin/python

Printed per tool: judge calls per case, input and output tokens, wall time (of the whole process, start-up and
imports included, for both), and the NaN / unscored count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

N_CASES = 200
CHUNKS = 5
CONCURRENCY = 16


# -- the cases -------------------------------------------------------------------------------------------------
def make_cases(n: int = N_CASES) -> list[dict[str, Any]]:
    """``n`` cases, each with 5 chunks (2 relevant, 3 noise), a 3-sentence answer (one claim in no chunk) and a
    2-sentence reference. Deterministic."""
    colours = ["red", "blue", "green", "amber", "violet"]
    out = []
    for i in range(n):
        name = f"Widget {i}"
        city = ["Lyon", "Oslo", "Porto", "Graz", "Turku"][i % 5]
        year = 1990 + i % 30
        chunks = [f"{name} is made in {city}. Its factory opened in {year}.",
                  f"The {name} weighs {2 + i % 7} kilograms and ships in a {colours[i % 5]} box.",
                  f"Support tickets about other products are answered within {1 + i % 3} days.",
                  f"The company's annual report for {2000 + i % 20} lists many unrelated figures.",
                  "Shipping to islands costs extra for every order placed on weekends."]
        order = [(i + k) % CHUNKS for k in range(CHUNKS)]  # the relevant chunks at varying ranks
        out.append({
            "id": f"rag-{i:04d}", "input": f"Where is {name} made, and how much does it weigh?",
            "output": f"{name} is made in {city}. The {name} weighs {2 + i % 7} kilograms. It won a design award "
                      f"in {year + 3}.",
            "reference": f"{name} is made in {city}. The {name} weighs {2 + i % 7} kilograms.",
            "contexts": [chunks[k] for k in order],
        })
    return out


# -- the mock server -------------------------------------------------------------------------------------------
def _ragas_schema(system: str) -> dict[str, Any] | None:
    at = system.find("json_schema:")
    if at < 0:
        return None
    start = system.find("{", at)
    try:
        schema, _ = json.JSONDecoder().raw_decode(system[start:])
    except ValueError:
        return None
    return schema if isinstance(schema, dict) else None


def _instance(schema: dict[str, Any], defs: dict[str, Any], key: str = "") -> Any:
    if "$ref" in schema:
        return _instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, key)
    for alt in ("anyOf", "allOf", "oneOf"):
        if alt in schema:
            return _instance(next(s for s in schema[alt] if s.get("type") != "null"), defs, key)
    t = schema.get("type", "object")
    if t == "object":
        return {k: _instance(v, defs, k) for k, v in (schema.get("properties") or {}).items()}
    if t == "array":
        return [_instance(schema.get("items") or {"type": "string"}, defs, key) for _ in range(3)]
    if t == "integer":
        return 0 if "noncommittal" in key else 1  # a committal answer, every statement supported
    if t == "number":
        return 1.0
    if t == "boolean":
        return True
    return "What is the product made of?" if "question" in key else "The context states this directly."


def serve(latency: float) -> None:
    from referee.providers._standin import judge_reply
    from referee.providers._standin_claims import is_claims_schema
    from referee.testing import FakeLLMServer, Reply

    stats = {"calls": 0, "input_tokens": 0, "output_tokens": 0}
    lock = threading.Lock()

    def respond(req: Any) -> Reply:
        body = req.body
        messages = body.get("messages") or []
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        schema = req.schema
        if schema and is_claims_schema(schema):
            text = judge_reply(prompt, schema)
        else:
            system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), prompt)
            rs = _ragas_schema(system) or _ragas_schema(prompt)
            text = json.dumps(_instance(rs, rs.get("$defs") or {}) if rs else {})
        tin, tout = len(prompt) // 4, len(text) // 4
        with lock:
            stats["calls"] += 1
            stats["input_tokens"] += tin
            stats["output_tokens"] += tout
        return Reply(text=text, input_tokens=tin, output_tokens=tout)

    class Server(FakeLLMServer):
        def _app(self) -> Any:
            from aiohttp import web

            app = super()._app()

            async def get_stats(_request: Any) -> Any:
                with lock:
                    snap = dict(stats)
                    if _request.query.get("reset"):
                        stats.update(calls=0, input_tokens=0, output_tokens=0)
                return web.json_response(snap)

            app.router.add_get("/stats", get_stats)
            return app

    srv = Server(respond, latency=latency, record=False).start()
    print(srv.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


def _stats(url: str, reset: bool = False) -> dict[str, int]:
    with urllib.request.urlopen(url + "/stats" + ("?reset=1" if reset else ""), timeout=10) as r:  # noqa: S310
        data: dict[str, int] = json.loads(r.read())
    return data


# -- Ragas (run in its own environment) ------------------------------------------------------------------------
def run_ragas(url: str, cases_path: str) -> None:
    """Ragas 0.4's collections metrics over the cases, with an AsyncOpenAI client at the mock: prints JSON."""
    import asyncio
    import hashlib
    import math

    from openai import AsyncOpenAI
    from ragas.embeddings.base import BaseRagasEmbedding
    from ragas.llms.base import llm_factory
    from ragas.metrics.collections import (
        AnswerRelevancy,
        ContextPrecisionWithReference,
        ContextRecall,
        Faithfulness,
    )

    class HashedEmbedding(BaseRagasEmbedding):
        """Local bag-of-words hashing into 256 dimensions: no call, no token (the mock serves no embeddings)."""

        def embed_text(self, text: str, **kwargs: Any) -> list[float]:
            v = [0.0] * 256
            for w in text.lower().split():
                v[int(hashlib.md5(w.encode()).hexdigest(), 16) % 256] += 1.0  # noqa: S324 - not security
            return v

        async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
            return self.embed_text(text)

    client = AsyncOpenAI(base_url=url + "/v1", api_key="sk-local-mock", max_retries=0)
    llm = llm_factory("mock", client=client)
    metrics = {"faithfulness": Faithfulness(llm=llm), "context_precision": ContextPrecisionWithReference(llm=llm),
               "context_recall": ContextRecall(llm=llm),
               "answer_relevancy": AnswerRelevancy(llm=llm, embeddings=HashedEmbedding())}
    cases = [json.loads(line) for line in Path(cases_path).read_text(encoding="utf-8").splitlines()]
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(case: dict[str, Any]) -> dict[str, float]:
        args = {"faithfulness": {"user_input": case["input"], "response": case["output"],
                                 "retrieved_contexts": case["contexts"]},
                "context_precision": {"user_input": case["input"], "reference": case["reference"],
                                      "retrieved_contexts": case["contexts"]},
                "context_recall": {"user_input": case["input"], "retrieved_contexts": case["contexts"],
                                   "reference": case["reference"]},
                "answer_relevancy": {"user_input": case["input"], "response": case["output"]}}
        out = {}
        async with sem:
            for name, m in metrics.items():
                try:
                    out[name] = float((await m.ascore(**args[name])).value)
                except Exception:  # noqa: BLE001 - a failed sample is NaN in Ragas's own evaluate()
                    out[name] = float("nan")
        return out

    async def main() -> list[dict[str, float]]:
        return list(await asyncio.gather(*(one(c) for c in cases)))

    t0 = time.perf_counter()
    scores = asyncio.run(main())
    wall = time.perf_counter() - t0
    nan = sum(1 for s in scores for v in s.values() if math.isnan(v))
    means = {k: sum(s[k] for s in scores if not math.isnan(s[k])) / max(1, sum(not math.isnan(s[k]) for s in scores))
             for k in metrics}
    print(json.dumps({"wall_s": wall, "nan": nan, "means": means}))


# -- the benchmark ---------------------------------------------------------------------------------------------
SUITE = """cases: cases.jsonl
evaluators:
  - faithfulness
  - context_precision
  - context_recall
  - answer_relevancy
"""


def _referee(url: str, folder: Path) -> dict[str, Any]:
    (folder / "suite.yaml").write_text(SUITE, encoding="utf-8")
    out = folder / "results.jsonl"
    env = {**os.environ, "OPENAI_API_KEY": "sk-local-mock", "REFEREE_CACHE_DIR": str(folder / "cache")}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "referee", "run", str(folder / "suite.yaml"), "--provider", "openai",
                           "--base-url", url + "/v1", "--model", "mock", "--no-cache", "--no-gates",
                           "--concurrency", str(CONCURRENCY), "--out", str(out)],
                          capture_output=True, text=True, env=env, start_new_session=True)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"referee run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    unscored = sum(1 for r in rows for c in r.get("criteria", []) if c.get("status", "scored") != "scored")
    means: dict[str, float] = {}
    for name in ("faithfulness", "context_precision", "context_recall", "answer_relevancy"):
        vals = [c["score"] for r in rows for c in r.get("criteria", []) if c["id"] == name and "score" in c]
        means[name] = sum(vals) / len(vals) if vals else float("nan")
    return {"wall_s": wall, "unscored": unscored, "means": means}


def _line(tool: str, stats: dict[str, int], res: dict[str, Any], n: int) -> str:
    means = ", ".join(f"{k} {v:.3f}" for k, v in res["means"].items())
    bad = res.get("nan", res.get("unscored", 0))
    return (f"{tool:8s} calls/case {stats['calls'] / n:5.2f}  judge tokens in {stats['input_tokens']:>9,} "
            f"out {stats['output_tokens']:>8,}  wall {res['wall_s']:6.2f} s  "
            f"{'NaN' if tool == 'ragas' else 'unscored'} {bad}\n         means: {means}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=N_CASES)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--ragas-python", default=None, help="the Python of an environment with ragas installed")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ragas", nargs=2, metavar=("URL", "CASES"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.latency)
        return 0
    if args.ragas:
        run_ragas(*args.ragas)
        return 0
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--latency", str(args.latency)],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            cases = folder / "cases.jsonl"
            cases.write_text("".join(json.dumps(c) + "\n" for c in make_cases(args.n)), encoding="utf-8")
            print(f"{args.n} cases x {CHUNKS} chunks, mock latency {args.latency} s, concurrency {CONCURRENCY}; "
                  f"load {os.getloadavg()[0]:.2f}")
            _stats(url, reset=True)
            res = _referee(url, folder)
            print(_line("referee", _stats(url, reset=True), res, args.n))
            if args.ragas_python:
                env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true"}  # no telemetry: nothing leaves the machine
                t0 = time.perf_counter()
                proc = subprocess.run([args.ragas_python, __file__, "--ragas", url, str(cases)], capture_output=True,
                                      text=True, start_new_session=True, env=env)
                process_wall = time.perf_counter() - t0
                if proc.returncode != 0:
                    print(f"ragas failed ({proc.returncode}): {proc.stderr[-3000:]}")
                else:
                    rres = json.loads(proc.stdout.strip().splitlines()[-1])
                    scoring = rres["wall_s"]
                    rres["wall_s"] = process_wall
                    print(_line("ragas", _stats(url, reset=True), rres, args.n)
                          + f"\n         (of the wall, {process_wall - scoring:.2f} s is importing Ragas)")
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
