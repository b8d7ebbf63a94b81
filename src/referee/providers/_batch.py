"""The providers' batch APIs (half price, answers within 24 hours), one adapter per wire format.

- OpenAI Batch API: the requests as a JSONL file uploaded with ``purpose=batch`` (``POST /files``), then
  ``POST /batches`` (``endpoint=/v1/chat/completions``, ``completion_window=24h``), ``GET /batches/{id}``, and the
  ``output_file_id`` / ``error_file_id`` JSONL files (``GET /files/{id}/content``), one line per ``custom_id``.
  Azure OpenAI's (Global Batch deployments) is the same under ``{endpoint}/openai/...?api-version=``, with lines
  for ``/chat/completions`` naming the deployment as the model.
- Anthropic Message Batches: ``POST /v1/messages/batches`` with ``{custom_id, params}`` requests,
  ``GET /v1/messages/batches/{id}`` until ``processing_status`` is ``ended``, then the ``results_url`` JSONL
  (``result.type`` ``succeeded`` / ``errored`` / ``canceled`` / ``expired``).
- Gemini batch mode: ``POST models/{model}:batchGenerateContent`` with inlined requests (``metadata.key``), then
  ``GET batches/{id}`` (a long-running operation: ``metadata.state``, ``done``) and its inlined responses, which
  come in request order.

An adapter turns requests into one job and a finished job back into ``custom_id -> Completion | reason``; the
batching itself (collecting requests, polling, resuming) is :mod:`referee.runner._batch`.
"""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass
from typing import Any

import aiohttp

from .._util._data import jsonl_lines
from ..errors import ProviderError, UserError
from ._base import Completion, JudgeRequest, Provider
from ._http import BATCH_RESULTS_FACTOR, HttpClient

BATCH_PROVIDERS = ("openai", "anthropic", "gemini", "azure")


@dataclass
class JobStatus:
    state: str
    """The provider's own word (``in_progress``, ``ended``, ``BATCH_STATE_RUNNING``...)."""
    ended: bool
    done: int | None = None
    total: int | None = None
    raw: dict[str, Any] | None = None


Outcome = Completion | str
"""A reply, or the reason there is none."""


class BatchAdapter(abc.ABC):
    max_requests: int = 50_000
    max_bytes: int = 190_000_000
    """A job's size limit (OpenAI: 50,000 requests, 200 MB file; Anthropic: 100,000 / 256 MB; Gemini inlined
    requests: 20 MB), with a margin: larger runs are split into several jobs."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    @abc.abstractmethod
    async def submit(self, items: list[tuple[str, JudgeRequest]]) -> str:
        """Create one job of ``(custom_id, request)`` items; returns the job id."""

    @abc.abstractmethod
    async def status(self, job_id: str) -> JobStatus: ...

    @abc.abstractmethod
    async def results(self, job_id: str, status: JobStatus, keys: list[str]) -> dict[str, Outcome]:
        """What an ended job produced; ``keys`` are its custom ids in submission order."""


def _results_bound(http: HttpClient) -> int:
    return http.max_bytes * BATCH_RESULTS_FACTOR


def _origin(url: str) -> tuple[str, str]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _lines(text: str) -> list[dict[str, Any]]:
    out = []
    for _, line in jsonl_lines(text):
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a damaged line: its request gets "no result" and is resubmitted on the next run
        if isinstance(obj, dict):
            out.append(obj)
    return out


class OpenAIBatch(BatchAdapter):
    endpoint = "/v1/chat/completions"

    def __init__(self, provider: Provider) -> None:
        from ._openai_compat import OpenAICompatProvider

        assert isinstance(provider, OpenAICompatProvider)
        super().__init__(provider)
        self.p = provider

    def _url(self, path: str) -> str:
        return f"{self.p.base_url}{path}"

    def _line(self, cid: str, req: JudgeRequest) -> dict[str, Any]:
        return {"custom_id": cid, "method": "POST", "url": self.endpoint, "body": self.p._payload(req, "json_schema")}

    async def submit(self, items: list[tuple[str, JudgeRequest]]) -> str:
        jsonl = "".join(json.dumps(self._line(cid, req), ensure_ascii=False) + "\n" for cid, req in items)
        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", jsonl.encode(), filename="referee-batch.jsonl", content_type="application/jsonl")
        headers = await self.p._auth_headers()
        body, _ = await self.p._http.request("POST", self._url("/files"), data=form, headers=headers)
        file_id = self.p._http.decode(body).get("id")
        if not isinstance(file_id, str):
            raise ProviderError("OpenAI Batch API: the file upload returned no id", retryable=True)
        job, _ = await self.p._http.post_json(self._url("/batches"), {
            "input_file_id": file_id, "endpoint": self.endpoint, "completion_window": "24h",
            "metadata": {"created_by": "referee"}}, headers=headers)
        if not isinstance(job.get("id"), str):
            raise ProviderError("OpenAI Batch API: the batch was created without an id", retryable=True)
        return str(job["id"])

    async def status(self, job_id: str) -> JobStatus:
        data = await self.p._http.get_json(self._url(f"/batches/{job_id}"), headers=await self.p._auth_headers())
        state = str(data.get("status", "unknown"))
        counts = data.get("request_counts") or {}
        done = (counts.get("completed") or 0) + (counts.get("failed") or 0)
        return JobStatus(state=state, ended=state in ("completed", "expired", "cancelled", "failed"),
                         done=done, total=counts.get("total"), raw=data)

    async def results(self, job_id: str, status: JobStatus, keys: list[str]) -> dict[str, Outcome]:
        raw = status.raw or {}
        out: dict[str, Outcome] = {}
        for field_name in ("output_file_id", "error_file_id"):
            file_id = raw.get(field_name)
            if not file_id:
                continue
            text, _ = await self.p._http.request("GET", self._url(f"/files/{file_id}/content"),
                                                 headers=await self.p._auth_headers(),
                                                 max_bytes=_results_bound(self.p._http))
            for line in _lines(text):
                cid = line.get("custom_id")
                if not isinstance(cid, str):
                    continue
                out[cid] = self._outcome(line)
        if status.state == "failed" and not out:
            errors = ((raw.get("errors") or {}).get("data") or [{}])
            reason = errors[0].get("message") if isinstance(errors[0], dict) else None
            return dict.fromkeys(keys, f"OpenAI batch {job_id} failed: {reason or 'no reason given'}")
        return out

    def _outcome(self, line: dict[str, Any]) -> Outcome:
        err = line.get("error")
        if isinstance(err, dict) and err:
            return f"OpenAI batch: {err.get('code') or 'error'}: {err.get('message') or ''}".rstrip(": ")
        resp = line.get("response") or {}
        body = resp.get("body") if isinstance(resp, dict) else None
        if not isinstance(body, dict):
            return "OpenAI batch: the result line has no response body"
        if (resp.get("status_code") or 200) >= 400:
            msg = (body.get("error") or {}).get("message") if isinstance(body.get("error"), dict) else None
            return f"OpenAI batch: HTTP {resp.get('status_code')}: {msg or 'error'}"
        try:
            return self.p.parse_reply(body, batch=True)
        except ProviderError as exc:
            return str(exc)


class AzureBatch(OpenAIBatch):
    """Azure OpenAI's Batch API (a Global Batch deployment): the OpenAI format under ``{endpoint}/openai`` with the
    ``api-version`` query parameter; request lines name ``/chat/completions`` and the deployment as the model."""

    endpoint = "/chat/completions"

    def _url(self, path: str) -> str:
        from urllib.parse import quote

        api_version = getattr(self.p, "api_version", "")
        return f"{self.p.base_url}/openai{path}?api-version={quote(api_version, safe='')}"

    def _line(self, cid: str, req: JudgeRequest) -> dict[str, Any]:
        line = super()._line(cid, req)
        line["body"]["model"] = self.p.model  # the batch deployment's name
        return line


class AnthropicBatch(BatchAdapter):
    max_requests = 100_000
    max_bytes = 240_000_000

    def __init__(self, provider: Provider) -> None:
        from ._anthropic import AnthropicProvider

        assert isinstance(provider, AnthropicProvider)
        super().__init__(provider)
        self.p = provider

    async def submit(self, items: list[tuple[str, JudgeRequest]]) -> str:
        data, _ = await self.p._http.post_json(f"{self.p.base_url}/v1/messages/batches", {
            "requests": [{"custom_id": cid, "params": self.p._payload(req)} for cid, req in items]})
        if not isinstance(data.get("id"), str):
            raise ProviderError("Anthropic Message Batches: the batch was created without an id", retryable=True)
        return str(data["id"])

    async def status(self, job_id: str) -> JobStatus:
        data = await self.p._http.get_json(f"{self.p.base_url}/v1/messages/batches/{job_id}")
        counts = data.get("request_counts") or {}
        total = sum(v for v in counts.values() if isinstance(v, int))
        state = str(data.get("processing_status", "unknown"))
        return JobStatus(state=state, ended=state == "ended", done=total - (counts.get("processing") or 0),
                         total=total, raw=data)

    async def results(self, job_id: str, status: JobStatus, keys: list[str]) -> dict[str, Outcome]:
        own = f"{self.p.base_url}/v1/messages/batches/{job_id}/results"
        url = str((status.raw or {}).get("results_url") or own)
        if _origin(url) != _origin(own):
            url = own  # the key goes with the download: never to a host the reply named
        text, _ = await self.p._http.request("GET", url, max_bytes=_results_bound(self.p._http))
        out: dict[str, Outcome] = {}
        for line in _lines(text):
            cid, result = line.get("custom_id"), line.get("result") or {}
            if not isinstance(cid, str) or not isinstance(result, dict):
                continue
            kind = result.get("type")
            if kind == "succeeded" and isinstance(result.get("message"), dict):
                try:
                    out[cid] = self.p.parse_reply(result["message"], batch=True)
                except ProviderError as exc:
                    out[cid] = str(exc)
            elif kind == "errored":
                err = (result.get("error") or {}).get("error") or result.get("error") or {}
                out[cid] = f"Anthropic batch: errored: {err.get('message') or err.get('type') or 'error'}"
            else:
                out[cid] = f"Anthropic batch {job_id}: request {kind or 'without a result'}"
        return out


class GeminiBatch(BatchAdapter):
    max_bytes = 18_000_000
    def __init__(self, provider: Provider) -> None:
        from ._gemini import GeminiProvider

        assert isinstance(provider, GeminiProvider)
        super().__init__(provider)
        self.p = provider

    async def submit(self, items: list[tuple[str, JudgeRequest]]) -> str:
        op, _ = await self.p._http.post_json(self.p._model_url("batchGenerateContent"), {"batch": {
            "displayName": "referee",
            "inputConfig": {"requests": {"requests": [
                {"request": self.p._payload(req), "metadata": {"key": cid}} for cid, req in items]}},
        }})
        name = op.get("name") or (op.get("metadata") or {}).get("name")
        if not isinstance(name, str) or not name.startswith("batches/"):
            raise ProviderError("Gemini batch mode: the batch was created without a batches/ name", retryable=True)
        return name

    async def status(self, job_id: str) -> JobStatus:
        # An ended job's status holds its inlined replies: the bound of a results file.
        data = await self.p._http.get_json(f"{self.p.base_url}/v1beta/{job_id}",
                                           max_bytes=_results_bound(self.p._http))
        meta = data.get("metadata") or {}
        state = str(meta.get("state") or data.get("state") or "unknown")
        # The REST API says BATCH_STATE_*, the SDKs' docs JOB_STATE_*: the suffix is what matters.
        ended = bool(data.get("done")) or state.rsplit("_", 1)[-1] in ("SUCCEEDED", "FAILED", "CANCELLED",
                                                                        "EXPIRED")
        stats = meta.get("batchStats") or {}

        def num(k: str) -> int | None:
            try:
                return int(stats[k])
            except (KeyError, TypeError, ValueError):
                return None

        return JobStatus(state=state, ended=ended, done=num("successfulRequestCount"), total=num("requestCount"),
                         raw=data)

    async def results(self, job_id: str, status: JobStatus, keys: list[str]) -> dict[str, Outcome]:
        raw = status.raw or {}
        holder = raw.get("response") or ((raw.get("metadata") or {}).get("output")) or {}
        inlined = holder.get("inlinedResponses") if isinstance(holder, dict) else None
        if isinstance(inlined, dict):
            inlined = inlined.get("inlinedResponses")
        if not isinstance(inlined, list):
            err = raw.get("error") or {}
            reason = err.get("message") if isinstance(err, dict) else None
            return dict.fromkeys(keys, f"Gemini batch {job_id} ended as {status.state}"
                                       + (f": {reason}" if reason else ""))
        out: dict[str, Outcome] = {}
        for i, item in enumerate(inlined):
            if not isinstance(item, dict):
                continue
            key = (item.get("metadata") or {}).get("key")
            # Responses come in request order; the key, when echoed, is checked first.
            cid = key if isinstance(key, str) and key in keys else (keys[i] if i < len(keys) else None)
            if cid is None:
                continue
            if isinstance(item.get("response"), dict):
                try:
                    out[cid] = self.p.parse_reply(item["response"], batch=True)
                except ProviderError as exc:
                    out[cid] = str(exc)
            else:
                err = item.get("error") or {}
                out[cid] = f"Gemini batch: {err.get('message') or 'error'}" if isinstance(err, dict) else \
                    "Gemini batch: error"
        return out


def batch_adapter(provider: Provider) -> BatchAdapter:
    """The batch API of ``provider``'s wire format; a UserError (exit 2) for those without one."""
    from ._anthropic import AnthropicProvider
    from ._gemini import GeminiProvider
    from ._openai_compat import OpenAICompatProvider

    # Vertex's and Bedrock's batch inference read their input from storage buckets: not supported.
    if isinstance(provider, OpenAICompatProvider):
        return AzureBatch(provider) if provider.name == "azure" else OpenAIBatch(provider)
    if isinstance(provider, AnthropicProvider):
        return AnthropicBatch(provider)
    if isinstance(provider, GeminiProvider) and provider.name == "gemini":
        return GeminiBatch(provider)
    raise UserError(f"--batch: provider '{provider.name}' has no batch API in referee; use one of "
                    f"{', '.join(BATCH_PROVIDERS)} (or drop --batch)")
