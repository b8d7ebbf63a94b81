"""A headless Chromium driven through WebDriver: Debian's chromium + chromium-driver (scripts/test installs them)."""

from __future__ import annotations

import os
import shutil
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if CHROMIUM is None:
        return "chromium is not installed (scripts/test installs Debian's chromium)"
    if CHROMEDRIVER is None:
        return "chromedriver is not installed (scripts/test installs Debian's chromium-driver)"
    return None


def start(width: int = 1400, height: int = 1000) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    # A driver path given explicitly: Selenium Manager (which would download a driver) is never run.
    os.environ.setdefault("SE_AVOID_STATS", "true")
    opts = webdriver.ChromeOptions()
    assert CHROMIUM is not None and CHROMEDRIVER is not None
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--no-first-run", f"--window-size={width},{height}"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def wait_for(d: Any, css: str, timeout: float = 60) -> Any:
    """The first element matching ``css``, once the page has it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(d, timeout).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def wait_until(d: Any, fn: Any, timeout: float = 60) -> Any:
    """``fn()``'s first truthy value, retried while the page re-renders."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # The page replaces its content as it navigates: an element found a moment ago may be gone.
    return WebDriverWait(d, timeout, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
                         ).until(lambda _: fn())
