"""pytest plugin for referee (registered through the ``pytest11`` entry point)."""
