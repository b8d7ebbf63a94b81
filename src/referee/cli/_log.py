"""The library's messages on the CLI's stderr.

Library code never prints: it logs to the ``referee`` loggers (a disabled cache, an unpriced model, batch job
progress, the self-grading caveat), so a program using referee decides where they go. While a command runs,
they are shown as the CLI always showed them: one ``referee: <message>`` line each, by the rules of every
other stderr line (:func:`referee.reports._safe.echo_err`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


class _StderrLines(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        from ..reports import echo_err

        try:
            echo_err(f"referee: {record.getMessage()}")
        except Exception:  # noqa: BLE001 - logging's contract: a failing handler reports, never raises
            self.handleError(record)


@contextlib.contextmanager
def library_messages() -> Iterator[None]:
    """Show the ``referee`` loggers' INFO and above on stderr while the block runs (once when nested: the
    example runs commands from a command)."""
    logger = logging.getLogger("referee")
    if any(isinstance(h, _StderrLines) for h in logger.handlers):
        yield
        return
    handler = _StderrLines(logging.INFO)
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # shown once: not again by handlers the host process put on the root logger
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
