"""Utilities every stage uses: bounded readers of users' data (``_data``, ``_yaml``), JSON on the hot path
(``_fastjson``), secret masking (``_redact``), regular expressions with a time bound (``_regex``), the notebook and
rich displays (``_display``). Private."""

__all__: list[str] = []
