"""Case text shown to people: the one set of rules every renderer applies (HTML, JUnit XML, Markdown, terminal).

- Bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, U+061C) can make displayed text read
  differently from what it is ("Trojan Source"): they are shown as visible ``<U+202E>`` marks.
- Control characters (C0 except tab and newline, DEL, C1) are dropped: XML 1.0 forbids most of them (a JUnit
  file with one is not well-formed and CI rejects it), and in a terminal they are escape sequences.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from .._util._display import display_text, neutralise_bidi
from .._util._fold import columns, fit_columns, pad_columns, terminal_width

if TYPE_CHECKING:
    from rich.console import Console

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""The Content-Security-Policy of every HTML page referee writes: no script, no network, inline styles only."""

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


__all__ = ["CSP", "columns", "display_text", "echo_err", "finalize", "fit_columns", "neutralise_bidi", "pad_columns",
           "terminal_width", "xml_text"]


def echo_err(message: str) -> None:
    """The one way a warning or error line reaches stderr (``cli/_common.echo_err``, the CLI's error handler):
    shown by :func:`display_text` rules, since ``click.echo`` alone passes bidi controls and escapes through."""
    import click  # the CLI's dependency: only the CLI's paths (and reports they print) call this

    click.echo(display_text(message), err=True)


def xml_text(text: str) -> str:
    """Text that XML 1.0 accepts (and shows bidi controls visibly)."""
    return _XML_BAD.sub("", display_text(text))


def finalize(value: Any) -> Any:
    """Jinja2 ``finalize`` for every HTML environment: applied to each ``{{ }}`` output before autoescaping."""
    if isinstance(value, Markup):
        return Markup(neutralise_bidi(str(value)))
    if isinstance(value, str):
        return display_text(value)
    return value


if TYPE_CHECKING:
    class SafeConsole(Console):
        """A rich Console whose output shows bidi controls as visible marks (``rich`` escapes markup, not them)."""

        def _render_buffer(self, buffer: Any) -> str: ...
else:
    # rich (40 modules, ~25 ms) is imported when a console is first wanted, not by every command that only
    # prints a warning line through echo_err (``referee judge`` prints its totals line that way).
    def __getattr__(name: str) -> Any:
        if name != "SafeConsole":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from rich.console import Console

        class SafeConsole(Console):
            """A rich Console whose output shows bidi controls as visible marks (``rich`` escapes markup, not
            them)."""

            def _render_buffer(self, buffer: Any) -> str:
                return neutralise_bidi(super()._render_buffer(buffer))

        globals()["SafeConsole"] = SafeConsole
        return SafeConsole
