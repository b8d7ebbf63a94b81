"""``python -m referee.testing [--port P] [--latency S] [--standin [--replies FILE]]``: run the local LLM server
standalone (``--standin``: the stand-in judge and model, to try referee without a key)."""

from ._server import main

main()
