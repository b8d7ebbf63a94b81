"""The viewer shows a simulated conversation: the chat transcript with tool calls and results, the reward
breakdown with the state diff, and the tries side by side (a real headless Chromium)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.episodes import run_episodes
from referee.testing import FakeLLMServer, Reply
from tests.support import browser
from tests.support.episodes import ENVIRONMENTS, SCENARIO, agent_replies, play, sides
from tests.view.conftest import XSS, serve

pytestmark = [pytest.mark.chromium]
WHY = browser.missing()
if WHY is not None:
    pytestmark.append(pytest.mark.skip(reason=f"browser test skipped: {WHY}"))


@pytest.fixture
def driver() -> Iterator[Any]:
    d = browser.start()
    yield d
    d.quit()


def test_the_case_page_shows_the_episode_and_its_tries(driver: Any, fake_server: FakeLLMServer,
                                                       tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    # Try 0 refunds the wrong order (state differs), try 1 is right; the user's words carry hostile markup.
    def agent(messages: list[dict[str, Any]]) -> Reply:
        seed = next(r for r in fake_server.requests[::-1] if r.body.get("model") == "agent-1").body.get("seed")
        last = messages[-1]
        if seed == 0 and last["role"] == "tool" and "get_order" in str(messages[-2]):
            return Reply(tool_calls=[{"name": "refund", "arguments": {"order_id": "B2"}}])
        return agent_replies(messages)

    play(fake_server, agent=agent,
         user=lambda p: ("Thanks. ###STOP###" if "Agent: " in p else "Refund A1 please " + XSS[1]))
    a, s = sides(fake_server)
    out = tmp_path / "episodes.jsonl"
    run_episodes([SCENARIO], a, s, repeat=2, out=out, environments=ENVIRONMENTS)
    served = serve([out], [])
    try:
        d = driver
        d.get(served.url + "#/run/0/case/0")
        wait = WebDriverWait(d, 60)
        wait.until(lambda _: d.execute_script("return !!document.querySelector('#episode-view .ep-try:nth-child(2)')"))
        view = d.execute_script("return document.getElementById('episode-view').innerText")
        assert "Simulated conversation" in view and "ended: user_stop" in view
        assert "calls get_order" in view and "result of refund" in view
        assert "Reward breakdown" in view and "reward (product)" in view
        assert "Tries side by side (1 of 2 passed)" in view
        assert "Final state vs the gold state" in view and "orders.A1.status" in view
        assert "error: ValueError: order B2 is shipped" in view  # the raising tool's result, shown as failed
        assert d.execute_script("return window.__xss") is None and XSS[1] in view
        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
    finally:
        served.server.shutdown()
        served.server.server_close()
        from referee.view import close_app

        close_app(served.app)
