"""Image parts in cases, checked as the cases are loaded: every ``{"type": "image", ...}`` in any field (``input``,
``output``, ``contexts``, ``turns``, tool results in a ``trajectory``, ...) becomes its normalised form
(``media_type``, base64 ``data``, ``sha256``, size), or the case is refused naming its file, line and field.

* ``path``: a file beside the cases file, resolved against the cases file's folder (the working folder for cases
  built in Python); a path that leads outside it (``../../etc/passwd``, an absolute path, a symlink out) is
  refused unless it is inside a folder listed in ``REFEREE_IMAGE_DIRS`` (``os.pathsep``-separated).
* ``data``: base64 with a ``media_type``, or a data URL; ``url``: an http(s) URL, kept as a link (never fetched).
* In Python (lists of dicts, DataFrames): ``bytes`` that are an image, and PIL images (Pillow, if installed),
  become image parts.

The bytes decide the format (a lying media type is refused), and the limits of :mod:`referee._util._image`
apply (size of one image, images per case, distinct image bytes per load).

Images are content-addressed: one :class:`MediaStore` per load of cases (a file, a suite, a list given in Python)
holds each distinct image once, and every part naming it shares that one base64 text. A file named by many parts
is read once (while it is unchanged). Without it a 50 kB cases file naming one 19 MB image 1,200 times would
hold 1,200 copies (~32 GB); the store holds one, and its bound (``REFEREE_MAX_RUN_IMAGE_BYTES``) caps the
distinct ones.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from .._util import _image
from .._util._hints import did_you_mean
from ..errors import InputError

log = logging.getLogger("referee")

_SKIP = frozenset({"id", "metadata"})


class MediaStore:
    """The distinct images of one load of cases, by SHA-256: each held once as its normalised part (base64
    text shared by every part naming it), their raw bytes bounded by ``REFEREE_MAX_RUN_IMAGE_BYTES``."""

    def __init__(self) -> None:
        self.limit: int | None = None
        self.parts: dict[str, dict[str, Any]] = {}
        self.files: dict[tuple[str, int, int, int, int], str] = {}
        self.total = 0

    def add(self, img: _image.Image) -> dict[str, Any]:
        """The shared part of ``img`` (without a name); a new image over the bound is refused."""
        held = self.parts.get(img.sha256)
        if held is not None:
            return held
        if self.limit is None:
            self.limit = _image.max_run_image_bytes()
        size = len(img.data or b"")
        if self.total + size > self.limit:
            raise _image.ImageError(
                f"the distinct images of these cases pass {self.limit:,} bytes (REFEREE_MAX_RUN_IMAGE_BYTES; "
                f"{self.total:,} bytes held before this {size:,}-byte image)")
        self.total += size
        part = img.part()
        part.pop("name", None)
        self.parts[img.sha256] = part
        return part

    def part(self, img: _image.Image) -> dict[str, Any]:
        shared = self.add(img)
        return {**shared, "name": img.name} if img.name else dict(shared)


_STORE: ContextVar[MediaStore | None] = ContextVar("referee_media_store", default=None)


@contextmanager
def media_store() -> Iterator[MediaStore]:
    """The image store every case checked inside shares (the one already open, when there is one)."""
    store = _STORE.get()
    if store is not None:
        yield store
        return
    store = MediaStore()
    token = _STORE.set(store)
    try:
        yield store
    finally:
        _STORE.reset(token)


@contextmanager
def media_store_of(store: MediaStore) -> Iterator[MediaStore]:
    """``store`` as the image store of the cases checked inside (a stream's cases, checked one at a time)."""
    token = _STORE.set(store)
    try:
        yield store
    finally:
        _STORE.reset(token)


class _Walk:
    def __init__(self, source: str, line: int | None, case_id: str) -> None:
        self.source, self.line, self.case_id = source, line, case_id
        self.count = 0
        self.limit: int | None = None
        self.store = _STORE.get() or MediaStore()

    def fail(self, where: str, why: str) -> InputError:
        return InputError(f"case '{self.case_id}': {why}", file=self.source, line=self.line, field=where)

    def image(self, where: str, make: Any) -> dict[str, Any]:
        if self.limit is None:
            try:
                self.limit = _image.max_images()
            except _image.ImageError as exc:
                raise self.fail(where, str(exc)) from None
        self.count += 1
        if self.count > self.limit:
            raise self.fail(where, f"more than {self.limit} images in one case (REFEREE_MAX_IMAGES_PER_CASE)")
        try:
            made: _image.Image | dict[str, Any] = make()
            return made if isinstance(made, dict) else self.store.part(made)
        except _image.ImageError as exc:
            raise self.fail(where, f"image refused: {exc}") from None

    def value(self, value: Any, where: str, depth: int = 0) -> Any:
        if isinstance(value, str | int | float | bool) or value is None:
            return value
        if isinstance(value, dict):
            if value.get("type") == "image":
                return self.image(where, lambda: self.part(value))
            self.check_typo(value, where)
            if depth > 32:
                return value
            changed = {k: self.value(v, f"{where}.{k}", depth + 1) for k, v in value.items()}
            return changed if any(changed[k] is not value[k] for k in value) else value
        if isinstance(value, list):
            if depth > 32:
                return value
            items = [self.value(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        if isinstance(value, bytes | bytearray):
            raw = bytes(value)
            if _image.sniff(raw) is not None:
                return self.image(where, lambda: _image.from_bytes(raw))
            return value
        if _is_pil(value):
            return self.image(where, lambda: _image.from_bytes(_pil_png(value), name=""))
        return value

    def check_typo(self, value: dict[str, Any], where: str) -> None:
        """Warn about a part that looks meant as an image (a ``path``, ``url`` or ``data``) under a misspelt
        ``type``: it is read as text, and nothing else would say so."""
        kind = value.get("type")
        if not isinstance(kind, str) or not any(k in value for k in ("path", "url", "data")):
            return
        hint = did_you_mean(kind, ("image",))
        if hint:
            at = f"{self.source}:{self.line}" if self.line else self.source
            log.warning("warning: %s: case '%s': field '%s': part type '%s' is not an image part%s; it is read as "
                        "text", at, self.case_id, where, kind, hint)

    def part(self, part: dict[str, Any]) -> _image.Image | dict[str, Any]:
        if "path" not in part:
            return _image.image_of(part)
        if sum(k in part for k in ("data", "url", "path")) != 1:
            raise _image.ImageError("an image part needs exactly one of 'path', 'url' or 'data'")
        raw_path = part["path"]
        if not isinstance(raw_path, str) or not raw_path:
            raise _image.ImageError("'path' must be a non-empty string")
        file = self.resolve(raw_path)
        declared = part.get("media_type")
        want = _image.normal_media_type(declared if isinstance(declared, str) else None)
        name = str(part.get("name") or raw_path)
        st = file.stat()
        key = (str(file), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        sha = self.store.files.get(key)
        if sha is not None:  # read, checked and held already: the same file unchanged is not read again
            shared = self.store.parts[sha]
            if want is not None and want != shared["media_type"]:
                raise _image.ImageError(f"declared as {want} but its bytes are {shared['media_type']}")
            return {**shared, "name": name}
        img = _image.from_bytes(_read_bounded(file), declared=want, name=name)
        out = self.store.part(img)
        self.store.files[key] = img.sha256
        return out

    def resolve(self, raw: str) -> Path:
        src = Path(self.source)
        base = src.parent if src.is_file() else Path.cwd()
        roots = [base.resolve()]
        roots += [Path(p).resolve() for p in os.environ.get("REFEREE_IMAGE_DIRS", "").split(os.pathsep) if p]
        file = (base / raw).resolve()
        if not any(file.is_relative_to(r) for r in roots):
            raise _image.ImageError(f"path '{raw}' is outside the cases folder {roots[0]} (list another folder "
                                    "in REFEREE_IMAGE_DIRS to allow it)")
        if not file.is_file():
            raise _image.ImageError(f"image file '{raw}' not found (resolved against {roots[0]})")
        return file


def _read_bounded(file: Path) -> bytes:
    limit = _image.max_image_bytes()
    size = file.stat().st_size
    if size > limit:
        raise _image.ImageError(f"{file.name} is {size:,} bytes, over the {limit:,}-byte limit of one image "
                                "(REFEREE_MAX_IMAGE_BYTES)")
    with file.open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:  # it grew since the stat
        raise _image.ImageError(f"{file.name} is over the {limit:,}-byte limit of one image")
    return data


def _is_pil(value: Any) -> bool:
    return type(value).__module__.startswith("PIL.") and hasattr(value, "save")


def _pil_png(img: Any) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def resolve_media(data: dict[str, Any], *, source: str, line: int | None, case_id: str) -> dict[str, Any]:
    """``data`` with every image part checked and normalised (the same dict when it holds none).
    Raises :class:`InputError` naming the case, file, line and field."""
    walk: _Walk | None = None  # made on the first field that could hold a part (most cases are text only)
    out = data
    for key, value in data.items():
        if key in _SKIP or value is None or isinstance(value, str | int | float | bool):
            continue
        walk = walk or _Walk(source, line, case_id)
        new = walk.value(value, key)
        if new is not value:
            if out is data:
                out = dict(data)
            out[key] = new
    return out


def media_sha256(cases: Iterable[Any]) -> str | None:
    """One SHA-256 over the content hash of every image the cases hold, in order (None when they hold none).

    A run's manifest keeps the cases file's hash to decide whether a rerun may keep its rows; an image file
    beside the cases can change while the cases file does not, so its content is kept too: one changed pixel
    is a case judged again, never an old score resumed."""
    digest = hashlib.sha256()
    found = False
    for case in cases:
        data = getattr(case, "data", None)
        if not isinstance(data, dict):
            continue
        for key, value in data.items():
            if key in _SKIP or value is None or isinstance(value, str | int | float | bool):
                continue
            for sha in _image_hashes(value):
                found = True
                digest.update(f"{case.id}\x00{key}\x00{sha}\n".encode())
    return digest.hexdigest() if found else None


def _image_hashes(value: Any, depth: int = 0) -> Iterator[str]:
    if isinstance(value, dict):
        if value.get("type") == "image":
            yield str(value.get("sha256") or value.get("url") or "")
        elif depth < 32:
            for v in value.values():
                yield from _image_hashes(v, depth + 1)
    elif isinstance(value, list) and depth < 32:
        for v in value:
            yield from _image_hashes(v, depth + 1)
