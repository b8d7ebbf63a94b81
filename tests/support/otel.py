"""A small application instrumented with the real OpenTelemetry SDK (GenAI conventions, or OpenInference attribute
names) exporting over OTLP/HTTP, and a second OTLP receiver that keeps the log records it is sent."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode


@dataclass
class Sent:
    """What the app sent: per request, its trace id and root span id (hex) and its answer."""

    trace_id: str
    root_span_id: str
    question: str
    answer: str


class App:
    """An agent answering questions: an ``invoke_agent`` root span, a ``chat`` span and an ``execute_tool`` span
    (GenAI conventions), or the same with OpenInference's names (``openinference=True``)."""

    def __init__(self, endpoint: str, *, openinference: bool = False, service: str = "shop-agent",
                 headers: dict[str, str] | None = None, compression: Any = None,
                 certificate_file: str | None = None) -> None:
        kw: dict[str, Any] = {"endpoint": endpoint.rstrip("/") + "/v1/traces", "timeout": 5, "headers": headers,
                              "certificate_file": certificate_file}
        if compression is not None:
            kw["compression"] = compression
        self.exporter = OTLPSpanExporter(**kw)
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter, schedule_delay_millis=50))
        self.tracer = self.provider.get_tracer("shop-agent")
        self.openinference = openinference

    def ask(self, question: str, answer: str, *, error: bool = False, attrs: dict[str, Any] | None = None,
            documents: list[str] | None = None) -> Sent:
        """One request; ``documents``: a ``retrieval`` span (GenAI conventions) retrieved them first."""
        t = self.tracer
        if self.openinference:
            root_attrs = {"openinference.span.kind": "AGENT", "input.value": question, "output.value": answer}
        else:
            root_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
        with t.start_as_current_span("invoke_agent shop", attributes={**root_attrs, **(attrs or {})}) as root:
            if self.openinference:
                with t.start_as_current_span("search", attributes={
                        "openinference.span.kind": "TOOL", "tool.name": "search",
                        "input.value": json.dumps({"q": question}), "output.value": json.dumps({"hits": 1})}):
                    pass
                with t.start_as_current_span("llm", attributes={
                        "openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user",
                        "llm.input_messages.0.message.content": question,
                        "llm.output_messages.0.message.role": "assistant",
                        "llm.output_messages.0.message.content": answer,
                        "llm.token_count.prompt": 12, "llm.token_count.completion": 5}):
                    pass
            else:
                if documents is not None:
                    with t.start_as_current_span("retrieval kb", attributes={
                            "gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": question,
                            "gen_ai.retrieval.documents": json.dumps(
                                [{"id": str(i), "content": d} for i, d in enumerate(documents)])}):
                        pass
                with t.start_as_current_span("execute_tool search", attributes={
                        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                        "gen_ai.tool.call.arguments": json.dumps({"q": question}),
                        "gen_ai.tool.call.result": json.dumps({"hits": 1})}):
                    pass
                with t.start_as_current_span("chat m", attributes={
                        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                            {"type": "text", "content": question}]}]),
                        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                            {"type": "text", "content": answer}]}]),
                        "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 5}):
                    pass
            if error:
                root.set_status(Status(StatusCode.ERROR, "boom"))
            ctx = root.get_span_context()
        return Sent(f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}", question, answer)

    def flush(self) -> None:
        assert self.provider.force_flush(10_000)

    def close(self) -> None:
        self.provider.shutdown()


@dataclass
class LogsReceiver:
    """A second OTLP/HTTP receiver: keeps every log record POSTed to /v1/logs (protobuf)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    fail_next: int = 0
    cond: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, n: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.records) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.records)} log records, expected {n}")
                self.cond.wait(left)
            return list(self.records)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


@contextmanager
def logs_receiver() -> Iterator[tuple[LogsReceiver, str]]:
    state = LogsReceiver()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with state.cond:
                if state.fail_next:
                    state.fail_next -= 1
                    self.send_response(400)  # not retryable: the exporter gives up at once
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            req = logs_service_pb2.ExportLogsServiceRequest()
            req.ParseFromString(body)
            got = []
            for rl in req.resource_logs:
                for sl in rl.scope_logs:
                    for r in sl.log_records:
                        got.append({"trace_id": r.trace_id.hex(), "span_id": r.span_id.hex(),
                                    "event_name": r.event_name,
                                    "attributes": {kv.key: _value(kv.value) for kv in r.attributes}})
            with state.cond:
                state.records.extend(got)
                state.cond.notify_all()
            out = logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield state, f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
        th.join()
