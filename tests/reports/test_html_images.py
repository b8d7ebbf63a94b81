"""Images in the HTML report: an inline image as a data: URL of its checked bytes (the only image source the
page's CSP allows), a remote one as a link that is never loaded, the judged text around them still escaped."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

from referee.cli import cli
from tests.support.images import png


def test_the_report_shows_an_image_output_inline_and_a_remote_one_as_a_link(tmp_path: Path) -> None:
    data = png(6, 5, rgb=(10, 200, 10))
    (tmp_path / "chart.png").write_bytes(data)
    (tmp_path / "table.png").write_bytes(png(2, 2))
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        json.dumps({"id": "c1", "output": [{"type": "text", "text": "<b>Here</b> is the chart:"},
                                           {"type": "image", "path": "chart.png"}],
                    "contexts": [{"type": "image", "path": "table.png"}]}) + "\n"
        + json.dumps({"id": "c2", "output": {"type": "image", "url": "https://example.com/x.png?a=1&b=\"2\""}})
        + "\n")
    res = tmp_path / "r.jsonl"
    res.write_text(json.dumps({"id": "c1", "score": 0.9}) + "\n" + json.dumps({"id": "c2", "score": 0.5}) + "\n")
    out = tmp_path / "r.html"
    assert cli(["report", str(res), "--html", str(out), "--cases", str(cases)]) == 0
    html = out.read_text()
    assert "img-src data:" in html and "default-src 'none'" in html
    srcs = re.findall(r'<img src="([^"]+)"', html)
    assert srcs == ["data:image/png;base64," + base64.b64encode(data).decode(),
                    "data:image/png;base64," + base64.b64encode(png(2, 2)).decode()]
    assert "output[1]: image chart.png (png, 6x5)" in html and "contexts[0]: image table.png (png, 2x2)" in html
    assert "&lt;b&gt;Here&lt;/b&gt; is the chart:" in html  # the text part, escaped
    assert "[image chart.png (png, 6x5)]" in html  # where the image sat in the judged text
    assert ('Remote image (not loaded): <a href="https://example.com/x.png?a=1&amp;b=&#34;2&#34;" '
            'rel="noopener noreferrer">') in html
    assert "[[image:" not in html  # no marker leaks into the page


def test_an_image_named_by_many_parts_and_rows_is_embedded_once_in_the_report(tmp_path: Path) -> None:
    """One file named by 20 parts of each of 3 cases, and a case judged twice: the page embeds the image once and
    names it elsewhere (a copy per part and per row was 60+ copies of the image in the page)."""
    data = png(7, 7, rgb=(1, 2, 3))
    (tmp_path / "big.png").write_bytes(data)
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i}", "input": [{"type": "image", "path": "big.png"}] * 20,
                                         "output": "ok"}) + "\n" for i in range(3)))
    res = tmp_path / "r.jsonl"
    res.write_text("".join(json.dumps({"id": i, "score": 0.5}) + "\n" for i in ("c0", "c1", "c2", "c0")))
    out = tmp_path / "r.html"
    assert cli(["report", str(res), "--html", str(out), "--cases", str(cases)]) == 0
    html = out.read_text()
    b64 = base64.b64encode(data).decode()
    assert html.count(b64) == 1
    assert html.count("the same image as shown above") == 4 * 20 - 1
