"""Every fenced block of README.md and docs/*.md, checked by the test suite with Sybil (the conventions writers
follow are in docs/ARCHITECTURE.md, "Writing docs").

Blocks run per page, in page order, in one temporary folder per page that starts as a copy of
``tests/docs/fixtures/<page>/`` (``readme`` for README.md), with the example's own files its ``from-example.txt``
names (never copies of them). No API key reaches a block: the stand-in judge
(``--provider standin``, ``judge="standin"``) is what runs. What each kind of block gets:

- ``bash`` / ``sh``: run as one bash script (``set -euo pipefail``); a command whose last words are ``# exit N``
  must exit N. ``console``: ``$ command`` lines run in one bash process; the lines under a command are what it
  prints (stdout and stderr), compared with ``...`` for volatile parts. ``output``: what the block above printed.
- ``python``: executed in one namespace per page (earlier blocks' names are there), in the page's folder.
- ``yaml`` / ``json`` / ``jsonl``: parsed; suites (and suite excerpts) go through ``referee validate``, cases and
  scenarios through their loaders. ``file=NAME`` in the info string (or a first line ``# NAME.yaml`` /
  ``<!-- NAME -->``) writes the block to NAME in the page's folder first.
- ``text``, ``markdown``, ``toml``, ``output`` without a block above: shown, not run (a language is required).
- A first line ``# not run: WHY`` (``<!-- not run: WHY -->``): syntax only (``bash -n``, ``compile()``, parsers).
- Servers (``referee view``, ``python -m referee.testing``): started in the background, waited for (the URL
  they print, then a connection), stopped when the page ends; ``--port N`` becomes a free port and the page's
  later mentions of ``127.0.0.1:N`` / ``localhost:N`` its real address; ``--open`` opens nothing (BROWSER=true).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BIN = str(Path(sys.executable).parent)
FROM_EXAMPLE = "from-example.txt"
BLOCK_TIMEOUT = 300.0
SERVER_WAIT = 60.0

SHELL = {"bash", "sh", "shell"}
SHOWN = {"text", "markdown", "toml", "diff"}
LANGS = SHELL | SHOWN | {"console", "python", "yaml", "json", "jsonl", "output"}
NOT_RUN = re.compile(r"^\s*(?:#|//|<!--)\s*not run:\s*(?P<why>.+?)\s*(?:-->)?\s*$")
FILE_LINE = re.compile(r"^\s*(?:#|<!--)\s*(?P<name>[\w./-]+\.(?:ya?ml|jsonl?|md|py|csv|txt))\s*(?:-->)?\s*$")
EXIT = re.compile(r"#\s*exit (?P<code>\d+)\b[^\n]*$")
SERVER = re.compile(r"^(?:referee view|python3? -m referee\.testing)\b")
URL = re.compile(r"https?://(?:127\.0\.0\.1|localhost|\[::1\]):\d+")
# Environment variables that would reach a real provider or change a command's defaults: never passed to a page.
SECRET = re.compile(r"(_API_KEY|_AD_TOKEN|_ACCESS_KEY_ID|_SECRET_ACCESS_KEY|_SESSION_TOKEN)$|^(REFEREE_|AWS_|"
                    r"GOOGLE_|AZURE_|GITHUB_STEP_SUMMARY$|OPENAI_|ANTHROPIC_|GEMINI_)")


@dataclass
class Block:
    lang: str
    attrs: dict[str, str]
    source: str
    path: Path
    line: int

    @property
    def first(self) -> str:
        return self.source.split("\n", 1)[0]

    @property
    def not_run(self) -> str | None:
        m = NOT_RUN.match(self.first)
        return m.group("why") if m else None

    @property
    def file(self) -> str | None:
        if "file" in self.attrs:
            return self.attrs["file"]
        if self.lang in ("yaml", "markdown", "python") and (m := FILE_LINE.match(self.first)):
            return m.group("name")
        return None


@dataclass
class Page:
    path: Path
    dir: Path
    env: dict[str, str]
    cwd: str
    saved_env: dict[str, str]
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    addresses: dict[str, str] = field(default_factory=dict)
    last_output: str | None = None

    def rewrite(self, text: str) -> str:
        for doc, real in self.addresses.items():
            text = text.replace(doc, real)
        return text


def fixture_dir(page: Path) -> Path:
    return FIXTURES / ("readme" if page.name == "README.md" else page.stem)


def from_example(fixtures: Path) -> list[tuple[str, Path]]:
    """The files a page takes from the built-in example (``src/referee/example/data/``), as the fixture folder's
    ``from-example.txt`` lists them: ``NAME  PATH`` a line (the name in the page's folder, the path under the
    example's data), so a page runs on the example's own files, never on copies that drift."""
    from referee.example import DATA

    listing = fixtures / FROM_EXAMPLE
    if not listing.is_file():
        return []
    out = []
    for n, line in enumerate(listing.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, path = line.partition(" ")
        data = DATA / path.strip()
        if not path.strip() or not data.is_file():
            raise AssertionError(f"{listing}:{n}: `NAME PATH`, PATH a file of the example's data ({DATA})")
        out.append((name, data))
    return out


# -- the page: its folder, environment and servers ----------------------------------------------------------

def setup(namespace: dict[str, Any]) -> None:
    path: Path = namespace["__page__"]
    base = Path(tempfile.mkdtemp(prefix=f"referee-docs-{path.stem}-"))
    tmp = base / "page"
    tmp.mkdir()
    if (ROOT.parent / "shared").is_dir():  # pages name the data sets as ../shared/data, as from the repo's root
        (base / "shared").symlink_to(ROOT.parent / "shared")
    src = fixture_dir(path)
    if src.is_dir():
        shutil.copytree(src, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(FROM_EXAMPLE))
        for name, data in from_example(src):
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(data, tmp / name)
    env = {k: v for k, v in os.environ.items() if not SECRET.search(k)}
    env.update(PATH=BIN + os.pathsep + env.get("PATH", ""), HOME=str(tmp), BROWSER="true", COLUMNS="100",
               NO_COLOR="1", TERM="dumb", PYTHONUNBUFFERED="1", PYTHONPATH=str(tmp), REFEREE_REPO=str(ROOT),
               XDG_CACHE_HOME=str(tmp / ".cache"))
    page = Page(path=path, dir=tmp, env=env, cwd=os.getcwd(), saved_env=dict(os.environ))
    os.environ.clear()
    os.environ.update(env)
    os.chdir(tmp)
    sys.path.insert(0, str(tmp))
    namespace["__page_state__"] = page
    namespace["__name__"] = f"docs_{path.stem.replace('-', '_')}"


def teardown(namespace: dict[str, Any]) -> None:
    page: Page | None = namespace.get("__page_state__")
    if page is None:
        return
    for proc in page.servers:
        _stop(proc)
    os.chdir(page.cwd)
    os.environ.clear()
    os.environ.update(page.saved_env)
    with contextlib.suppress(ValueError):
        sys.path.remove(str(page.dir))
    for name in [m for m, mod in sys.modules.items() if str(page.dir) in str(getattr(mod, "__file__", "") or "")]:
        del sys.modules[name]  # a page's own modules (plugins it wrote) are not another page's
    shutil.rmtree(page.dir.parent, ignore_errors=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _start_server(page: Page, command: str, where: str) -> str:
    """Start ``command`` in the background in its own process group; its URL once it accepts connections."""
    ports = re.findall(r"--port[ =](\d+)", command)
    command = re.sub(r"--port[ =]\d+", "--port 0", command)
    if "--port" not in command and command.startswith("referee view"):
        command += " --port 0"  # the viewer's default port may be taken on a shared machine
    log = page.dir / f".server-{len(page.servers)}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", "-c", "exec " + command], cwd=page.dir, env=page.env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    page.servers.append(proc)
    deadline = time.monotonic() + SERVER_WAIT
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if (m := URL.search(text)) is not None:
            host, port = m.group(0).split("//", 1)[1].rsplit(":", 1)
            with contextlib.suppress(OSError), socket.create_connection((host.strip("[]"), int(port)), timeout=5):
                for p in ports:
                    page.addresses[f"127.0.0.1:{p}"] = f"{host}:{port}"
                    page.addresses[f"localhost:{p}"] = f"{host}:{port}"
                return m.group(0)
        if proc.poll() is not None:
            raise AssertionError(f"{where}: the server `{command}` exited {proc.returncode}:\n{text[-3000:]}")
        time.sleep(0.05)  # polling the server's log for its URL (a condition, bounded by SERVER_WAIT)
    raise AssertionError(f"{where}: the server `{command}` printed no URL within {SERVER_WAIT:.0f} s")


# -- shell ----------------------------------------------------------------------------------------------------

def logical_lines(source: str) -> list[str]:
    """Lines with their backslash continuations joined (newline kept), blank lines dropped."""
    out: list[str] = []
    cur = ""
    for line in source.split("\n"):
        cur = cur + "\n" + line if cur else line
        if line.endswith("\\"):
            continue
        if cur.strip():
            out.append(cur)
        cur = ""
    if cur.strip():
        out.append(cur)
    return out


def _expect_exit(line: str, code_var: str, where: str) -> str:
    m = EXIT.search(line)
    assert m is not None
    want = m.group("code")
    return (f"if ( {line[:m.start()].rstrip()}\n); then {code_var}=0; else {code_var}=$?; fi\n"
            f"if [ ${code_var} != {want} ]; then echo \"{where}: expected exit {want}, got ${code_var}\" >&2; "
            f"exit 97; fi\n")


def _run_script(page: Page, script: str, where: str) -> str:
    proc = subprocess.run(["bash", "-c", script], cwd=page.dir, env=page.env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=BLOCK_TIMEOUT,
                          start_new_session=True)
    text = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        raise AssertionError(f"{where}: exit {proc.returncode}\n--- script\n{script}\n--- output\n{text[-6000:]}")
    return text


def run_shell(page: Page, block: Block, where: str) -> str:
    printed: list[str] = []
    segment: list[str] = []

    def flush() -> None:
        if segment:
            lines = [page.rewrite(x) for x in segment]  # a server started above in this block has its address now
            body = "".join(_expect_exit(x, "__rc", where) if EXIT.search(x) else x + "\n" for x in lines)
            printed.append(_run_script(page, "set -euo pipefail\n" + body, where))
            segment.clear()

    for line in logical_lines(block.source):
        if SERVER.match(line.strip()):
            flush()
            printed.append(_start_server(page, line.split(" #", 1)[0].strip(), where) + "\n")
        else:
            segment.append(line)
    flush()
    return "".join(printed)


def parse_console(source: str) -> list[tuple[str, list[str]]]:
    """``$ command`` lines (with continuations) and the lines shown under each."""
    steps: list[tuple[str, list[str]]] = []
    lines = source.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd += "\n" + lines[i]
            steps.append((cmd, []))
        elif steps:
            steps[-1][1].append(line)
        elif line.strip():
            raise AssertionError(f"a console block starts with `$ command`, not {line!r}")
        i += 1
    return steps


def matches(expected: Iterable[str], got: str) -> bool:
    """``got`` against the lines shown: ``...`` alone on a line stands for any lines, inside a line for any text."""
    parts: list[str] = []
    for line in expected:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append("[^\n]*?".join(re.escape(p) for p in line.rstrip().split("...")) + r"[ \t]*\n")
    norm = "".join(x.rstrip() + "\n" for x in got.strip("\n").split("\n")) if got.strip() else ""
    return re.fullmatch("".join(parts), norm) is not None


def _strip_blank(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    while lines and not lines[0].strip():
        lines = lines[1:]
    return lines


def run_console(page: Page, block: Block, where: str) -> None:
    steps = parse_console(block.source)
    script = []
    for i, (cmd, _) in enumerate(steps):
        cmd = page.rewrite(cmd)
        if SERVER.match(cmd.strip()):
            url = _start_server(page, cmd.split(" #", 1)[0].strip(), where)
            script.append(f"printf '\\x1e{i} 0\\n'\necho {shlex.quote(url)}\n")
            continue
        m = EXIT.search(cmd)
        script.append(f"{cmd[:m.start()].rstrip() if m else cmd}\n__rc=$?\nprintf '\\x1e{i} %d\\n' $__rc\n"
                      f"(exit $__rc)\n")
    proc = subprocess.run(["bash", "-c", "exec 2>&1\n" + "".join(script)], cwd=page.dir, env=page.env,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, timeout=BLOCK_TIMEOUT,
                          start_new_session=True)
    text = proc.stdout.decode("utf-8", "replace")
    outputs: dict[int, tuple[int, str]] = {}
    chunks = ("\n" + text).split("\x1e")
    pending = chunks[0].lstrip("\n")
    for chunk in chunks[1:]:
        head, _, rest = chunk.partition("\n")
        idx, code = (int(x) for x in head.split())
        outputs[idx] = (code, pending)
        pending = rest
    for i, (cmd, shown) in enumerate(steps):
        code, got = outputs.get(i, (-1, ""))
        m = EXIT.search(cmd)
        want = int(m.group("code")) if m else 0
        shown_next = steps[i + 1][0].strip() if i + 1 < len(steps) else ""
        if code != want and not (code > 0 and shown_next == "echo $?"):
            raise AssertionError(f"{where}: `$ {cmd}` exited {code}, expected {want} (a non-zero exit is shown "
                                 f"by `# exit N` or a following `$ echo $?`)\n--- printed\n{got[-4000:]}")
        shown = _strip_blank(shown)
        if not matches(shown, got):
            raise AssertionError(f"{where}: `$ {cmd}` printed what the page does not show (`...` marks volatile "
                                 f"parts)\n--- the page\n" + "\n".join(shown) + f"\n--- printed\n{got}")
    page.last_output = text


# -- python ---------------------------------------------------------------------------------------------------

class _Tee(io.StringIO):
    def __init__(self, real: Any) -> None:
        super().__init__()
        self.real = real

    def write(self, s: str) -> int:
        self.real.write(s)
        return super().write(s)


def run_python(namespace: dict[str, Any], block: Block, where: str) -> str:
    # Top-level `await` is allowed, as in a notebook cell (docs/python.md's async example is written for one).
    code = compile(block.source, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        if code.co_flags & inspect.CO_COROUTINE:
            asyncio.run(eval(code, namespace))  # noqa: S307 - our own docs, run as a notebook runs a cell
        else:
            exec(code, namespace)  # noqa: S102 - our own docs, run as their readers would
    return tee.getvalue()


# -- data blocks -----------------------------------------------------------------------------------------------

SUITE_KEYS = {"evaluators", "targets", "judges", "judge", "panel", "prompts", "models", "gates", "scoring", "plugins"}


def _objects(text: str) -> list[Any]:
    dec, pos, out = json.JSONDecoder(), 0, []
    while (pos := len(text) - len(text[pos:].lstrip())) < len(text):
        obj, end = dec.raw_decode(text, pos)
        out.append(obj)
        pos = end
    return out


def _validate_suite(page: Page, data: dict[str, Any], written: Path | None, where: str) -> None:
    from referee.cli import cli

    if written is None or "cases" not in data:
        data = dict(data)
        data.setdefault("cases", [{"id": "docs-example", "input": "q", "output": "a", "reference": "a"}])
        data.setdefault("evaluators", [{"llm_judge": {"rubric": "- correct"}}])  # an excerpt of judge settings
        written = page.dir / f".excerpt-{abs(hash(where))}.yaml"
        written.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli(["validate", str(written)])
    if code != 0:
        raise AssertionError(f"{where}: `referee validate` refused the suite (exit {code}):\n{err.getvalue()}")


def _validate_cases(page: Page, items: list[Any], where: str) -> None:
    from referee.cases import load_cases
    from referee.episodes import scenario_of
    from referee.episodes._scenario import is_scenario

    if not items or not all(isinstance(x, dict) and "id" in x for x in items):
        return  # not cases: a judge reply, a label, a schema excerpt
    if not any(k in x for x in items for k in ("input", "output", "turns", "trajectory", "user", "messages")):
        return  # label rows and the like
    tmp = page.dir / f".cases-{abs(hash(where))}.jsonl"
    tmp.write_text("".join(json.dumps(x) + "\n" for x in items), encoding="utf-8")
    try:
        for case in load_cases(tmp).cases:
            if is_scenario(case):
                scenario_of(case)
    finally:
        tmp.unlink()


def check_data(page: Page, block: Block, where: str) -> None:
    written = None
    if block.file is not None:
        written = page.dir / block.file
        written.parent.mkdir(parents=True, exist_ok=True)
        text = block.source
        if block.lang == "json" and written.suffix == ".jsonl":  # a case shown over several lines: one per line
            text = "".join(json.dumps(o) + "\n" for o in _objects(block.source))
        written.write_text(text, encoding="utf-8")
    if block.lang == "yaml":
        data = yaml.safe_load(block.source)
        if isinstance(data, dict) and SUITE_KEYS & set(data) and not {"on", "jobs", "criteria"} & set(data):
            _validate_suite(page, data, written, where)
        elif isinstance(data, list):
            _validate_cases(page, data, where)
    else:
        _validate_cases(page, _objects(block.source), where)


# -- syntax only (a block marked `not run`) ----------------------------------------------------------------------

def check_syntax(block: Block, where: str) -> None:
    if block.lang in SHELL or block.lang == "console":
        src = block.source if block.lang != "console" else "\n".join(
            c for c, _ in parse_console(block.source.split("\n", 1)[1] if "\n" in block.source else ""))
        proc = subprocess.run(["bash", "-n"], input=src.encode(), capture_output=True, timeout=60)
        assert proc.returncode == 0, f"{where}: not valid bash: {proc.stderr.decode()}"
    elif block.lang == "python":
        compile(block.source, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    elif block.lang == "yaml":
        yaml.safe_load(block.source)
    elif block.lang in ("json", "jsonl"):
        _objects(block.source)


# -- Sybil: one parser for every fenced block ---------------------------------------------------------------------

def evaluate(example: Example) -> None:
    block: Block = example.parsed
    where = f"{block.path.relative_to(ROOT)}:{block.line}"
    page: Page = example.namespace["__page_state__"]
    if block.lang not in LANGS:
        raise AssertionError(f"{where}: say what the block is (```bash, ```console, ```python, ```yaml, ```json, "
                             f"```text, ...), not {block.lang or 'nothing'!r} (docs/ARCHITECTURE.md, Writing docs)")
    if block.not_run is not None:
        check_syntax(block, where)
        return
    if block.lang in SHELL:
        page.last_output = run_shell(page, block, where)
    elif block.lang == "console":
        run_console(page, block, where)
    elif block.lang == "python":
        if block.file is not None:
            (page.dir / block.file).parent.mkdir(parents=True, exist_ok=True)
            (page.dir / block.file).write_text(block.source, encoding="utf-8")
            compile(block.source, where, "exec")
        else:
            page.last_output = run_python(example.namespace, block, where)
    elif block.lang in ("yaml", "json", "jsonl"):
        check_data(page, block, where)
    elif block.lang == "output" and page.last_output is not None:
        shown = _strip_blank(block.source.rstrip("\n").split("\n"))
        if not matches(shown, page.last_output):
            raise AssertionError(f"{where}: the block above printed what this one does not show (`...` marks "
                                 f"volatile parts)\n--- the page\n" + "\n".join(shown)
                                 + f"\n--- printed\n{page.last_output}")
    elif block.file is not None:
        (page.dir / block.file).parent.mkdir(parents=True, exist_ok=True)
        (page.dir / block.file).write_text(block.source, encoding="utf-8")


class BlockParser:
    """Every fenced block of a page, whatever its language (an unknown or missing one fails)."""

    lexer = RawFencedCodeBlockLexer(info_pattern=re.compile(r"(?P<info>[^\n]*)\n"), mapping={"info": "info",
                                                                                             "source": "source"})

    def __call__(self, document: Document) -> Iterable[Region]:
        document.namespace["__page__"] = Path(document.path)
        for region in self.lexer(document):
            info = str(region.lexemes["info"]).strip().split()
            lang = info[0] if info else ""
            attrs = dict(a.split("=", 1) for a in info[1:] if "=" in a)
            line = document.text.count("\n", 0, region.start) + 1
            region.parsed = Block(lang, attrs, str(region.lexemes["source"]), Path(document.path), line)
            region.evaluator = evaluate
            yield region


PAGES = Sybil(parsers=[BlockParser()], patterns=["README.md", "docs/*.md"], path=str(ROOT), setup=setup,
              teardown=teardown)


def blocks(page: Path) -> list[Block]:
    """The page's blocks, as the tests see them (for counting and for tests about the harness)."""
    return [e.parsed for e in PAGES.parse(page).examples()]
