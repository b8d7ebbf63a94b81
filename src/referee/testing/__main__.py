"""``python -m referee.testing [--port P] [--latency S]``: run the fake LLM server standalone."""

from ._server import main

main()
