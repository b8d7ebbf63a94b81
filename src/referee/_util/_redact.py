"""Keeping secrets out of everything referee writes (manifests, rows, messages).

Three layers, because no single rule catches everything: the exact values of the key environment variables
referee reads; anything shaped like a provider key (``sk-...``, ``AIza...``); and credentials inside URLs
(``https://user:pass@host``, ``?key=...``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"

KEY_ENV_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AZURE_OPENAI_API_KEY",
                "AZURE_OPENAI_AD_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")

_KEYLIKE_RE = re.compile(
    r"\b(?:sk-(?:ant-)?[A-Za-z0-9_\-]{8,}|AIza[0-9A-Za-z_\-]{20,}|gsk_[A-Za-z0-9]{16,}|xai-[A-Za-z0-9]{16,}"
    r"|hf_[A-Za-z0-9]{16,}|(?:ghp|gho|ghs|github_pat)_[A-Za-z0-9_]{16,})"
)
# Up to the authority's last "@" (a password may hold one), never past the path, query or whitespace.
_URL_USERINFO_RE = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<userinfo>[^/?#\s]+)@")
_SECRET_NAME_RE = re.compile(r"(key|token(?!s)|secret|password|passwd|credential|authorization)", re.IGNORECASE)
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_QUERY_SECRET_RE = re.compile(
    r"(?P<name>[?&](?:[A-Za-z0-9_\-]*(?:key|token|secret|password|sig|signature)[A-Za-z0-9_\-]*))=(?P<v>[^&\s#]+)",
    re.IGNORECASE,
)

# What each pattern above needs in a text to match: most texts hold none of these, and looking for a few fixed
# strings is cheaper than any regex over them (a trace receiver looks at every span's text).
_KEYLIKE_MARKS = ("sk-", "AIza", "gsk_", "xai-", "hf_", "ghp_", "gho_", "ghs_", "github_pat_")


def _env_secrets(extra: Iterable[str] = ()) -> list[str]:
    values = [os.environ.get(v, "") for v in KEY_ENV_VARS]
    values += list(extra)
    # Very short values would mask ordinary words; real keys are long.
    return sorted({v for v in values if v and len(v) >= 8}, key=len, reverse=True)


def secret_values(extra: Iterable[str] = ()) -> list[str]:
    """The exact values :func:`redact_text` masks (the key environment variables' and ``extra``), for a caller
    that redacts every reply of a run: collected once, they cost nothing per reply (reading the environment did)."""
    return _env_secrets(extra)


def may_hold_secrets(text: str, values: Sequence[str]) -> bool:
    """False when :func:`redact_text` with ``values`` would leave ``text`` as it is (True may still leave it)."""
    if any(v in text for v in values):
        return True
    if "@" in text and "://" in text and _URL_USERINFO_RE.search(text):
        return True
    if "=" in text and ("?" in text or "&" in text) and _QUERY_SECRET_RE.search(text):
        return True
    return any(m in text for m in _KEYLIKE_MARKS) and _KEYLIKE_RE.search(text) is not None


def redact_text(text: str, *, secrets: Iterable[str] = (), values: Sequence[str] | None = None) -> str:
    """``text`` with key values, key-shaped tokens and URL credentials masked. ``values``: the exact values
    from :func:`secret_values`, instead of reading them (and ``secrets``) now."""
    for value in _env_secrets(secrets) if values is None else values:
        if value in text:
            text = text.replace(value, MASK)
    text = _URL_USERINFO_RE.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    text = _QUERY_SECRET_RE.sub(lambda m: f"{m.group('name')}={MASK}", text)
    return _KEYLIKE_RE.sub(MASK, text)


def bare_url(url: str | None) -> str | None:
    """A URL without credentials, query or fragment: what a manifest may record of an endpoint."""
    if url is None:
        return None
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def redact_url(url: str) -> str:
    """A URL safe to record: user:password replaced, secret-looking query values masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if _SECRET_NAME_RE.search(k) else v) for k, v in pairs], safe="*")
    return redact_text(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))


def url_secrets(url: str) -> list[str]:
    """The credentials a URL carries, as exact values to mask in what a server sends back: the user info
    (``user:password``, the password alone, and the ``Basic`` header value an HTTP client builds from them) and
    the values of secret-named query parameters. An endpoint that echoes its request in an error shows them."""
    import base64
    from urllib.parse import unquote

    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    out: list[str] = []
    if parts.password is not None or parts.username:
        for user, password in {(parts.username or "", parts.password or ""),
                               (unquote(parts.username or ""), unquote(parts.password or ""))}:
            pair = f"{user}:{password}"
            out += [pair, password]
            for encoding in ("latin-1", "utf-8"):  # aiohttp encodes latin-1; others utf-8
                try:
                    out.append(base64.b64encode(pair.encode(encoding)).decode("ascii"))
                except UnicodeEncodeError:
                    pass
    if parts.query:
        out += [v for k, v in parse_qsl(parts.query, keep_blank_values=True)
                if v and (_SECRET_NAME_RE.search(k) or _QUERY_SECRET_RE.search(f"?{k}={v}"))]
    return sorted({v for v in out if len(v) >= 4}, key=len, reverse=True)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line safe to record: values of secret-named options and anything key-shaped masked."""
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next:
            out.append(MASK)
            mask_next = False
            continue
        if arg.startswith("-") and "=" in arg:
            name, value = arg.split("=", 1)
            if _SECRET_NAME_RE.search(name):
                out.append(f"{name}={MASK}")
                continue
            out.append(f"{name}={redact_text(value)}")
            continue
        if arg.startswith("--") and _SECRET_NAME_RE.search(arg):
            out.append(arg)
            mask_next = True
            continue
        name = arg.split("=", 1)[0]
        if "=" in arg and _ENV_NAME_RE.match(name) and _SECRET_NAME_RE.search(name):
            out.append(f"{name}={MASK}")  # VAR=value written before the command
            continue
        out.append(redact_text(arg))
    return out
