"""Real Chromium through Playwright (Debian's package; Playwright's own download cannot work here).

Browser tests skip with a clear reason when Chromium or Playwright is missing, unless
GAGAR_REQUIRE_SERVICES=1 (CI), where that is a failure. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.servers.basehttp import ThreadedWSGIServer
from django.db import connections
from django.test.testcases import LiveServerThread

from tests.conftest import PROJECT_ROOT, REQUIRE_SERVICES

CHROMIUM = os.environ.get("GAGAR_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = PROJECT_ROOT / "test-artifacts"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


_SERIAL = threading.Lock()


class _SerialHandler(StaticFilesHandler):
    """Django's live-server handler, answering one request at a time.

    The live server shares the test's in-memory SQLite connection with its request threads.
    A page's heartbeat arriving in the middle of a save would interleave two transactions on
    that shared-cache database and fail at once with "database table is locked" (shared-cache
    mode has no busy timeout). Holding a lock around each request keeps the server threaded
    (idle or preconnected sockets never block it) while the database sees one request at a time.
    """

    # Set once the test is over. The server's request threads are daemon threads that its
    # shutdown does not join, so a heartbeat that arrived just before the end would otherwise
    # still be writing while the test database is flushed (PostgreSQL then reports a deadlock
    # between the flush's TRUNCATE and the request, and the next test starts on a dirty base).
    closed = False

    def __call__(self, environ: Any, start_response: Any) -> Any:
        with _SERIAL:
            if _SerialHandler.closed:
                start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
                return [b"the test is over"]
            return super().__call__(environ, start_response)


class _Server(ThreadedWSGIServer):
    """Closes a request thread's own connections, never the test's shared in-memory SQLite one.

    Django's server closes every connection after each request. A request thread still running
    when the test ends (one turned away above) then closed the shared connection after the test
    had taken it back, and SQLite's thread check raised in that thread: a traceback warning per
    late request in a run without PostgreSQL. Closing it is a no-op for an in-memory database
    anyway; the test owns it.
    """

    def _close_connections(self) -> None:
        shared = self.connections_override or {}
        for conn in connections.all(initialized_only=True):
            if conn.alias not in shared:
                conn.close()


class _LiveServerThread(LiveServerThread):
    server_class = _Server


@pytest.fixture
def server_url(transactional_db: None) -> Iterator[str]:
    shared = {
        conn.alias: conn
        for conn in connections.all()
        if conn.vendor == "sqlite" and conn.is_in_memory_db()  # type: ignore[attr-defined]
    }
    for conn in shared.values():
        conn.inc_thread_sharing()
    _SerialHandler.closed = False
    thread = _LiveServerThread("127.0.0.1", _SerialHandler, connections_override=shared)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    try:
        yield f"http://127.0.0.1:{thread.port}"
    finally:
        thread.terminate()
        # Waits for a request still being answered, and turns away any that was accepted
        # before the shutdown but has not started: nothing touches the database after this.
        with _SERIAL:
            _SerialHandler.closed = True
        for conn in shared.values():
            conn.dec_thread_sharing()


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "needs the playwright Python package"
    if not Path(CHROMIUM).exists():
        return f"needs Chromium at {CHROMIUM} (apt-get install chromium, or set GAGAR_CHROMIUM)"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    reason = _missing()
    if reason:
        if REQUIRE_SERVICES:
            pytest.fail(f"{reason}; GAGAR_REQUIRE_SERVICES=1 makes this a failure")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield instance
        instance.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


TEST_PASSWORD = "pw-for-tests-only"  # tests.factories' throwaway password


def login(page, base_url: str, username: str, password: str = TEST_PASSWORD) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_load_state()


# The review page fetches a candidate's panel when its tab is opened: wait for the switch.
SWITCHED = "() => !document.getElementById('rv').hasAttribute('data-switching')"


def switched(page) -> None:
    page.wait_for_function(SWITCHED)


def opened(page) -> None:
    """The review page is shown and its script answers: keys, tabs and the forms' in-place
    errors. The server marks the current panel before any script runs, so waiting for it
    alone lets a key press go nowhere or a click post the form without the script."""
    page.wait_for_selector(".rv-panel.is-current")
    page.wait_for_selector("#rv[data-ready]", state="attached")


def expand_first(scope) -> bool:
    """Open the first collapsed context in `scope` (a locator) and wait until its rows are
    shown: on the review page they are fetched first, and clicking a row before they arrive
    may land on one the insertion then moves. False if there is none to open."""
    button = scope.locator("button.d-expand").first
    if not button.count():
        return False
    # Held by handle: once opened, the button is gone and `.first` names the next one.
    handle = button.element_handle()
    block = handle.get_attribute("data-expand")
    table = handle.evaluate_handle("(b) => b.closest('table')").as_element()
    handle.click()
    table.wait_for_selector(f'tbody[id="{block}"]:not([hidden])', state="attached")
    return True
