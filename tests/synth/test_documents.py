"""Reading documents (text, Markdown, HTML, PDF; bad files skipped with the reason) and the splitter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import referee
from referee.synth import Document, Splitter, _documents, html_text, load_documents, redact_pii
from referee.synth._run import synth


def _pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` in Helvetica, built byte by byte (offsets in the xref table)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def test_a_folder_of_text_markdown_html_and_pdf(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    (tmp_path / "a.md").write_text("# Refunds\n\nRefunds take 14 days.\n")
    (tmp_path / "b.html").write_text("<html><head><script>steal()</script><style>p{}</style></head><body>"
                                     "<h2>Shipping</h2><p>Express costs <b>twelve</b> dollars.</p></body></html>")
    (tmp_path / "c.pdf").write_bytes(_pdf("Warranty lasts two years."))
    (tmp_path / ".hidden.md").write_text("secret notes")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    corpus = load_documents([tmp_path])
    texts = {d.name.rsplit("/", 1)[-1]: d.text for d in corpus.documents}
    assert set(texts) == {"a.md", "b.html", "c.pdf"}
    assert "steal" not in texts["b.html"] and "## Shipping" in texts["b.html"]
    assert "Express costs twelve dollars." in texts["b.html"]
    assert "Warranty lasts two years." in texts["c.pdf"]


def test_empty_binary_huge_and_damaged_files_are_skipped_with_the_reason(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty.md").write_text("  \n\n")
    (tmp_path / "binary.txt").write_bytes(b"abc\x00def" * 10)
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (tmp_path / "huge.md").write_text("x" * 2000)
    (tmp_path / "good.md").write_text("Refunds take 14 days once the parcel reaches the warehouse.")
    monkeypatch.setattr(_documents, "MAX_DOCUMENT_BYTES", 1000)
    corpus = load_documents(sorted(tmp_path.iterdir()))
    reasons = {s.name.rsplit("/", 1)[-1]: s.reason for s in corpus.skipped}
    assert reasons["empty.md"] == "empty (no text)"
    assert reasons["binary.txt"] == reasons["latin1.txt"] == "binary (not UTF-8 text)"
    assert "1,000-byte limit" in reasons["huge.md"]
    assert "PDF" in reasons["broken.pdf"] or "pdf" in reasons["broken.pdf"]
    assert [d.name.rsplit("/", 1)[-1] for d in corpus.documents] == ["good.md"]


def test_nothing_usable_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "empty.md").write_text("")
    with pytest.raises(referee.UserError, match=r"empty\.md: empty"):
        synth(tmp_path, n=1, judge="standin")
    with pytest.raises(referee.UserError, match="no such file"):
        synth(tmp_path / "missing", n=1, judge="standin")


def test_the_splitter_packs_paragraphs_and_starts_a_chunk_at_each_heading() -> None:
    para = "A sentence about refunds that runs for a while. " * 5
    text = f"# One\n\n{para}\n\n{para}\n\n# Two\n\n{para}\n\nshort"
    chunks = Splitter(chunk_chars=400).split(Document("d.md", text))
    assert [c.id for c in chunks] == ["d.md#1", "d.md#2", "d.md#3"]
    assert chunks[0].text.startswith("# One") and chunks[2].text.startswith("# Two")
    assert all(len(c.text) <= 400 for c in chunks)
    assert chunks[2].text.endswith("short")  # a short paragraph joins its section's chunk


def test_a_long_paragraph_is_cut_at_sentences_and_a_long_sentence_at_the_limit() -> None:
    sentence = "word " * 100  # 500 characters with no sentence end
    chunks = Splitter(chunk_chars=200, min_chars=1).split(Document("d", sentence.strip()))
    assert all(len(c.text) <= 200 for c in chunks) and "".join(c.text for c in chunks).count("word") == 100
    two = Splitter(chunk_chars=120).split(Document("d", "First sentence is here and long enough. " * 6))
    assert all(c.text.endswith(".") for c in two)


def test_overlap_repeats_the_end_of_the_previous_chunk() -> None:
    text = "\n\n".join(f"Paragraph {i} says something about topic number {i} at length." for i in range(12))
    chunks = Splitter(chunk_chars=200, overlap=40).split(Document("d", text))
    assert len(chunks) > 2
    for a, b in zip(chunks, chunks[1:], strict=False):
        tail = b.text.split("\n\n", 1)[0]
        assert tail and tail in a.text


@pytest.mark.parametrize("kwargs", [{"chunk_chars": 50}, {"overlap": 800}, {"min_chars": -1},
                                    {"chunk_chars": True}])
def test_bad_splitter_settings_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(referee.UserError):
        Splitter(**kwargs)


def test_html_text_keeps_text_and_drops_scripts() -> None:
    assert html_text("<p>a &amp; b</p><script>x()</script><p>c</p>") == "a & b\n\nc"


def test_redact_pii() -> None:
    assert redact_pii("mail bob@example.org or call +1 (555) 010-9999 about order 12") == \
        "mail [email] or call [phone] about order 12"


def test_a_redaction_hook_must_return_text() -> None:
    with pytest.raises(referee.UserError, match="redaction hook returned int"):
        synth([Document("d", "Refunds take 14 days once the parcel arrives.")], judge="standin",
              redact=lambda t: 1)  # type: ignore[arg-type, return-value]
