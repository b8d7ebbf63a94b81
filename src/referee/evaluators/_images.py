"""Images a judge would not see: a case field holding an image that the judge's prompt does not use.

The judge grades what its prompt shows; an image in a field the template never names (``{screenshot}`` missing
from it) would be silently left out, and the verdict would read as if the image had been judged. Each such field
is named once per judge in a warning (``referee: warning: ...``); the request is sent without it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from .._util._image import contains_image
from ..cases._case import Case

log = logging.getLogger("referee")
_WARNED: set[tuple[str, str]] = set()
_LOCK = threading.Lock()
# A placeholder that shows another field: {output} shows final_output, {transcript} the turns.
_SHOWN_BY = {"output": ("final_output",), "transcript": ("turns",)}


def unused_image_fields(case: Case, used: Iterable[str]) -> list[str]:
    """The fields of ``case`` that hold an image and that none of ``used`` shows."""
    shown = set(used)
    for name in list(shown):
        shown.update(_SHOWN_BY.get(name, ()))
    return [k for k, v in case.data.items()
            if k not in shown and k not in ("id", "metadata") and contains_image(v)]


def warn_unused_images(case: Case, used: Iterable[str], judge: str) -> list[str]:
    """Warn (once per judge and field) about images ``judge`` will not see; returns the fields."""
    fields = unused_image_fields(case, used)
    for f in fields:
        with _LOCK:
            if (judge, f) in _WARNED:
                continue
            _WARNED.add((judge, f))
        log.warning("warning: case '%s': field '%s' holds an image that the %s prompt does not use; the judge "
                    "will not see it (name {%s} in the template to show it)", case.id, f, judge, f)
    return fields
