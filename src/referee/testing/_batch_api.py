"""The three batch wire formats for :class:`referee.testing.FakeLLMServer`: the OpenAI Batch API (file upload with
``purpose=batch``, ``/v1/batches``, output and error files; Azure OpenAI's under ``/openai`` with ``api-version``), Anthropic Message Batches (``/v1/messages/batches``,
``results_url`` JSONL) and Gemini batch mode (``models/{model}:batchGenerateContent``, ``batches/{id}`` operations
with inlined responses).

Each request line goes through the server's script and responder like a live call (a scripted ``Reply`` with an
HTTP error status becomes that request's error line). What a job does is set per job with :class:`BatchPlan`::

    srv.batch_plan(BatchPlan(outcome="expired", succeed=2))   # the next job expires after 2 requests ran
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from aiohttp import web

from .._util._data import jsonl_lines

if TYPE_CHECKING:
    import threading

    from ._wire import Reply, WireRequest

Outcome = Literal["completed", "expired", "cancelled", "failed"]


@dataclass
class BatchPlan:
    """What one batch job does: ``polls`` retrievals report it running, then it ends with ``outcome``.

    ``succeed`` (expired / cancelled jobs): how many requests ran before the end; the rest have no result.
    """

    outcome: Outcome = "completed"
    polls: int = 1
    succeed: int | None = None
    fail_polls: int = 0
    """The first retrievals answer with this HTTP status ``poll_status`` (an outage while the job runs)."""
    poll_status: int = 503


@dataclass
class _Job:
    id: str
    format: str
    requests: list[tuple[str, WireRequest]]
    """(custom id, the request as a live call would have sent it), in submission order."""
    plan: BatchPlan
    created: float = field(default_factory=time.time)
    polls: int = 0
    results: list[tuple[str, Reply | None]] | None = None
    """Once ended: each request's reply (None: it never ran)."""

    @property
    def ended(self) -> bool:
        return self.results is not None


class BatchRoutes:
    """Mixed into FakeLLMServer: job state lives on the server, guarded by its lock."""

    if TYPE_CHECKING:  # provided by FakeLLMServer
        _lock: threading.Lock

        def _next(self, req: WireRequest) -> Reply: ...
        def openai_envelope(self, req: WireRequest, reply: Reply) -> dict[str, Any]: ...
        def anthropic_envelope(self, req: WireRequest, reply: Reply) -> dict[str, Any]: ...
        def gemini_envelope(self, req: WireRequest, reply: Reply) -> dict[str, Any]: ...

    def _batch_init(self) -> None:
        self.batch_calls: list[tuple[str, str]] = []
        """(method, path) of every batch API call, for assertions ("no call was made")."""
        self.batch_jobs: dict[str, _Job] = {}
        self.files: dict[str, bytes] = {}
        self._plans: list[BatchPlan] = []
        self._ids = itertools.count(1)

    def batch_plan(self, *plans: BatchPlan) -> None:
        """Queue what the next jobs do (default: complete after one poll)."""
        with self._lock:
            self._plans.extend(plans)

    def _add_batch_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/files", self._openai_file_upload)
        app.router.add_get("/v1/files/{file_id}/content", self._openai_file_content)
        app.router.add_post("/v1/batches", self._openai_batch_create)
        app.router.add_get("/v1/batches/{batch_id}", self._openai_batch_get)
        app.router.add_post("/v1/messages/batches", self._anthropic_batch_create)
        app.router.add_get("/v1/messages/batches/{batch_id}", self._anthropic_batch_get)
        app.router.add_get("/v1/messages/batches/{batch_id}/results", self._anthropic_batch_results)
        app.router.add_get("/v1beta/batches/{batch_id}", self._gemini_batch_get)
        # Azure OpenAI's Batch API: the OpenAI routes under /openai, with ?api-version=
        app.router.add_post("/openai/files", self._openai_file_upload)
        app.router.add_get("/openai/files/{file_id}/content", self._openai_file_content)
        app.router.add_post("/openai/batches", self._openai_batch_create)
        app.router.add_get("/openai/batches/{batch_id}", self._openai_batch_get)

    # -- shared ------------------------------------------------------------------------------------------------
    def _new_job(self, fmt: str, prefix: str, requests: list[tuple[str, WireRequest]]) -> _Job:
        with self._lock:
            plan = self._plans.pop(0) if self._plans else BatchPlan()
            job = _Job(id=f"{prefix}{next(self._ids):06d}", format=fmt, requests=requests, plan=plan)
            self.batch_jobs[job.id] = job
        return job

    def _call(self, request: web.Request) -> None:
        with self._lock:
            self.batch_calls.append((request.method, request.path))

    def _advance(self, job: _Job) -> None:
        """One retrieval: the job runs for ``plan.polls`` retrievals, then ends and its requests are answered."""
        job.polls += 1
        if job.ended or job.polls <= job.plan.polls:
            return
        ran = len(job.requests) if job.plan.outcome in ("completed", "failed") else (job.plan.succeed or 0)
        if job.plan.outcome == "failed":
            ran = 0
        results: list[tuple[str, Reply | None]] = []
        for i, (cid, wire) in enumerate(job.requests):
            results.append((cid, self._next(wire) if i < ran else None))
        job.results = results

    def _key_check(self, request: web.Request, header: str) -> web.Response | None:
        if not getattr(self, "require_key", True):  # the stand-in server: no key, as for its live routes
            return None
        if request.path.startswith("/openai/"):  # Azure: api-key or an Entra ID bearer token, and an api-version
            if "api-version" not in request.query:
                return web.json_response({"error": {"message": "missing api-version"}}, status=404)
            header = "api-key" if "api-key" in request.headers else "Authorization"
        if not request.headers.get(header):
            return web.json_response({"error": {"message": "missing credentials", "type": "authentication_error"}},
                                     status=401)
        return None

    def _job(self, request: web.Request, fmt: str) -> _Job:
        job = self.batch_jobs.get(request.match_info["batch_id"])
        if job is None or job.format != fmt:
            raise web.HTTPNotFound(text=json.dumps({"error": {"message": "no such batch"}}),
                                   content_type="application/json")
        return job

    # -- OpenAI Batch API --------------------------------------------------------------------------------------
    async def _openai_file_upload(self, request: web.Request) -> web.StreamResponse:
        self._call(request)
        if (bad := self._key_check(request, "Authorization")) is not None:
            return bad
        form = await request.post()
        upload = form.get("file")
        if form.get("purpose") != "batch" or not isinstance(upload, web.FileField):
            return web.json_response({"error": {"message": "expected purpose=batch and a file"}}, status=400)
        data = upload.file.read()
        file_id = f"file-{next(self._ids):06d}"
        with self._lock:
            self.files[file_id] = data
        return web.json_response({"id": file_id, "object": "file", "purpose": "batch", "bytes": len(data),
                                  "filename": upload.filename, "created_at": int(time.time()), "status": "processed"})

    async def _openai_file_content(self, request: web.Request) -> web.StreamResponse:
        self._call(request)
        if (bad := self._key_check(request, "Authorization")) is not None:
            return bad
        data = self.files.get(request.match_info["file_id"])
        if data is None:
            return web.json_response({"error": {"message": "no such file"}}, status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    async def _openai_batch_create(self, request: web.Request) -> web.StreamResponse:
        from ._wire import WireRequest

        self._call(request)
        if (bad := self._key_check(request, "Authorization")) is not None:
            return bad
        body = await request.json()
        data = self.files.get(str(body.get("input_file_id")))
        endpoint = "/chat/completions" if request.path.startswith("/openai/") else "/v1/chat/completions"
        if data is None or body.get("endpoint") != endpoint or body.get("completion_window") != "24h":
            return web.json_response({"error": {"message": "invalid batch"}}, status=400)
        reqs = []
        for _, line in jsonl_lines(data.decode()):
            item = json.loads(line)
            if item.get("method") != "POST" or item.get("url") != endpoint:
                return web.json_response({"error": {"message": f"line for {item.get('url')}, not {endpoint}"}},
                                         status=400)
            reqs.append((item["custom_id"], WireRequest(format="openai", path="/v1/chat/completions", headers={},
                                                        query={}, body=item["body"])))
        if len({cid for cid, _ in reqs}) != len(reqs):
            return web.json_response({"error": {"message": "duplicate custom_id"}}, status=400)
        job = self._new_job("openai", "batch_", reqs)
        job_input = str(body["input_file_id"])
        setattr(job, "input_file_id", job_input)  # noqa: B010 - kept on the record the API returns
        return web.json_response(self._openai_batch_object(job))

    def _openai_batch_object(self, job: _Job) -> dict[str, Any]:
        total = len(job.requests)
        obj: dict[str, Any] = {
            "id": job.id, "object": "batch", "endpoint": "/v1/chat/completions", "completion_window": "24h",
            "input_file_id": getattr(job, "input_file_id", None), "created_at": int(job.created),
            "status": "validating" if job.polls == 0 else "in_progress", "output_file_id": None,
            "error_file_id": None, "request_counts": {"total": total, "completed": 0, "failed": 0},
        }
        if job.results is None:
            return obj
        status = {"completed": "completed", "expired": "expired", "cancelled": "cancelled",
                  "failed": "failed"}[job.plan.outcome]
        obj["status"] = status
        if status == "failed":
            obj["errors"] = {"object": "list", "data": [{"code": "invalid_request", "message": "scripted failure"}]}
            return obj
        out_lines: list[dict[str, Any]] = []
        err_lines: list[dict[str, Any]] = []
        for i, ((cid, wire), (_, reply)) in enumerate(zip(job.requests, job.results, strict=True)):
            if reply is None:
                code = "batch_expired" if status == "expired" else "batch_cancelled"
                err_lines.append({"id": f"batch_req_{i}", "custom_id": cid, "response": None,
                                  "error": {"code": code, "message": f"request not run: the batch was {status}"}})
            elif reply.status >= 400:
                err_lines.append({"id": f"batch_req_{i}", "custom_id": cid, "error": None, "response": {
                    "status_code": reply.status, "request_id": f"req_{i}",
                    "body": {"error": {"message": f"scripted error {reply.status}", "type": "invalid_request_error"}}}})
            else:
                out_lines.append({"id": f"batch_req_{i}", "custom_id": cid, "error": None, "response": {
                    "status_code": 200, "request_id": f"req_{i}", "body": self.openai_envelope(wire, reply)}})
        for lines, key in ((out_lines, "output_file_id"), (err_lines, "error_file_id")):
            if lines:
                if not hasattr(job, key):
                    file_id = f"file-{next(self._ids):06d}"
                    with self._lock:
                        self.files[file_id] = "".join(json.dumps(x) + "\n" for x in lines).encode()
                    setattr(job, key, file_id)
                obj[key] = getattr(job, key)
        obj["request_counts"] = {"total": total, "completed": len(out_lines), "failed": len(err_lines)}
        return obj

    def _outage(self, job: _Job) -> web.Response | None:
        if job.plan.fail_polls > 0:
            job.plan.fail_polls -= 1
            return web.json_response({"error": {"message": "scripted outage", "type": "server_error"}},
                                     status=job.plan.poll_status)
        return None

    async def _openai_batch_get(self, request: web.Request) -> web.StreamResponse:
        self._call(request)
        if (bad := self._key_check(request, "Authorization")) is not None:
            return bad
        job = self._job(request, "openai")
        if (down := self._outage(job)) is not None:
            return down
        self._advance(job)
        return web.json_response(self._openai_batch_object(job))

    # -- Anthropic Message Batches -----------------------------------------------------------------------------
    async def _anthropic_batch_create(self, request: web.Request) -> web.StreamResponse:
        from ._wire import WireRequest

        self._call(request)
        if (bad := self._key_check(request, "x-api-key")) is not None:
            return bad
        body = await request.json()
        reqs = [(r["custom_id"], WireRequest(format="anthropic", path="/v1/messages", headers={}, query={},
                                             body=r["params"])) for r in body.get("requests", [])]
        if not reqs or len({cid for cid, _ in reqs}) != len(reqs):
            return web.json_response({"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": "requests: empty or duplicate"}},
                                     status=400)
        job = self._new_job("anthropic", "msgbatch_", reqs)
        return web.json_response(self._anthropic_batch_object(job, str(request.url.origin())))

    def _anthropic_batch_object(self, job: _Job, origin: str) -> dict[str, Any]:
        counts = {"processing": len(job.requests), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        ended = job.results is not None
        if job.results is not None:
            counts["processing"] = 0
            for _, reply in job.results:
                kind = self._anthropic_result_type(job, reply)
                counts[kind] += 1
        return {"id": job.id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "created_at": "2026-01-01T00:00:00Z", "ended_at": None,
                "expires_at": "2026-01-02T00:00:00Z", "cancel_initiated_at": None, "archived_at": None,
                "results_url": f"{origin}/v1/messages/batches/{job.id}/results" if ended else None}

    @staticmethod
    def _anthropic_result_type(job: _Job, reply: Reply | None) -> str:
        if reply is None:
            return "expired" if job.plan.outcome == "expired" else "canceled"
        return "errored" if reply.status >= 400 else "succeeded"

    async def _anthropic_batch_get(self, request: web.Request) -> web.StreamResponse:
        self._call(request)
        job = self._job(request, "anthropic")
        if (down := self._outage(job)) is not None:
            return down
        self._advance(job)
        return web.json_response(self._anthropic_batch_object(job, str(request.url.origin())))

    async def _anthropic_batch_results(self, request: web.Request) -> web.StreamResponse:
        self._call(request)
        if (bad := self._key_check(request, "x-api-key")) is not None:
            return bad
        job = self._job(request, "anthropic")
        if job.results is None:
            return web.json_response({"type": "error", "error": {"message": "batch still processing"}}, status=400)
        lines = []
        for (cid, wire), (_, reply) in zip(job.requests, job.results, strict=True):
            kind = self._anthropic_result_type(job, reply)
            result: dict[str, Any] = {"type": kind}
            if kind == "succeeded":
                assert reply is not None
                result["message"] = self.anthropic_envelope(wire, reply)
            elif kind == "errored":
                result["error"] = {"type": "error", "error": {"type": "invalid_request_error",
                                                              "message": "scripted error"}}
            lines.append(json.dumps({"custom_id": cid, "result": result}))
        return web.Response(text="\n".join(lines) + "\n", content_type="application/binary")

    # -- Gemini batch mode -------------------------------------------------------------------------------------
    async def gemini_batch_create(self, request: web.Request, model: str) -> web.StreamResponse:
        from ._wire import WireRequest

        self._call(request)
        if (bad := self._key_check(request, "x-goog-api-key")) is not None:
            return bad
        body = await request.json()
        inlined = (((body.get("batch") or {}).get("inputConfig") or {}).get("requests") or {}).get("requests") or []
        reqs = [(str((r.get("metadata") or {}).get("key", i)),
                 WireRequest(format="gemini", path=f"/v1beta/models/{model}:generateContent", headers={}, query={},
                             body=r["request"])) for i, r in enumerate(inlined)]
        if not reqs:
            return web.json_response({"error": {"code": 400, "message": "no requests"}}, status=400)
        job = self._new_job("gemini", "", reqs)
        return web.json_response(self._gemini_operation(job, model))

    def _gemini_operation(self, job: _Job, model: str | None = None) -> dict[str, Any]:
        state = "BATCH_STATE_PENDING" if job.polls == 0 else "BATCH_STATE_RUNNING"
        op: dict[str, Any] = {"name": f"batches/{job.id}", "done": False}
        if job.results is not None:
            state = {"completed": "BATCH_STATE_SUCCEEDED", "expired": "BATCH_STATE_EXPIRED",
                     "cancelled": "BATCH_STATE_CANCELLED", "failed": "BATCH_STATE_FAILED"}[job.plan.outcome]
            op["done"] = True
            if job.plan.outcome == "completed":
                responses = []
                for (cid, wire), (_, reply) in zip(job.requests, job.results, strict=True):
                    assert reply is not None
                    if reply.status >= 400:
                        responses.append({"error": {"code": reply.status, "message": "scripted error"}})
                    else:
                        responses.append({"response": self.gemini_envelope(wire, reply), "metadata": {"key": cid}})
                op["response"] = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main."
                                           "GenerateContentBatchOutput",
                                  "inlinedResponses": {"inlinedResponses": responses}}
            elif job.plan.outcome == "failed":
                op["error"] = {"code": 13, "message": "scripted failure"}
        op["metadata"] = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                          "name": f"batches/{job.id}", "state": state,
                          "batchStats": {"requestCount": str(len(job.requests))}}
        return op

    async def _gemini_batch_get(self, request: web.Request) -> web.StreamResponse:
        self._call(request)
        job = self._job(request, "gemini")
        if (down := self._outage(job)) is not None:
            return down
        self._advance(job)
        return web.json_response(self._gemini_operation(job))
