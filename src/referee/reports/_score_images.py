"""The images ``referee score``'s Markdown summary names beside the cases it lists.

``referee score`` reads a results file, not the cases, so the images come from one of three places: the cases
file given with ``--cases``; else the cases file the run's manifest names, when it is still there with the
same SHA-256 and its images with the content hash the manifest recorded (a changed file could show another
case's image, or one the judge never saw); and, for rows that carry their case's fields
(seed rows with ``input``/``output``), the rows themselves, their image parts checked as a cases file's are
(paths resolved against the results file's folder and never outside it, the same size and format checks).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util._image import contains_image
from ..aggregate._summary import Summary
from ..cases._media import media_sha256, media_store, resolve_media
from ..errors import InputError
from ..results._files import file_sha256
from ..results._manifest import RunManifest
from ..results._schema import ResultRow
from ._markdown_summary import image_refs

# A row's own fields: everything else on a row (a seed row's ``input``, ``output``, ...) is its case's.
_ROW_FIELDS = frozenset(ResultRow.model_fields) | {"schema_version"}
# A line this long is not read for images (the size limit of one image, in base64, with room for its row).
_MAX_LINE = 64 * 1024 * 1024


@dataclass
class _RowCase:
    id: str
    data: dict[str, Any] = field(default_factory=dict)


def listed_case_ids(summary: Summary) -> set[str]:
    """The ids of the cases the Markdown summary lists (the lowest-scoring, the regressions)."""
    ids = {c.id for c in summary.lowest}
    if summary.comparison is not None:
        ids |= {c.id for c in summary.comparison.regressions[:10]}
    return ids


def _cases_of_manifest(results: Path, warnings: list[str]) -> Iterable[Any]:
    try:
        manifest = RunManifest.read(results)
    except (ValueError, OSError):
        return []
    info = manifest.eval_set if manifest is not None else None
    if info is None or not info.path or info.path.startswith("<"):
        return []
    path = Path(info.path)
    if not path.is_file():
        return []
    try:
        same = file_sha256(path) == info.sha256
    except OSError:
        return []
    if not same:
        warnings.append(f"the cases file {path} changed since the run; its images are not named in the Markdown "
                        "summary (give --cases to name them)")
        return []
    from ..cases import load_cases

    try:
        cases = list(load_cases(path))
    except InputError as exc:
        warnings.append(f"the images of the cases are not named in the Markdown summary: {exc}")
        return []
    recorded = manifest.extra.get("media_sha256") if manifest is not None else None
    if recorded is not None and media_sha256(cases) != recorded:
        warnings.append(f"the images beside {path} changed since the run; they are not named in the Markdown "
                        "summary (give --cases to name them)")
        return []
    return cases


def _cases_of_rows(results: Path, ids: set[str], warnings: list[str]) -> list[_RowCase]:
    """The listed cases whose rows carry image parts in their case's fields, checked as a cases file's."""
    # One image store for every case loaded here: an image named by many parts is held once.
    with media_store():
        return _cases_of_rows_unshared(results, ids, warnings)


def _cases_of_rows_unshared(results: Path, ids: set[str], warnings: list[str]) -> list[_RowCase]:
    out: dict[str, _RowCase] = {}
    try:
        f = open(results, "rb")
    except OSError:
        return []
    with f:
        for lineno, raw in enumerate(f, 1):
            # Cheap first: a line with no image part is never decoded.
            if b'"image"' not in raw or len(raw) > _MAX_LINE:
                continue
            try:
                row = json.loads(raw)
            except ValueError:
                continue  # the aggregator has already warned about it
            if not isinstance(row, dict) or str(row.get("id")) not in ids or str(row.get("id")) in out:
                continue
            fields = {k: v for k, v in row.items() if k not in _ROW_FIELDS and contains_image(v)}
            if not fields:
                continue
            rid = str(row["id"])
            try:
                checked = resolve_media(fields, source=str(results), line=lineno, case_id=rid)
            except InputError as exc:
                warnings.append(f"{exc} (not named in the Markdown summary)")
                continue
            out[rid] = _RowCase(rid, checked)
    return list(out.values())


def score_image_refs(results: str | Path, summary: Summary, *, cases: Iterable[Any] | None = None
                     ) -> tuple[dict[str, list[str]], list[str]]:
    """Per listed case id, its images as :func:`image_refs` names them, from ``cases`` (``--cases``) or else
    the manifest's cases file, and from the rows that carry their case's fields; and the warnings of what
    could not be named (a changed cases file, a refused image part in a row)."""
    ids = listed_case_ids(summary)
    warnings: list[str] = []
    if not ids:
        return {}, warnings
    path = Path(results)
    source = list(cases) if cases is not None else list(_cases_of_manifest(path, warnings))
    refs = {k: v for k, v in image_refs(c for c in source if str(c.id) in ids).items() if v}
    for k, v in image_refs(_cases_of_rows(path, ids - set(refs), warnings)).items():
        if v:
            refs[k] = v
    return refs, warnings
