"""Utilities every stage uses: bounded readers of users' data (``_data``, ``_yaml``), JSON on the hot path
(``_fastjson``), secret masking (``_redact``), regular expressions with a time bound (``_regex``). Private."""

__all__: list[str] = []
