"""The viewer's HTTP server (stdlib ``ThreadingHTTPServer``): static assets from the package and ``/api/``.

Every response carries a strict Content-Security-Policy (scripts and styles from the viewer itself only, no
inline script, nothing from elsewhere). Requests whose ``Host`` is not the address the viewer listens on are
refused (DNS rebinding), and so are POSTs from another origin (an ``Origin`` or ``Sec-Fetch-Site`` naming
another site) or without a JSON body (a cross-site form cannot send one without a CORS preflight, which the
viewer never grants).
"""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ._app import ApiError, ViewApp

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
MAX_BODY = 64 * 1024
IDLE_TIMEOUT_S = 120.0
"""A connection silent this long (between requests, or in the middle of one) is closed: each holds a thread."""
_STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
_READS_LABELS = frozenset({"case", "review", "queue", "labels", "agreement", "reviewers", "align", "summary"})
"""The endpoints whose answer shows a run's labels."""
_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("GET", re.compile(r"/api/?"), "index"),
    ("GET", re.compile(r"/api/runs/?"), "index"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/summary"), "summary"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/charts"), "charts"),
    ("GET", re.compile(r"/api/grid"), "grid"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/cases"), "cases"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/cases/(?P<row>\d{1,12})"), "case"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/review/(?P<row>\d{1,12})"), "review"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/queue"), "queue"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/labels"), "labels"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/agreement"), "agreement"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/panel"), "panel"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/coverage"), "coverage"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/reviewers"), "reviewers"),
    ("GET", re.compile(r"/api/runs/(?P<run>[^/]+)/align"), "align"),
    ("GET", re.compile(r"/api/compare/(?P<base>[^/]+)/(?P<cand>[^/]+)"), "compare"),
    ("POST", re.compile(r"/api/labels"), "post_label"),
    ("GET", re.compile(r"/api/history/?"), "history"),
    ("GET", re.compile(r"/api/history/trend"), "trend"),
    ("GET", re.compile(r"/api/history/alignments"), "alignments"),
    ("POST", re.compile(r"/api/history/open"), "open"),
    ("GET", re.compile(r"/api/traces/?"), "traces"),
    ("GET", re.compile(r"/api/traces/(?P<trace>[^/]+)"), "trace"),
]


def _static(name: str) -> bytes | None:
    if not re.fullmatch(r"[a-z0-9_-]+\.(html|js|css|svg)", name):
        return None
    f = resources.files("referee.view").joinpath("static", name)
    return f.read_bytes() if f.is_file() else None


class ViewServer(ThreadingHTTPServer):
    """The viewer's threaded HTTP server bound to ``host``:``port`` (``port`` 0 picks a free one)."""

    daemon_threads = True

    def __init__(self, app: ViewApp, host: str, port: int) -> None:
        self.app = app
        if ":" in host:  # an IPv6 address such as ::1
            self.address_family = socket.AF_INET6
        super().__init__((host, port), _Handler)
        bound_host, self.port = self.server_address[0], self.server_address[1]
        self.host = str(bound_host)
        # The Host headers a browser sends for this server; anything else is another site's name (rebinding).
        literal = f"[{self.host}]" if ":" in self.host else self.host
        names = {literal, "127.0.0.1", "localhost", "[::1]"} if self.host in ("127.0.0.1", "::1", "localhost") \
            else {literal}
        if host not in ("", "0.0.0.0", "::"):
            names.add(f"[{host}]" if ":" in host else host)
        self.allowed_hosts = {f"{n}:{self.port}" for n in names}
        self.any_host = host in ("", "0.0.0.0", "::")

    @property
    def url(self) -> str:
        h = self.host if self.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return f"http://[{h}]:{self.port}/" if ":" in h else f"http://{h}:{self.port}/"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that left mid-reply (a page navigated away, a closed tab) is no error to print."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def start_background(self) -> threading.Thread:
        t = threading.Thread(target=self.serve_forever, name="referee-view", daemon=True)
        t.start()
        return t


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    protocol_version = "HTTP/1.1"
    server_version = "referee-view"
    sys_version = ""
    timeout = IDLE_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # quiet: the terminal shows the URL; requests are not news

    # -- responses -------------------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-store")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        body = json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8")

    def _error(self, status: int, msg: str) -> None:
        self._json(status, {"error": msg, "status": status})

    # -- checks ----------------------------------------------------------------------------------------

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").strip().lower()
        return self.server.any_host or host in self.server.allowed_hosts

    def _same_origin(self) -> bool:
        site = self.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            return False
        origin = self.headers.get("Origin")
        if origin is None:
            return True  # scripts (curl, requests) send none; browsers always send it on POST
        u = urlsplit(origin)
        host = (self.headers.get("Host") or "").strip().lower()
        # The page's own origin is the address it was loaded from: the Host of this very request.
        return u.scheme == "http" and u.netloc.lower() == host

    # -- dispatch --------------------------------------------------------------------------------------

    def do_HEAD(self) -> None:  # noqa: N802 - the stdlib's name
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._error(405, "method not allowed")

    do_DELETE = do_PATCH = do_OPTIONS = do_PUT  # noqa: N815 - no CORS preflight is ever granted

    def _dispatch(self, method: str) -> None:
        if not self._host_ok():
            self._error(403, "unexpected Host header: open the viewer at the address it printed")
            return
        parts = urlsplit(self.path)
        path = parts.path
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        if not path.startswith("/api"):
            if method != "GET":
                self._error(405, "method not allowed")
                return
            name = "index.html" if path in ("/", "/index.html") else path.removeprefix("/static/")
            body = _static(name) if path in ("/", "/index.html") or path.startswith("/static/") else None
            if body is None:
                self._error(404, "not found")
                return
            self._send(200, body, _STATIC_TYPES["." + name.rsplit(".", 1)[1]])
            return
        try:
            for m, rx, name in _ROUTES:
                hit = rx.fullmatch(path)
                if hit is None:
                    continue
                if m != method:
                    continue
                status, data = self._call(name, hit.groupdict(), params)
                self._json(status, data)
                return
            if any(rx.fullmatch(path) for _, rx, _ in _ROUTES):
                self._error(405, "method not allowed")
            else:
                self._error(404, f"no API endpoint {path} (see docs/view.md)")
        except ApiError as exc:
            if method != "GET":  # a body refused or cut short is left in the stream: no request can follow it
                self.close_connection = True
            self._error(exc.status, exc.msg)
        except ConnectionError:  # the client has gone: there is no one to answer
            self.close_connection = True
            raise
        except Exception as exc:  # a bug must not kill the server thread silently: answer 500 and say what
            self.close_connection = True
            self._error(500, f"internal error: {type(exc).__name__}: {exc}")

    def _call(self, name: str, g: dict[str, str], params: dict[str, str]) -> tuple[int, Any]:
        app = self.server.app
        if name in _READS_LABELS:
            app.sync_labels(g["run"])  # a stored run: the labels other reviewers saved in a shared store
        if name == "index":
            return 200, app.api_index()
        if name == "summary":
            return 200, app.api_summary(g["run"], params)
        if name == "charts":
            return 200, app.api_charts(g["run"], params)
        if name == "grid":
            return 200, app.api_grid(params)
        if name == "cases":
            return 200, app.api_cases(g["run"], params)
        if name == "case":
            return 200, app.api_case(g["run"], int(g["row"]), params)
        if name == "review":
            return 200, app.api_review(g["run"], int(g["row"]))
        if name == "queue":
            return 200, app.api_queue(g["run"], params)
        if name == "labels":
            app.run(g["run"])
            return 200, app.api_labels(g["run"])
        if name == "agreement":
            return 200, app.api_agreement(g["run"])
        if name == "reviewers":
            return 200, app.api_reviewers(g["run"])
        if name == "align":
            return 200, app.api_align(g["run"])
        if name == "panel":
            from ._panel import panel_cases

            return 200, panel_cases(app.run(g["run"]))
        if name == "coverage":
            from ._grid import coverage

            return 200, coverage(app.run(g["run"]))
        if name == "compare":
            return 200, app.api_compare(g["base"], g["cand"], params)
        if name == "post_label":
            return app.api_post_label(self._body())
        if name == "history":
            return 200, app.api_history(params)
        if name == "trend":
            return 200, app.api_trend(params)
        if name == "alignments":
            return 200, app.api_alignments(params)
        if name == "open":
            return 200, app.api_open(self._body())
        if name in ("traces", "trace"):
            from ._traces import traces_page

            page = traces_page(app)
            return 200, page.api_list(params) if name == "traces" else page.api_trace(g["trace"])
        raise ApiError(404, "not found")

    def _body(self) -> Any:
        if not self._same_origin():
            raise ApiError(403, "cross-site request refused: labels are posted by the viewer's own page")
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise ApiError(415, "send the body as application/json")
        try:
            length = int(self.headers.get("Content-Length") or "0")
        except ValueError:
            raise ApiError(400, "bad Content-Length") from None
        if length > MAX_BODY:
            raise ApiError(413, f"body over {MAX_BODY} bytes")
        try:
            raw = self.rfile.read(length) if length > 0 else b""
        except TimeoutError:
            raise ApiError(408, "the request's body stopped arriving") from None
        try:
            return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ApiError(400, f"body is not valid JSON ({exc})") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid number")


__all__ = ["CSP", "ViewServer"]
