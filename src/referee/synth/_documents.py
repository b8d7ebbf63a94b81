"""Documents in, chunks out: the readers (text and Markdown, HTML through the standard library's parser, PDF through
the ``pdf`` extra) and the splitter.

**The splitter** (:class:`Splitter`): a document is cut at Markdown headings and blank lines into paragraphs; the
paragraphs are packed, in order, into chunks of at most ``chunk_chars`` characters (default 1,500); a paragraph
longer than that is cut at sentence ends, and a sentence longer than that at ``chunk_chars``. Each chunk after the
first of a document repeats the last ``overlap`` characters (default 0) of the one before, cut back to a word
start. A chunk with fewer than ``min_chars`` characters (default 40) after stripping is dropped (a lone heading
or a page number is no source of a question). A heading starts a new chunk, so no chunk straddles two sections.

**Reading** is bounded and forgiving: a file over :data:`MAX_DOCUMENT_BYTES`, a binary file (a NUL byte, or not
UTF-8 text) and an empty one are skipped with a note naming the file and why; the other documents are used.
"""

from __future__ import annotations

import html.parser
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import MissingExtraError, UserError

MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
"""A document larger than this is skipped (its text would not fit any generator's context many times over)."""
TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".text", ""})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
PDF_SUFFIXES = frozenset({".pdf"})
SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES

Redactor = Callable[[str], str]
"""The redaction hook: a document's text in, the text that may be sent out. Applied to every document before it is
split, so nothing unredacted reaches a prompt, a quote or the case file."""


@dataclass(frozen=True)
class Document:
    """A source of cases: its name (a path, ``cases.jsonl#id``, ``trace:<id>``) and its text."""

    name: str
    text: str
    trace_id: str | None = None
    """The production trace it was made of (``from_traces``): carried into each case's provenance."""


@dataclass(frozen=True)
class Chunk:
    """A piece of one document, the unit a question is written from and its quote is checked against."""

    id: str
    """``<document>#<n>`` (n from 1)."""
    document: str
    text: str


@dataclass(frozen=True)
class Skipped:
    """A document not used, and why."""

    name: str
    reason: str


@dataclass
class Corpus:
    documents: list[Document] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


# -- readers -------------------------------------------------------------------------------------------------
_BLOCK_TAGS = frozenset("p div br li ul ol tr table section article header footer h1 h2 h3 h4 h5 h6 pre "
                        "blockquote dt dd hr main aside nav figcaption".split())
_SKIP_TAGS = frozenset({"script", "style", "template", "noscript", "head", "svg"})


class _HTMLText(html.parser.HTMLParser):
    """The readable text of an HTML page: scripts and styles left out, block elements as paragraph breaks,
    headings as Markdown headings (so the splitter starts a chunk there)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")
            if len(tag) == 2 and tag[0] == "h" and tag[1].isdigit():
                self.parts.append("#" * int(tag[1]) + " ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(re.sub(r"[ \t\r\f\v]+", " ", data.replace("\n", " ")))

    def text(self) -> str:
        return re.sub(r"\n[ \t]*(?:\n[ \t]*)+", "\n\n", "".join(self.parts)).strip()


def html_text(markup: str) -> str:
    """The readable text of an HTML document (standard library parser, no network, no script run)."""
    p = _HTMLText()
    p.feed(markup)
    p.close()
    return p.text()


def pdf_text(data: bytes, name: str) -> str:
    """The text of a PDF (the ``pdf`` extra: pypdf), pages separated by blank lines."""
    try:
        import io

        from pypdf import PdfReader
    except ImportError:
        raise MissingExtraError("pdf", "pypdf", "reading a PDF") from None
    try:
        reader = PdfReader(io.BytesIO(data))
        return "\n\n".join((page.extract_text() or "").strip() for page in reader.pages)
    except Exception as exc:  # a damaged PDF is one skipped document, never a stopped run
        raise ValueError(f"not a readable PDF ({type(exc).__name__}: {str(exc)[:120]})") from None


def _decode(data: bytes) -> str | None:
    if b"\x00" in data[:65536]:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def read_document(path: Path) -> Document | Skipped:
    """One file as a document, or why it is skipped (too large, binary, unreadable, empty)."""
    name = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            return Skipped(name, f"{size:,} bytes, over the {MAX_DOCUMENT_BYTES:,}-byte limit")
        with path.open("rb") as f:
            data = f.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        return Skipped(name, f"cannot read it: {exc.strerror or exc}")
    suffix = path.suffix.lower()
    if suffix in PDF_SUFFIXES:
        try:
            text = pdf_text(data, name)
        except (ValueError, MissingExtraError) as exc:
            return Skipped(name, str(exc))
    else:
        decoded = _decode(data)
        if decoded is None:
            return Skipped(name, "binary (not UTF-8 text)")
        text = html_text(decoded) if suffix in HTML_SUFFIXES else decoded
    if not text.strip():
        return Skipped(name, "empty (no text)")
    return Document(name, text)


def _files(paths: Iterable[str | Path]) -> Iterator[Path]:
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            yield from sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in SUFFIXES
                              and not any(part.startswith(".") for part in f.relative_to(p).parts))
        elif p.is_file():
            yield p
        else:
            raise UserError(f"{p}: no such file or folder")


def load_documents(paths: Iterable[str | Path], *, redact: Redactor | None = None) -> Corpus:
    """The documents of files and folders (a folder: its text, Markdown, HTML and PDF files, hidden ones left
    out), each through ``redact`` first; the files skipped and why."""
    corpus = Corpus()
    for path in _files(paths):
        got = read_document(path)
        if isinstance(got, Skipped):
            corpus.skipped.append(got)
            continue
        corpus.documents.append(redacted(got, redact))
    return corpus


def redacted(doc: Document, redact: Redactor | None) -> Document:
    """``doc`` through the redaction hook (its result must be text)."""
    if redact is None:
        return doc
    text = redact(doc.text)
    if not isinstance(text, str):
        raise UserError(f"the redaction hook returned {type(text).__name__} for {doc.name}, expected text")
    return replace(doc, text=text)


# -- the splitter --------------------------------------------------------------------------------------------
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")


@dataclass(frozen=True)
class Splitter:
    """How documents are cut into chunks (see the module's docstring for the rule)."""

    chunk_chars: int = 1500
    overlap: int = 0
    min_chars: int = 40

    def __post_init__(self) -> None:
        for name in ("chunk_chars", "overlap", "min_chars"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise UserError(f"Splitter: {name} must be a whole number >= 0, got {v!r}")
        if self.chunk_chars < 100:
            raise UserError(f"Splitter: chunk_chars must be at least 100, got {self.chunk_chars}")
        if self.overlap >= self.chunk_chars // 2:
            raise UserError(f"Splitter: overlap ({self.overlap}) must be under half of chunk_chars "
                            f"({self.chunk_chars})")

    def _pieces(self, text: str) -> Iterator[tuple[bool, str]]:
        """(starts a section, piece) of at most chunk_chars each."""
        for para in re.split(r"\n\s*\n", text.replace("\r\n", "\n")):
            lines = para.strip("\n").split("\n")
            # A heading line inside a paragraph still opens a section.
            current: list[str] = []
            for line in lines:
                if _HEADING.match(line) and current:
                    yield from self._cut(False, "\n".join(current))
                    current = []
                current.append(line)
            if current:
                joined = "\n".join(current).strip()
                if joined:
                    yield from self._cut(bool(_HEADING.match(joined)), joined)

    def _cut(self, heading: bool, para: str) -> Iterator[tuple[bool, str]]:
        if len(para) <= self.chunk_chars:
            yield heading, para
            return
        buf = ""
        for sentence in _SENTENCE_END.split(para):
            while len(sentence) > self.chunk_chars:
                if buf:
                    yield heading, buf
                    heading, buf = False, ""
                yield heading, sentence[: self.chunk_chars]
                heading, sentence = False, sentence[self.chunk_chars:]
            if buf and len(buf) + 1 + len(sentence) > self.chunk_chars:
                yield heading, buf
                heading, buf = False, ""
            buf = f"{buf} {sentence}" if buf else sentence
        if buf:
            yield heading, buf

    def split(self, doc: Document) -> list[Chunk]:
        texts: list[str] = []
        buf = ""
        for heading, piece in self._pieces(doc.text):
            if buf and (heading or len(buf) + 2 + len(piece) > self.chunk_chars):
                texts.append(buf)
                buf = ""
            buf = f"{buf}\n\n{piece}" if buf else piece
        if buf:
            texts.append(buf)
        chunks: list[Chunk] = []
        prev = ""
        for own in texts:
            text = own
            if self.overlap and prev:
                tail = prev[-self.overlap:]
                cut = tail.find(" ")
                tail = tail[cut + 1:] if 0 <= cut < len(tail) - 1 else tail
                text = f"{tail}\n\n{text}" if len(tail) + 2 + len(text) <= self.chunk_chars + self.overlap else text
            prev = own
            if len(text.strip()) >= self.min_chars:
                chunks.append(Chunk(f"{doc.name}#{len(chunks) + 1}", doc.name, text.strip()))
        return chunks

    def split_all(self, docs: Sequence[Document]) -> list[Chunk]:
        return [c for d in docs for c in self.split(d)]


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"(?<![\w+])\+?\d[\d ()./-]{7,}\d(?!\w)")


def redact_pii(text: str) -> str:
    """A simple redaction hook: e-mail addresses and phone-like numbers (8+ digits with separators) become
    ``[email]`` and ``[phone]``. A start, not a guarantee: pass your own hook for names, ids and the rest."""
    return _PHONE.sub("[phone]", _EMAIL.sub("[email]", text))


def load_redactor(spec: str) -> Redactor:
    """``pii`` (:func:`redact_pii`) or ``module:function`` (a function of text to text)."""
    if spec == "pii":
        return redact_pii
    mod, sep, attr = spec.partition(":")
    if not sep or not mod or not attr:
        raise UserError(f"--redact {spec}: expected 'pii' or 'module:function'")
    import importlib

    try:
        fn = getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"--redact {spec}: cannot load it ({exc})") from None
    if not callable(fn):
        raise UserError(f"--redact {spec}: not a function")
    return fn  # type: ignore[no-any-return]
