"""A local LLM server for tests and benchmarks: speaks the OpenAI chat-completions, Anthropic Messages and
Gemini generateContent wire formats on 127.0.0.1 (and the clouds' routes to them: Azure OpenAI deployments, Vertex
AI publisher models with an OAuth token endpoint, AWS Bedrock Converse), with scriptable latency, status codes,
Retry-After, bodies, dropped connections and truncated replies.

Shipped in the package so users can test their own judge setups without a network.

**Usage**::

    with FakeLLMServer(responder=lambda req: '{"overall_score": 0.9}') as srv:
        srv.script(Reply(status=429, retry_after="0"), Reply(text='{"overall_score": 1}'))
        # point a provider at srv.openai_base_url, srv.url (Anthropic / Gemini base URL)

Run standalone (used by ``bench/``): ``python -m referee.testing --latency 0.2`` (prints its URL);
``--standin`` serves the stand-in judge and model (``testing/_standin.py``: verdicts from token overlap with the
reference, labelled as the stand-in's; not a model).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from collections import deque
from typing import Any

from aiohttp import web

from ._batch_api import BatchPlan, BatchRoutes  # noqa: F401 - BatchPlan is re-exported
from ._images import BadImagePart, wire_images
from ._wire import Reply, Responder, WireRequest, _call_id  # noqa: F401 - Reply is re-exported


def default_responder(req: WireRequest) -> str:
    """A valid template-judge verdict, so an unconfigured server still grades."""
    return json.dumps({"quality": {"score": 0.8, "rationale": "clear and correct"}, "overall_score": 0.8})


class FakeLLMServer(BatchRoutes):
    """The server runs in a background thread with its own event loop, so sync and async tests can use it."""

    def __init__(self, responder: Responder | None = None, *, latency: float = 0.0, host: str = "127.0.0.1",
                 port: int = 0, openai_formats: tuple[str, ...] = ("json_schema", "json_object", "none"),
                 record: bool = True, require_key: bool = True) -> None:
        self.responder = responder or default_responder
        self.require_key = require_key
        """Whether the batch routes refuse a request without credentials, as the providers do (the stand-in
        server takes none: a reader tries ``--batch`` against it with no key)."""
        self.latency = latency
        self.host = host
        self.port = port
        self.openai_formats = openai_formats
        self.record = record
        self.requests: list[WireRequest] = []
        self.token_requests: list[dict[str, str]] = []
        """Form bodies POSTed to the OAuth token endpoint (``/token``), for the Vertex AI sign-in tests."""
        self.access_token = "ya29.fake-access-token-for-tests"
        self._batch_init()
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()

    # -- configuration -------------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to a fresh server's state on the same port: the default responder and formats, no latency, no
        script, nothing recorded, no batch jobs. One server can then serve test after test."""
        with self._lock:
            self.responder = default_responder
            self.latency = 0.0
            self.openai_formats = ("json_schema", "json_object", "none")
            self.record = True
            self.requests.clear()
            self.token_requests.clear()
            self._script.clear()
            self._batch_init()

    def script(self, *replies: Reply | str) -> None:
        """Queue replies served in order before the responder is used again."""
        with self._lock:
            for r in replies:
                self._script.append(Reply(text=r) if isinstance(r, str) else r)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    # -- lifecycle -------------------------------------------------------------------------------------
    def _app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1beta/models/{model_action}", self._gemini)
        app.router.add_post("/v1/models/{model_action}", self._gemini)
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._openai)  # Azure OpenAI
        app.router.add_post("/v1/projects/{project}/locations/{location}/publishers/google/models/{model_action}",
                            self._gemini)  # Vertex AI
        app.router.add_post("/model/{model_id}/converse", self._bedrock)  # AWS Bedrock
        app.router.add_post("/token", self._oauth_token)  # Google OAuth2 (Application Default Credentials)
        self._add_batch_routes(app)  # OpenAI Batch API, Anthropic Message Batches, Gemini batch mode
        return app

    async def _start(self) -> None:
        self._runner = web.AppRunner(self._app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024)
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1]

    def start(self) -> FakeLLMServer:
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            loop.run_until_complete(self._start())
            self._ready.set()
            loop.run_forever()
            assert self._runner is not None
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="referee-fake-llm", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake LLM server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = None
        self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- handling --------------------------------------------------------------------------------------
    def _next(self, req: WireRequest) -> Reply:
        with self._lock:
            if self.record:
                self.requests.append(req)
        try:
            wire_images(req.format, req.body)
        except BadImagePart as exc:  # as the real APIs: a malformed image part is a 400, never a verdict
            return Reply(status=400, body={"error": {"message": f"invalid image: {exc}",
                                                     "type": "invalid_request_error"}})
        with self._lock:
            if self._script:
                return self._script.popleft()
        r = self.responder(req)
        return Reply(text=r) if isinstance(r, str) else r

    async def _receive(self, request: web.Request, fmt: str) -> WireRequest:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        return WireRequest(format=fmt, path=request.path, headers=dict(request.headers),
                           query=dict(request.query), body=body if isinstance(body, dict) else {},
                           method=request.method, raw_path=request.raw_path, raw_body=raw)

    async def _respond(self, request: web.Request, reply: Reply, envelope: dict[str, Any]) -> web.StreamResponse:
        delay = reply.delay if reply.delay is not None else self.latency
        if delay:
            await asyncio.sleep(delay)
        if reply.drop:
            assert request.transport is not None
            request.transport.close()
            raise asyncio.CancelledError  # the client sees a dropped connection
        headers = dict(reply.headers)
        if reply.retry_after is not None:
            headers["Retry-After"] = reply.retry_after
        if reply.body is not None:
            payload = reply.body if not isinstance(reply.body, dict) else json.dumps(reply.body)
        elif reply.status >= 400:
            payload = json.dumps({"error": {"message": f"scripted error {reply.status}", "type": "error"}})
        else:
            payload = json.dumps(envelope)
        data = payload.encode() if isinstance(payload, str) else payload
        if reply.truncate:
            resp = web.StreamResponse(status=reply.status, headers={**headers, "Content-Length": str(len(data))})
            resp.content_type = "application/json"
            await resp.prepare(request)
            await resp.write(data[: len(data) // 2])
            assert request.transport is not None
            request.transport.close()
            return resp
        return web.Response(status=reply.status, body=data, headers=headers, content_type="application/json")

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        req = await self._receive(request, "openai")
        rf = (req.body.get("response_format") or {}).get("type", "none")
        if rf not in self.openai_formats:
            # As llama-cpp-python's server does for json_schema. Recorded too, so tests see the attempt.
            if self.record:
                with self._lock:
                    self.requests.append(req)
            return web.json_response({"error": {"message": f"response_format type '{rf}' is not supported",
                                                "type": "invalid_request_error"}}, status=400)
        reply = self._next(req)
        return await self._respond(request, reply, self.openai_envelope(req, reply))

    def openai_envelope(self, req: WireRequest, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or ""}
        if reply.tool_calls:
            message["content"] = reply.text
            message["tool_calls"] = [
                {"id": _call_id(c, i, "call"), "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments") or {})}}
                for i, c in enumerate(reply.tool_calls)]
        env = {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": req.model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
            "usage": {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens,
                      "total_tokens": reply.input_tokens + reply.output_tokens},
        }
        return env

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        req = await self._receive(request, "anthropic")
        reply = self._next(req)
        return await self._respond(request, reply, self.anthropic_envelope(req, reply))

    def anthropic_envelope(self, req: WireRequest, reply: Reply) -> dict[str, Any]:
        text = reply.text or ""
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        tools = req.body.get("tools") or []
        if reply.tool_calls:
            content = ([{"type": "text", "text": text}] if text else []) + [
                {"type": "tool_use", "id": _call_id(c, i, "toolu"), "name": c["name"],
                 "input": c.get("arguments") or {}}
                for i, c in enumerate(reply.tool_calls)]
        elif tools and "tool_choice" in req.body:
            try:
                obj = json.loads(text)
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                content = [{"type": "tool_use", "id": "toolu_fake", "name": tools[0].get("name"), "input": obj}]
        env = {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": req.model, "content": content,
            "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn",
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
        }
        return env

    async def _gemini(self, request: web.Request) -> web.StreamResponse:
        model, _, action = request.match_info["model_action"].partition(":")
        if action == "batchGenerateContent":
            return await self.gemini_batch_create(request, model)
        req = await self._receive(request, "gemini")
        reply = self._next(req)
        return await self._respond(request, reply, self.gemini_envelope(req, reply))

    def gemini_envelope(self, req: WireRequest, reply: Reply) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"text": reply.text or ""}]
        if reply.tool_calls:  # functionCall parts, the text (if any) first
            parts = ([{"text": reply.text}] if reply.text else []) + [
                {"functionCall": {"name": c["name"], "args": c.get("arguments", {})}} for c in reply.tool_calls]
        env = {
            "candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": reply.input_tokens,
                              "candidatesTokenCount": reply.output_tokens,
                              "totalTokenCount": reply.input_tokens + reply.output_tokens},
            "modelVersion": req.model,
        }
        return env


    async def _bedrock(self, request: web.Request) -> web.StreamResponse:
        req = await self._receive(request, "bedrock")
        reply = self._next(req)
        text = reply.text or ""
        content: list[dict[str, Any]] = [{"text": text}]
        tools = (req.body.get("toolConfig") or {}).get("tools") or []
        if tools:
            try:
                obj = json.loads(text)
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                content = [{"toolUse": {"toolUseId": "tooluse_fake", "name": tools[0]["toolSpec"]["name"],
                                        "input": obj}}]
        env = {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": "tool_use" if "toolUse" in content[0] else "end_turn",
            "usage": {"inputTokens": reply.input_tokens, "outputTokens": reply.output_tokens,
                      "totalTokens": reply.input_tokens + reply.output_tokens},
            "metrics": {"latencyMs": 1},
        }
        return await self._respond(request, reply, env)

    async def _oauth_token(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        with self._lock:
            self.token_requests.append({k: str(v) for k, v in form.items()})
        return web.json_response({"access_token": self.access_token, "expires_in": 3600, "token_type": "Bearer"})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m referee.testing", description="Local fake LLM server (OpenAI, Anthropic, Gemini wire formats).")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    ap.add_argument("--fast", action="store_true",
                    help="OpenAI chat completions only, fixed verdict, minimal CPU per request (benchmarks)")
    ap.add_argument("--standin", action="store_true",
                    help="serve the stand-in judge (verdicts from token overlap with the reference, 0 for refusals, "
                         "labelled 'stand-in judge'; not a model) and answer other prompts as the stand-in model")
    ap.add_argument("--standin-model", action="store_true",
                    help="answer every request as the stand-in model: the recorded reply from --replies")
    ap.add_argument("--replies", default=None, metavar="FILE",
                    help="JSONL of {input (or id), output}: the stand-in model's answers")
    args = ap.parse_args(argv)
    if args.fast:
        from ._fastserver import serve

        try:
            asyncio.run(serve(port=args.port, latency=args.latency))
        except KeyboardInterrupt:
            pass
        return
    responder: Responder | None = None
    if args.standin or args.standin_model or args.replies:
        from ..errors import UserError
        from ..providers._standin import load_replies
        from ._standin import standin_responder

        try:
            replies = load_replies(args.replies) if args.replies else {}
        except UserError as exc:
            ap.error(str(exc))
        responder = standin_responder(replies, model_only=args.standin_model)
    srv = FakeLLMServer(responder, latency=args.latency, port=args.port, record=False,
                        require_key=responder is None).start()
    print(srv.url, flush=True)
    if responder is not None:
        print(f"stand-in judge and model (not a model: token overlap with the reference), OpenAI-compatible at "
              f"{srv.openai_base_url}: --provider openai --base-url {srv.openai_base_url} --model standin; "
              "for a real judge, set a provider's key instead (see docs/judge.md)", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":  # ``python -m referee.testing`` is the preferred entry point
    main()
