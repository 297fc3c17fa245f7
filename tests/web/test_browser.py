"""The web explorer in a real browser: Debian's headless Chromium driven by Playwright
against ``rewinddb serve`` running as its own process.

Covers what only a browser can show: the Plotly graph draws and its dots are clickable,
htmx swaps the event detail in (click, ``j`` / ``k``, push-url, back), picking two dots
opens the compare page, new events appear live while the page is open, and hostile
agent state stays text (no script runs, with or without the Content-Security-Policy).

Each page is screenshotted: to ``tmp_path``, or to ``$REWINDDB_SCREENSHOTS`` when set
(``REWINDDB_SCREENSHOTS=docs/web`` makes the README's pictures).

Chromium comes from Debian (``apt-get install -y chromium``, see ``.ci/run``), never from
``playwright install``. Without it these tests fail: they do not skip.
"""

from __future__ import annotations

import http.server
import json
import math
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect, sync_playwright
from react_run import ReactRun, record_react_run

import rewinddb
from rewinddb.demo import build_demo

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
]
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
#: How long a page may take to show what it should (a fresh server's first Plotly load
#: included); each live-update check below uses its own, tighter limit.
TIMEOUT = 10_000
DEMO_BRANCHES = [
    "default",
    "run-1",
    "run-2",
    "run-3",
    "research",
    "research-retry",
    "research-retry-2",
]


# --- the server under test ------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serve(path: Path, log: Path, *options: str, port: int | None = None) -> Iterator[str]:
    """``rewinddb serve path [options]`` as a real process (on ``port``, default a free
    one); yields its base URL once it answers."""
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "rewinddb", "serve", str(path), "--port", str(port), *options],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"rewinddb serve exited with {process.returncode}:\n{log.read_text()}",
                    pytrace=False,
                )
            try:
                with urllib.request.urlopen(f"{base}/.json", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"rewinddb serve did not answer in 30 s:\n{log.read_text()}")
            time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def demo_server(demo_path: Path) -> Iterator[str]:
    """The explorer on the demo database (conftest's), shared by the tests that only
    read it."""
    with serve(demo_path, demo_path.parent / "server.log") as base:
        yield base


@dataclass
class Scratch:
    path: Path
    base: str


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scratch]:
    """A small database that tests may write to, and the explorer on it."""
    path = tmp_path_factory.mktemp("scratch") / "db"
    with rewinddb.open(path) as db:
        db.events.append("run.start", {"n": 0})
    with serve(path, path.parent / "server.log") as base:
        yield Scratch(path, base)


# --- the browser ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's browser with "
            "`apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium` "
            "(never `playwright install`); .ci/run does this",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@dataclass
class Tab:
    """A page plus what went wrong in it: uncaught errors, console errors (a blocked
    script or a Content-Security-Policy violation shows there) and dialogs."""

    page: Page
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def expect_http_error(self) -> None:
        """The page just loaded was an error page on purpose: forget the console's
        "Failed to load resource" line about it."""
        self.errors[:] = [e for e in self.errors if "Failed to load resource" not in e]

    def assert_clean(self) -> None:
        assert self.dialogs == [], f"a dialog opened (a script ran): {self.dialogs}"
        assert self.errors == [], f"errors in the page: {self.errors}"


def open_tab(browser: Browser, **context_options: Any) -> Tab:
    context = browser.new_context(viewport=VIEWPORT, **context_options)
    context.set_default_timeout(TIMEOUT)
    page = context.new_page()
    tab = Tab(page)
    page.on("pageerror", lambda error: tab.errors.append(f"pageerror: {error}"))
    page.on(
        "console",
        lambda message: (
            tab.errors.append(f"console.{message.type}: {message.text}")
            if message.type in ("error", "warning")
            else None
        ),
    )

    def on_dialog(dialog: Any) -> None:
        tab.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return tab


@pytest.fixture
def tab(chromium: Browser) -> Iterator[Tab]:
    tab = open_tab(chromium)
    yield tab
    tab.page.context.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where screenshots go: ``$REWINDDB_SCREENSHOTS`` if set, else the test's tmp_path."""
    target = os.environ.get("REWINDDB_SCREENSHOTS")
    directory = Path(target) if target else tmp_path / "screenshots"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


# --- the graph ------------------------------------------------------------------------

DOTS = ".scatterlayer .trace:last-child .point"


@dataclass
class Dot:
    index: int
    x: float
    y: float
    url: str
    point: str  # BRANCH@VERSION
    branch: str
    sequence: int | None
    version: int

    @property
    def label(self) -> str:
        """How its hover label starts (rewinddb.plotting.hover_text)."""
        tail = "" if self.sequence is None else f" #{self.sequence}"
        return f"{self.branch} v{self.version}{tail}"


def graph_dots(page: Page) -> list[Dot]:
    """The graph's dots with their screen centres, and where each leads.

    Read from the figure Plotly actually drew (``#graph``'s ``data``): the dots are its
    last trace, each dot's ``customdata`` is ``[its page, "BRANCH@VERSION"]``, and Plotly
    draws the dots in data order, so the n-th ``.point`` is the n-th data point."""
    expect(page.locator("#graph .main-svg").first).to_be_visible()
    expect(page.locator(DOTS).first).to_be_attached()
    custom = page.eval_on_selector("#graph", "graph => graph.data.at(-1).customdata")
    centres = page.eval_on_selector_all(
        DOTS,
        """dots => dots.map(dot => {
            const box = dot.getBoundingClientRect();
            return [box.x + box.width / 2, box.y + box.height / 2];
        })""",
    )
    assert len(centres) == len(custom), (len(centres), len(custom))
    dots = []
    for index, ((x, y), (url, point)) in enumerate(zip(centres, custom, strict=True)):
        branch, _, version = point.rpartition("@")
        event = re.search(r"/events/(\d+)$", url)
        sequence = int(event.group(1)) if event else None
        dots.append(Dot(index, x, y, url, point, branch, sequence, int(version)))
    return dots


def clickable(dots: list[Dot]) -> list[Dot]:
    """Event dots with no other dot within 12 px (a click there can only mean them)."""
    return [
        dot
        for dot in dots
        if dot.sequence is not None
        and all(math.hypot(dot.x - o.x, dot.y - o.y) > 12 for o in dots if o is not dot)
    ]


def hover_dot(page: Page, dot: Dot) -> None:
    """Point at ``dot`` and wait for its hover label.

    Plotly's drag layer lies over the dots and turns pointer events on it into hover and
    click events, so this moves the mouse to the screen position, as a user would, not
    onto the <path> element. Plotly throttles hover (50 ms) and a click reports the
    last hovered point, so a click must wait until the label shows this dot."""
    page.mouse.move(dot.x, dot.y)
    expect(page.locator(".hoverlayer .hovertext").first).to_contain_text(dot.label)


#: When the last dot click happened (time.monotonic()).
_last_click = [0.0]


def click_dot(page: Page, dot: Dot) -> None:
    """Click ``dot`` as a user would. Plotly counts a second click within its
    ``doubleClickDelay`` (500 ms by default) as a double click, which resets the zoom
    instead of picking, so a second click waits that long after the first."""
    hover_dot(page, dot)
    delay_ms = page.eval_on_selector(
        "#graph",
        "graph => (graph._context && graph._context.doubleClickDelay)"
        " || Plotly.PlotSchema.get().config.doubleClickDelay.dflt",
    )
    wait = _last_click[0] + delay_ms / 1000 + 0.1 - time.monotonic()
    if wait > 0:
        page.wait_for_timeout(wait * 1000)
    page.mouse.click(dot.x, dot.y)
    _last_click[0] = time.monotonic()


# --- 1. the overview ------------------------------------------------------------------


def wide_page(tab: Tab, url: str) -> Page:
    """The tab's page at ``url`` in a 1,400 x 900 window (the story pages' pictures)."""
    tab.page.set_viewport_size({"width": 1400, "height": 900})
    tab.page.goto(url)
    return tab.page


def test_overview_draws_the_graph_and_a_dot_opens_its_event(
    tab: Tab, demo_server: str, shots: Path
) -> None:
    page = tab.page
    response = page.goto(demo_server + "/")
    assert response is not None and response.ok
    expect(page.locator("#graph .main-svg").first).to_be_visible()
    names = page.locator("table.branches tbody tr td:first-child > a")
    expect(names).to_have_text(DEMO_BRANCHES)
    dots = graph_dots(page)
    assert {dot.branch for dot in dots} == set(DEMO_BRANCHES)
    page.screenshot(path=shots / "overview.png")

    target = next(dot for dot in clickable(dots) if dot.branch == "research-retry")
    click_dot(page, target)
    expect(page).to_have_url(demo_server + target.url)
    expect(
        page.locator(f'#detail .event-detail[data-sequence="{target.sequence}"]')
    ).to_be_visible()
    expect(page.locator("h1")).to_contain_text("research-retry")
    tab.assert_clean()


def test_hover_label_shows_the_summary_as_written(tab: Tab, demo_server: str) -> None:
    page = tab.page
    page.goto(demo_server + "/")
    dot = next(d for d in clickable(graph_dots(page)) if d.branch == "run-1" and d.sequence == 0)
    hover_dot(page, dot)
    label = page.locator(".hoverlayer .hovertext").first.text_content() or ""
    assert '"tool"' in label and "&quot;" not in label, label


def test_lane_labels_are_not_clipped(tab: Tab, demo_server: str) -> None:
    page = tab.page
    page.goto(demo_server + "/")
    labels = page.locator("#graph .yaxislayer-above .ytick text")
    expect(labels).to_have_text(DEMO_BRANCHES)
    graph = page.locator("#graph").bounding_box()
    assert graph is not None
    lefts = labels.evaluate_all("texts => texts.map(t => t.getBoundingClientRect().left)")
    assert min(lefts) >= graph["x"], (graph["x"], lefts)


def test_long_names_wrap_and_their_lanes_read_apart(chromium: Browser, tmp_path: Path) -> None:
    """A 300-character name wraps in the attempts table instead of widening the page, and
    two lanes that differ only at their ends are labelled apart (shortened in the middle)."""
    path = tmp_path / "db"
    long_names = [
        "x" * 300,
        "research / subgraph:0c48b199-1111",
        "research / subgraph:0c48b199-2222",
    ]
    with rewinddb.open(path) as db:
        for name in long_names:
            db.branches.fork("default", name)
            db.at(name).kv.put("k", name)
    tab = open_tab(chromium)
    try:
        with serve(path, tmp_path / "server.log") as base:
            page = tab.page
            page.set_viewport_size({"width": 1280, "height": 900})
            page.goto(base + "/")
            page.wait_for_load_state("networkidle")
            no_overflow(page, "the attempts page")
            texts = page.locator("#graph .yaxislayer-above .ytick text").all_text_contents()
            ends = [text for text in texts if text.startswith("research")]
            assert len(ends) == 2 and ends[0] != ends[1], texts
            assert all("…" in text for text in ends), texts
            tab.assert_clean()
    finally:
        tab.page.context.close()


# --- 2. the branch page: click, j / k, push-url, back ---------------------------------


def test_branch_page_click_and_keys_swap_the_event_detail(
    tab: Tab, demo_server: str, shots: Path
) -> None:
    page = tab.page
    page.goto(demo_server + "/branches/research")
    expect(page.locator("#timeline a.event-row")).to_have_count(37)
    expect(page.locator("#detail .event-detail")).to_have_count(0)

    page.locator("#event-5").click()
    detail = page.locator('#detail .event-detail[data-sequence="5"]')
    expect(detail).to_be_visible()
    expect(detail.locator("h2")).to_contain_text("tool.call")
    diff = page.locator("#diff table.diff")
    expect(diff).to_be_visible()
    # Event 5 is step 1's search: it added $.sources[1] to the notebook document.
    expect(diff).to_contain_text("$.sources[1]")
    expect(page).to_have_url(demo_server + "/branches/research/events/5")
    expect(page.locator("#event-5")).to_have_class(re.compile(r"\bselected\b"))
    diff_of_5 = diff.inner_text()
    page.screenshot(path=shots / "branch.png")

    page.keyboard.press("j")
    expect(page.locator('#detail .event-detail[data-sequence="6"]')).to_be_visible()
    expect(page).to_have_url(demo_server + "/branches/research/events/6")
    expect(page.locator("#event-6")).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("#event-5")).not_to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("#diff table.diff")).not_to_have_text(diff_of_5)
    # Events #6 and #7 were committed together: #6 shows itself, #7 the state change.
    expect(page.locator("#diff table.diff")).to_contain_text("event #6")
    expect(page.locator("#diff table.diff")).not_to_contain_text("$.sources[2]")
    expect(page.locator("#detail .together")).to_contain_text("#7")
    page.locator("#detail .together a").last.click()
    expect(page.locator('#detail .event-detail[data-sequence="7"]')).to_be_visible()
    expect(page.locator("#diff table.diff")).to_contain_text("$.sources[2]")
    page.go_back()
    expect(page.locator('#detail .event-detail[data-sequence="6"]')).to_be_visible()

    page.keyboard.press("k")
    expect(page.locator('#detail .event-detail[data-sequence="5"]')).to_be_visible()
    expect(page).to_have_url(demo_server + "/branches/research/events/5")

    # The pushed URLs are real history entries: back restores the previous event.
    page.go_back()
    expect(page).to_have_url(demo_server + "/branches/research/events/6")
    expect(page.locator('#detail .event-detail[data-sequence="6"]')).to_be_visible()
    expect(page.locator("#timeline a.event-row")).to_have_count(37)

    # A pushed URL is a permalink: loaded on its own it gives the whole page.
    page.goto(demo_server + "/branches/research/events/6")
    expect(page.locator("h1")).to_contain_text("research")
    expect(page.locator('#detail .event-detail[data-sequence="6"]')).to_be_visible()
    expect(page.locator("#event-6")).to_have_class(re.compile(r"\bselected\b"))
    tab.assert_clean()


def test_back_to_a_pushed_event_url_shows_the_whole_page(tab: Tab, demo_server: str) -> None:
    page = tab.page
    page.goto(demo_server + "/branches/research")
    page.locator("#event-5").click()
    expect(page).to_have_url(demo_server + "/branches/research/events/5")
    page.locator("header nav").get_by_role("link", name="compare").click()
    expect(page).to_have_url(demo_server + "/compare")
    page.go_back()
    expect(page).to_have_url(demo_server + "/branches/research/events/5")
    expect(page.locator("#timeline a.event-row")).to_have_count(37, timeout=2_000)
    expect(page.locator('#detail .event-detail[data-sequence="5"]')).to_be_visible()


# --- 3. compare two dots --------------------------------------------------------------


def test_picking_two_dots_opens_the_compare_page(tab: Tab, demo_server: str, shots: Path) -> None:
    page = tab.page
    page.goto(demo_server + "/")
    dots = clickable(graph_dots(page))
    first = max((d for d in dots if d.branch == "research"), key=lambda d: d.index)
    second = max((d for d in dots if d.branch == "research-retry-2"), key=lambda d: d.index)

    page.locator("#compare-mode").check()
    click_dot(page, first)
    expect(page.locator("#compare-picks")).to_have_text(first.point)
    expect(page).to_have_url(demo_server + "/")  # one pick does not navigate
    click_dot(page, second)
    expect(page).to_have_url(re.compile(r"/compare\?a=.+&b=.+"))
    assert parse_qs(urlsplit(page.url).query) == {"a": [first.point], "b": [second.point]}

    expect(page.locator("h1")).to_have_text("Compare two points")
    logs = page.locator("section.compare-log")
    expect(logs).to_have_count(2)
    expect(logs.nth(0).locator("h3")).to_have_text(f"a: {first.point}")
    expect(logs.nth(1).locator("h3")).to_have_text(f"b: {second.point}")
    expect(logs.nth(0).locator("li").first).to_be_visible()
    expect(logs.nth(1).locator(".first-divergent")).to_have_count(1)
    expect(page.locator("table.diff").first).to_be_visible()
    # research-retry-2 wrote its own draft; the diff shows it.
    more = page.locator("details.more-rows")
    if more.count():
        more.locator("summary").click()
    expect(page.locator("table.diff").filter(has_text="Lowest fees: FUND-08")).to_be_visible()
    page.screenshot(path=shots / "compare.png")
    tab.assert_clean()


# --- the key history page -------------------------------------------------------------


def test_key_history_page_lists_the_versions(tab: Tab, demo_server: str, shots: Path) -> None:
    page = tab.page
    page.goto(demo_server + "/branches/research/keys/notebook?space=json")
    expect(page.locator("h1")).to_contain_text("notebook")
    versions = page.locator("li.key-version")
    expect(versions.first).to_be_visible()
    assert versions.count() > 10  # one per step that touched the notebook
    expect(versions.first.locator("table.diff")).to_be_visible()
    page.screenshot(path=shots / "key.png")
    # A version's whole value loads when its "value" is opened (htmx, on toggle).
    versions.first.locator("details.lazy-value summary").click()
    expect(versions.first.locator("details.lazy-value pre.full-value")).to_contain_text("findings")
    tab.assert_clean()


# --- 4. live updates ------------------------------------------------------------------


def test_new_events_appear_without_a_reload(chromium: Browser, tmp_path: Path) -> None:
    path = tmp_path / "live"
    build_demo(path).close()
    with serve(path, tmp_path / "server.log") as base:
        tab = open_tab(chromium)
        page = tab.page
        try:
            page.goto(base + "/branches/research")
            rows = page.locator("#timeline a.event-row")
            expect(rows).to_have_count(37)
            page.evaluate("window.__notReloaded = true")

            # The server has its own connection; this one writes as an agent would.
            with rewinddb.open(path) as writer:
                research = writer.at("research")
                research.events.append("live.ping", {"n": 1})
                research.events.append("live.ping", {"n": 2})
                expect(rows).to_have_count(39, timeout=2_000)
                expect(page.locator("#event-38")).to_contain_text("live.ping")
                expect(page.locator("#event-38")).to_contain_text('"n":2')
                # Polling goes on after a swap: a later event shows up too.
                research.events.append("live.ping", {"n": 3})
                expect(rows).to_have_count(40, timeout=2_000)
                expect(page.locator("#event-39")).to_contain_text('"n":3')
                assert page.evaluate("window.__notReloaded") is True

                # The new row is a row like any other.
                page.locator("#event-39").click()
                expect(page.locator('#detail .event-detail[data-sequence="39"]')).to_be_visible()

                # The overview polls too (every 2 s): the table and the graph follow.
                page.goto(base + "/")
                expect(page.locator("#graph .main-svg").first).to_be_visible()
                research_row = page.locator("table.branches tbody tr").filter(
                    has=page.get_by_role("link", name="research", exact=True)
                )
                expect(research_row.locator("td.events")).to_have_text("40")
                writer.branches.fork("research", "live-fork")
                writer.at("live-fork").events.append("live.ping", {"n": 4})
                names = page.locator("table.branches tbody tr td:first-child > a")
                expect(names).to_have_text([*DEMO_BRANCHES, "live-fork"], timeout=3_500)
                expect(research_row.locator("td.events")).to_have_text("40")
                live_row = page.locator("table.branches tbody tr").filter(
                    has=page.get_by_role("link", name="live-fork", exact=True)
                )
                expect(live_row.locator("td.events")).to_have_text("41")
            tab.assert_clean()
        finally:
            page.context.close()


def test_overview_graph_survives_a_live_update(chromium: Browser, scratch: Scratch) -> None:
    tab = open_tab(chromium)
    page = tab.page
    try:
        page.goto(scratch.base + "/")
        dots = len(graph_dots(page))
        with rewinddb.open(scratch.path) as writer:
            writer.events.append("run.step", {"n": dots})
            version = writer.version
        expect(page.locator("#overview")).to_contain_text(f"version {version}", timeout=3_500)
        # Drawing the new figure is the browser's work, not the live requirement: give a
        # loaded machine time for it.
        expect(page.locator(DOTS)).to_have_count(dots + 1, timeout=5_000)
    finally:
        page.context.close()


def test_overview_shows_a_new_branch_before_any_write(chromium: Browser, scratch: Scratch) -> None:
    tab = open_tab(chromium)
    try:
        tab.page.goto(scratch.base + "/")
        names = tab.page.locator("table.branches tbody tr td:first-child > a")
        expect(names.first).to_have_text("default")
        before = names.all_inner_texts()
        with rewinddb.open(scratch.path) as writer:
            writer.branches.fork("default", "attempt-2")
        expect(names).to_have_text([*before, "attempt-2"], timeout=3_000)
    finally:
        tab.page.context.close()


# --- 5. hostile state in a real browser -----------------------------------------------

SCRIPT = "<script>window.__pwned='script';alert('script')</script>"
ATTRIBUTE = "\"><img src=x onerror=\"window.__pwned='img';alert('img')\">"
SINGLE = "'><svg onload=\"window.__pwned='svg';alert('svg')\">"
CLOSE = "</script><script>window.__pwned='close';alert('close')</script>"
HTMX = '<div hx-get="/" hx-trigger="load" hx-on::load="alert(\'htmx\')">x</div>'
TEMPLATE = "{{ 7 * 7 }}{% raw %}"
EVIL_BRANCH = f"b{ATTRIBUTE}"
EVIL_KEY = f"k{SCRIPT}"
EVIL_TYPE = f"t{SINGLE}"
EVIL_DOC = f"d{ATTRIBUTE}"
EVIL_PAYLOAD = {
    "script": SCRIPT,
    "attribute": ATTRIBUTE,
    "single": SINGLE,
    "close": CLOSE,
    "htmx": HTMX,
    "template": TEMPLATE,
    ATTRIBUTE: "a hostile key",
}


def build_evil(path: Path) -> dict[str, int]:
    """A database whose names, keys, types, triggers and values are all attacks."""
    with rewinddb.open(path) as db:
        db.kv.put("plain", 1)
        base = db.version
        db.branches.fork("default", EVIL_BRANCH)
        view = db.at(EVIL_BRANCH)
        with view.transaction(trigger=CLOSE):
            view.events.append(EVIL_TYPE, EVIL_PAYLOAD)
            view.kv.put(EVIL_KEY, EVIL_PAYLOAD)
            view.json.set(EVIL_DOC, "$", {ATTRIBUTE: [SCRIPT, HTMX]})
        view.state.set(SINGLE, TEMPLATE, trigger=ATTRIBUTE)
        view.kv.put(EVIL_KEY, {"again": CLOSE})
        view.events.append(HTMX, {"text": TEMPLATE})
        return {"base": base, "head": db.version}


def tilde(text: str) -> str:
    """The explorer's URL encoding of a name (the same rule as rewinddb.web.urls)."""
    safe = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
    return "".join(chr(b) if b in safe else f"~{b:02X}" for b in text.encode("utf-8"))


def assert_inert(tab: Tab, where: str) -> None:
    page = tab.page
    assert page.evaluate("window.__pwned === undefined"), f"a payload ran on {where}"
    injected = page.locator(
        "img[src='x'], svg[onload], [onerror], [onload], [hx-on\\:\\:load], script:not([src])"
        ":not([type='application/json'])"
    )
    assert injected.count() == 0, f"markup was injected on {where}"
    assert page.locator("div[hx-trigger='load']").count() == 0, where
    tab.assert_clean()


def visit_evil_pages(tab: Tab, base: str, versions: dict[str, int]) -> None:
    page = tab.page
    branch = tilde(EVIL_BRANCH)
    payload_text = json.dumps(ATTRIBUTE)  # values are shown as JSON text

    response = page.goto(base + "/")
    assert response is not None
    policy = {}
    for directive in response.headers.get("content-security-policy", "").split(";"):
        name, _, value = directive.strip().partition(" ")
        policy[name] = value
    assert policy.get("script-src") == "'self'", policy
    assert policy.get("object-src") == "'none'", policy
    expect(page.locator("#graph .main-svg").first).to_be_visible()
    expect(page.locator("table.branches")).to_contain_text(EVIL_BRANCH)
    # Hovering a dot of the hostile branch draws its name into Plotly's hover label.
    dot = next(d for d in graph_dots(page) if d.branch == EVIL_BRANCH and d.sequence == 0)
    page.mouse.move(dot.x, dot.y)
    expect(page.locator(".hoverlayer .hovertext").first).to_contain_text(f"v{dot.version} #0")
    assert_inert(tab, "the overview")

    response = page.goto(f"{base}/branches/{branch}")
    assert response is not None and response.ok
    assert "content-security-policy" in response.headers
    expect(page.locator("h1 .name")).to_have_text(EVIL_BRANCH)
    expect(page.locator("#timeline")).to_contain_text(EVIL_TYPE)
    expect(page.locator("#timeline")).to_contain_text(HTMX)
    expect(page.locator("#timeline")).to_contain_text(json.dumps(TEMPLATE))
    assert_inert(tab, "the branch page")

    # The event detail, swapped in by htmx.
    with page.expect_response(re.compile(r"/events/0$")) as fragment:
        page.locator("#event-0").click()
    assert "content-security-policy" in fragment.value.headers
    detail = page.locator('#detail .event-detail[data-sequence="0"]')
    expect(detail).to_be_visible()
    expect(detail.locator("h2")).to_contain_text(EVIL_TYPE)
    expect(detail).to_contain_text(payload_text)
    expect(detail).to_contain_text(json.dumps(CLOSE))
    expect(detail).to_contain_text(EVIL_KEY)
    expect(page.locator("#diff")).to_contain_text(EVIL_DOC)
    # Open every collapsed tree so the nested values render too.
    page.eval_on_selector_all("#detail details", "nodes => nodes.forEach(n => n.open = true)")
    expect(detail).to_contain_text(json.dumps(HTMX))
    assert_inert(tab, "the event fragment")

    # The same event as a full page (its permalink), and the htmx-swapped second event.
    page.goto(f"{base}/branches/{branch}/events/1")
    expect(page.locator('#detail .event-detail[data-sequence="1"] h2')).to_contain_text(HTMX)
    page.keyboard.press("k")
    expect(page.locator('#detail .event-detail[data-sequence="0"]')).to_be_visible()
    assert_inert(tab, "the event page")

    response = page.goto(f"{base}/branches/{branch}/keys/{tilde(EVIL_KEY)}?space=kv")
    assert response is not None and response.ok
    expect(page.locator("h1")).to_have_text(f"kv key {EVIL_KEY}")
    expect(page.locator("main")).to_contain_text(EVIL_BRANCH)
    expect(page.locator("main")).to_contain_text(json.dumps(CLOSE))
    expect(page.locator("main")).to_contain_text(CLOSE)  # the commit's trigger
    assert_inert(tab, "the key page")

    response = page.goto(f"{base}/branches/{branch}/keys/{tilde(SINGLE)}?space=state")
    assert response is not None and response.ok
    expect(page.locator("main")).to_contain_text(ATTRIBUTE)  # the transition's trigger
    assert_inert(tab, "the state key page")

    a = f"{EVIL_BRANCH}@{versions['head']}"
    b = f"default@{versions['base']}"
    response = page.goto(f"{base}/compare?" + urlencode({"a": a, "b": b}))
    assert response is not None and response.ok
    expect(page.locator("section.compare-log").nth(0).locator("h3")).to_have_text(f"a: {a}")
    expect(page.locator("input[name=a]")).to_have_value(a)
    expect(page.locator("table.diff").first).to_contain_text(EVIL_KEY)
    assert_inert(tab, "the compare page")

    # Error pages echo what was asked for.
    missing = f"no{SCRIPT}"
    response = page.goto(f"{base}/branches/{tilde(missing)}")
    assert response is not None and response.status == 404
    tab.expect_http_error()
    expect(page.locator("main")).to_contain_text(missing)
    assert_inert(tab, "the 404 page")
    response = page.goto(f"{base}/compare?" + urlencode({"a": ATTRIBUTE, "b": b}))
    assert response is not None and response.status in (404, 422)
    tab.expect_http_error()
    expect(page.locator("main")).to_contain_text("><img src=x onerror=")
    assert_inert(tab, "the compare error page")


def test_hostile_state_stays_text(chromium: Browser, tmp_path: Path) -> None:
    path = tmp_path / "evil"
    versions = build_evil(path)
    with serve(path, tmp_path / "server.log") as base:
        # As served, and again with the Content-Security-Policy switched off: escaping
        # alone must keep every payload inert, the policy is only the second wall.
        for options in ({}, {"bypass_csp": True}):
            tab = open_tab(chromium, **options)
            try:
                visit_evil_pages(tab, base, versions)
            finally:
                tab.page.context.close()


# --- a LangGraph run in the explorer -------------------------------------------------


def no_overflow(page: Page, where: str) -> None:
    """Nothing on the page is wider than the window (no horizontal scroll bar)."""
    width = page.evaluate("document.documentElement.scrollWidth")
    window = page.evaluate("window.innerWidth")
    assert width <= window, f"{where}: the page is {width} px wide in a {window} px window"


@pytest.fixture(scope="module")
def react_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ReactRun, str]]:
    """The ReAct run (examples/langgraph_react.py) and the explorer on it."""
    run = record_react_run(tmp_path_factory.mktemp("react") / "agent")
    with serve(run.directory, run.directory.parent / "server.log") as base:
        yield run, base


def test_a_thread_reads_as_a_conversation(
    tab: Tab, react_server: tuple[ReactRun, str], shots: Path
) -> None:
    run, base = react_server
    page = wide_page(tab, f"{base}/branches/{tilde(run.main_branch)}")
    chat = page.locator("#chat")
    expect(chat.locator(".msg.role-human").filter(has_text=run.question)).to_be_visible()
    expect(chat.locator(".msg.role-ai").last).to_contain_text(run.answer)
    card = chat.locator(".tool-call").filter(has_text=run.tool_call_id)
    expect(card.locator(".tool-name")).to_have_text(run.tool)
    expect(card.locator(".tool-args")).to_contain_text(
        json.dumps(run.tool_args, separators=(",", ":"))
    )
    expect(card.locator(".tool-result")).to_contain_text(run.tool_result)
    approval = chat.locator(".approval")
    expect(approval.locator(".question")).to_have_text(run.interrupt_question)
    expect(approval.locator(".resume")).to_contain_text(run.resume)
    expect(page.locator("#steps .step-row").first).to_be_visible()
    no_overflow(page, "the thread")
    page.screenshot(path=shots / "thread.png", full_page=True)

    # The fork: the fork point marked, the edited call after it.
    page.goto(f"{base}/branches/{tilde(run.fork_branch)}")
    expect(page.locator("h1")).to_contain_text(run.fork_branch.removeprefix("lg/"))
    expect(page.locator(".fork-label")).to_contain_text("edit of step")
    mark = page.locator("#chat .fork-mark")
    expect(mark).to_have_count(1)
    edited = json.dumps(run.edited_args, separators=(",", ":"))
    after = page.locator("#chat .fork-mark ~ li .tool-args")
    expect(after.first).to_contain_text(edited)
    expect(page.locator("#chat .msg.inherited").first).to_contain_text("before the fork")
    expect(page.locator("#steps tr.fork-mark")).to_have_count(1)
    expect(page.locator("#steps tr.step-row.inherited").first).to_be_visible()
    no_overflow(page, "the fork")
    page.screenshot(path=shots / "thread-fork.png", full_page=True)
    tab.assert_clean()


def test_a_step_opens_with_its_bookkeeping_behind_a_toggle(
    tab: Tab, react_server: tuple[ReactRun, str], shots: Path
) -> None:
    run, base = react_server
    page = wide_page(tab, f"{base}/branches/{tilde(run.main_branch)}")
    page.locator("#steps .step-row").last.locator("a.step-open").click()
    expect(page).to_have_url(re.compile(r"/steps/\d+$"))
    detail = page.locator("article.step-detail")
    expect(detail.locator("h1")).to_contain_text("Step")
    expect(detail.locator(".chat")).to_contain_text(run.answer)
    hidden = detail.locator("details.hidden-rows")
    toggle = hidden.locator("summary")
    expect(toggle).to_contain_text(re.compile(r"show \d+ hidden"))
    expect(hidden.locator("table.diff")).not_to_be_visible()
    toggle.click()
    expect(hidden.locator("table.diff")).to_be_visible()
    expect(hidden.locator("table.diff")).to_contain_text("channel_versions")
    raw = detail.locator("details.raw")
    expect(raw.locator(".space").first).not_to_be_visible()
    raw.locator("summary").first.click()
    expect(raw.locator(".space").first).to_be_visible()
    no_overflow(page, "a step")
    page.screenshot(path=shots / "step.png", full_page=True)

    # A checkpoint id opens the same kind of page (the update_state edit here).
    page.goto(f"{base}/branches/{tilde(run.fork_branch)}/checkpoints/{run.edited_checkpoint_id}")
    expect(page.locator("article.step-detail .step-id")).to_have_text(run.edited_checkpoint_id)
    expect(page.locator("article.step-detail .meta").first).to_contain_text("source update")
    tab.assert_clean()


def test_the_fork_compared_with_its_thread(
    tab: Tab, react_server: tuple[ReactRun, str], shots: Path
) -> None:
    run, base = react_server
    query = urlencode({"a": run.main_branch, "b": run.fork_branch})
    page = wide_page(tab, f"{base}/compare?{query}")
    sides = page.locator(".verdict .side")
    expect(sides).to_have_count(2)
    expect(sides.nth(0).locator(".outcome")).to_contain_text(run.answer)
    expect(sides.nth(1).locator(".outcome")).to_contain_text(run.fork_answer)
    expect(sides.nth(1).locator(".first-step")).to_contain_text("update")
    edited = json.dumps(run.edited_args, separators=(",", ":"))
    expect(sides.nth(1).locator(".tool-args")).to_contain_text(edited)
    box_a, box_b = sides.nth(0).bounding_box(), sides.nth(1).bounding_box()
    assert box_a and box_b and box_b["x"] > box_a["x"] + box_a["width"] - 1  # side by side
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 10_000, height
    no_overflow(page, "the compare page")
    page.screenshot(path=shots / "compare-fork.png", full_page=True)
    tab.assert_clean()


def test_the_overview_lists_the_attempts_and_keys_reach_the_points(
    tab: Tab, react_server: tuple[ReactRun, str], shots: Path
) -> None:
    run, base = react_server
    page = wide_page(tab, base + "/")
    names = page.locator("table.attempts tbody tr td:first-child > a")
    expect(names).to_have_text([b.removeprefix("lg/") for b in (run.main_branch, run.fork_branch)])
    expect(page.locator("#overview")).to_contain_text("internal branches hidden")
    expect(page.locator(".legend")).to_contain_text("■ commit")
    lanes = page.locator("#graph .yaxislayer-above .ytick text")
    expect(lanes).to_have_count(2)  # lg-index and the empty default have no lane
    rows = page.locator("table.attempts tbody tr")
    expect(rows.nth(0)).to_contain_text(run.answer)
    expect(rows.nth(1)).to_contain_text("edit of step")
    page.screenshot(path=shots / "overview-attempts.png")
    no_overflow(page, "the overview")

    # The graph's points by keyboard: focus it, move, open.
    graph_dots(page)
    page.locator("#graph").focus()
    page.keyboard.press("ArrowRight")
    focus = page.locator("#graph-focus")
    # The focused point is read out as the hover shows it, in words: its thread, its step.
    expect(focus).to_contain_text(run.main_branch.removeprefix("lg/") + " v")
    expect(focus).to_contain_text(" · step ")
    expect(focus).not_to_contain_text("<br>")
    first = focus.inner_text()
    page.keyboard.press("ArrowRight")
    expect(focus).not_to_have_text(first)
    page.keyboard.press("ArrowDown")
    expect(focus).to_contain_text(run.fork_branch.removeprefix("lg/") + " v")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"/branches/{re.escape(tilde(run.fork_branch))}/"))
    expect(page.locator("main h1")).not_to_contain_text("not found")  # the step opened
    expect(page.locator("main .error")).to_have_count(0)
    tab.assert_clean()


@pytest.mark.parametrize("width", [1400, 480])
def test_pages_fit_the_window(
    tab: Tab, react_server: tuple[ReactRun, str], demo_server: str, shots: Path, width: int
) -> None:
    """No page is wider than a 1,400 px window (long paths and values wrap), and at 480
    px the two columns stack into one."""
    run, base = react_server
    page = tab.page
    page.set_viewport_size({"width": width, "height": 900})
    thread = f"{base}/branches/{tilde(run.main_branch)}"
    steps = json.loads(urllib.request.urlopen(f"{thread}/steps.json", timeout=10).read())
    urls = [
        f"{base}/",
        thread,
        f"{base}/branches/{tilde(run.fork_branch)}",
        f"{thread}/steps/{steps['steps'][-1]['version']}",
        f"{thread}?view=events",
        f"{base}/branches/{tilde(run.fork_branch)}/events/9",
        f"{base}/compare?" + urlencode({"a": run.main_branch, "b": run.fork_branch}),
        f"{demo_server}/branches/research/events/7",
        f"{demo_server}/compare?a=research&b=research-retry-2",
        f"{demo_server}/branches/research/keys/notebook?space=json",
    ]
    for url in urls:
        page.goto(url)
        page.wait_for_load_state("networkidle")
        no_overflow(page, url)
    if width == 480:
        page.goto(thread)
        chat = page.locator("section.chat-pane").bounding_box()
        steps_box = page.locator("section.steps-pane").bounding_box()
        assert chat and steps_box
        assert steps_box["y"] >= chat["y"] + chat["height"] - 1, (chat, steps_box)
        assert abs(steps_box["x"] - chat["x"]) < 2
        page.screenshot(path=shots / "thread-480.png")
    tab.assert_clean()


# The notebook widget's panels, laid out as ipywidgets lays them out (its CSS for boxes,
# tabs, HTML panels and controls; each widget's ``layout`` as its inline style), so the
# panels' own HTML can be measured in Chromium without a Jupyter server.
WIDGET_CSS = """
body { margin: 0; font: 13px sans-serif; }
.w { margin: 2px; box-sizing: border-box; overflow: visible; }
.box { display: flex; margin: 0; overflow: auto; }
.hbox { flex-direction: row; } .vbox { flex-direction: column; }
.tab-contents { width: 100%; box-sizing: border-box; border: 1px solid #ccc; padding: 15px;
  flex-grow: 1; overflow: auto; }
.html { display: flex; flex-direction: row; align-items: baseline; }
.html-content { align-self: stretch; flex-grow: 1; flex-shrink: 1; line-height: 28px;
  position: relative; }
.control { height: 28px; width: 300px; } .button { width: 148px; }
"""


def widget_html(widget: Any) -> str:
    """``widget`` (an ipywidgets tree) as the HTML its browser side draws: boxes are
    flex rows or columns, every tab's contents shown, an HTML panel its value, any other
    control an empty box of its size, the Plotly graph a placeholder."""
    import ipywidgets as widgets
    import plotly.graph_objects as go

    if isinstance(widget, go.FigureWidget):
        return '<div class="w" style="height:300px"></div>'
    layout = widget.layout
    style = ";".join(
        f"{name.replace('_', '-')}:{value}"
        for name in layout.keys
        if not name.startswith("_") and isinstance(value := getattr(layout, name), str) and value
    )
    if isinstance(widget, widgets.Tab):
        return "".join(
            f'<div class="w box vbox"><div class="tab-contents">{widget_html(child)}</div></div>'
            for child in widget.children
        )
    if isinstance(widget, widgets.Box):
        kind = "hbox" if isinstance(widget, widgets.HBox) else "vbox"
        inner = "".join(widget_html(child) for child in widget.children)
        return f'<div class="w box {kind}" style="{style}">{inner}</div>'
    if isinstance(widget, widgets.HTML):
        content = f'<div class="html-content">{widget.value}</div>'
        return f'<div class="w html" style="{style}">{content}</div>'
    kind = "button" if isinstance(widget, (widgets.Button, widgets.ToggleButton)) else ""
    return f'<div class="w control {kind}" style="{style}"></div>'


#: Every HTML panel that shows something, and every box and tab around them, as
#: [scrollWidth, clientWidth, its text]: a panel as wide as its content would stretch
#: the box holding it, so both are measured.
PANEL_WIDTHS = """() => [...document.querySelectorAll('.html, .box, .tab-contents')]
  .filter(element => element.textContent.trim())
  .map(element => [element.classList.contains('html'), element.scrollWidth,
                   element.clientWidth, element.textContent.slice(0, 60)])"""
#: ipywidgets gives every widget a 2 px margin, so a child 100% wide sticks out of its box
#: by 4 px (by design, not overflow).
MARGINS = 4


@pytest.mark.parametrize("width", [1000, 480])
def test_the_notebook_widgets_panels_fit_their_width(
    chromium: Browser, react_server: tuple[ReactRun, str], width: int
) -> None:
    """The explorer widget on the ReAct thread and its fork, every tab filled (the
    conversation, a tools step with its bookkeeping and raw JSON shown, an event's diff,
    the fork compared with its thread): no panel's content is wider than the panel
    (``scrollWidth <= clientWidth``: the diff's old and new columns and long values
    wrap), and no panel is squeezed narrower than 200 px."""
    from rewinddb.notebook import explore
    from rewinddb.notebook.explorer import EVENTS_TAB

    run, _ = react_server
    page = chromium.new_page(viewport={"width": width, "height": 900})
    try:
        for branch in (run.main_branch, run.fork_branch):
            explorer = explore(run.directory, branch=branch)
            try:
                explorer.steps.value = next(
                    version for label, version in explorer.steps.options if "tools" in label
                )
                explorer.show_hidden.value = True
                explorer.show_raw.value = True
                explorer.tabs.selected_index = EVENTS_TAB
                explorer.slider.value = explorer.slider.max // 2
                explorer.compare_a.value = run.main_branch
                explorer.compare_b.value = run.fork_branch
                explorer.compare()
                drawn = widget_html(explorer)
            finally:
                explorer.close()
            page.set_content(f"<!doctype html><style>{WIDGET_CSS}</style><div>{drawn}</div>")
            measured = page.evaluate(PANEL_WIDTHS)
            assert sum(panel for panel, *_ in measured) >= 8, measured
            for panel, scroll, client, text in measured:
                where = f"{branch} at {width} px: {text!r}"
                assert scroll <= client + (1 if panel else MARGINS), f"{where}: {scroll} > {client}"
                assert not panel or client >= 200, f"{where}: squeezed to {client} px"
        # The measure itself: a panel whose content is wider than the window is caught.
        page.set_content(
            f"<!doctype html><style>{WIDGET_CSS}</style>"
            '<div class="w box vbox" style="width:100%;min-width:0">'
            '<div class="w html" style="width:100%;min-width:0"><div class="html-content">'
            '<div style="width:1400px">x</div></div></div></div>'
        )
        panel, scroll, client, _ = page.evaluate(PANEL_WIDTHS)[-1]
        assert panel and scroll > client + 1, (scroll, client)
    finally:
        page.close()


def test_hostile_chat_text_stays_text(chromium: Browser, tmp_path: Path) -> None:
    """Messages and tool arguments that are markup show as text; nothing runs."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph

    from rewinddb.integrations.langgraph import RewindSaver

    call = {"name": f"t{ATTRIBUTE}", "args": {SCRIPT: HTMX}, "id": "c1", "type": "tool_call"}
    replies = [AIMessage(CLOSE, id="a0", tool_calls=[call])]
    path = tmp_path / "chat"
    with RewindSaver.from_path(path) as saver:
        builder = StateGraph(MessagesState)
        builder.add_node("agent", lambda state: {"messages": [replies.pop(0)]})
        builder.add_edge(START, "agent")
        graph = builder.compile(checkpointer=saver)
        graph.invoke(
            {"messages": [HumanMessage(SCRIPT, id="h0")]}, {"configurable": {"thread_id": "t"}}
        )
    with serve(path, tmp_path / "server.log") as base:
        for options in ({}, {"bypass_csp": True}):
            tab = open_tab(chromium, **options)
            try:
                page = tab.page
                page.goto(f"{base}/branches/{tilde('lg/t')}")
                chat = page.locator("#chat")
                expect(chat.locator(".msg.role-human .text")).to_have_text(SCRIPT)
                expect(chat.locator(".msg.role-ai .text")).to_have_text(CLOSE)
                expect(chat.locator(".tool-name")).to_have_text(f"t{ATTRIBUTE}")
                expect(chat.locator(".tool-args")).to_contain_text(json.dumps(HTMX)[1:-1][:20])
                assert_inert(tab, "the conversation")
                page.locator("#steps a.step-open").last.click()
                expect(page.locator("article.step-detail")).to_be_visible()
                assert_inert(tab, "a step")
            finally:
                tab.page.context.close()


def test_a_langgraph_time_travel_run_is_a_branch_tree(
    chromium: Browser, tmp_path: Path, shots: Path
) -> None:
    """The example's thread and its two rewinds, drawn as a branch tree, and a fork's
    stored events showing what the rewind changed (the README shows this picture)."""
    db = tmp_path / "agent"
    example = Path(__file__).resolve().parents[2] / "examples" / "langgraph_time_travel.py"
    subprocess.run([sys.executable, str(example), str(db)], check=True, timeout=120)
    with rewinddb.open(db, readonly=True) as opened:
        forks = [b.name for b in opened.branches.list() if b.name.startswith("lg/demo~")]
    assert len(forks) == 2
    tab = open_tab(chromium)
    try:
        with serve(db, tmp_path / "server.log") as base:
            page = tab.page
            page.goto(base + "/")
            expect(page.locator("#graph .main-svg").first).to_be_visible()
            for name in ["lg/demo", *forks]:
                expect(page.locator("table.branches")).to_contain_text(name.removeprefix("lg/"))
            expect(page.locator("table.branches")).to_contain_text("new input at step")
            page.screenshot(path=shots / "langgraph.png")
            page.goto(base + "/branches/" + tilde(forks[0]))
            expect(page.locator("#chat")).to_contain_text("book a hostel")
            page.goto(base + "/branches/" + tilde(forks[0]) + "?view=events")
            rows = page.locator("#timeline .event-row")
            expect(rows.last).to_be_visible()
            rows.last.click()
            # Its diff (whether its rows are visible or all bookkeeping depends on when
            # LangGraph's background writes landed, so only the head is certain).
            expect(page.locator("#detail .diff-head").first).to_be_visible()
            # The saver's serde encodings read as text (rewinddb.presenters.readable), not base64.
            expect(page.locator("#detail")).to_contain_text("book a hostel")
            expect(page.locator("#detail")).not_to_contain_text("msgpack")
            page.screenshot(path=shots / "langgraph-fork.png")
            tab.assert_clean()
    finally:
        tab.page.context.close()


# --- DNS rebinding --------------------------------------------------------------------

#: What a page on a rebound name would run: read pages and the API, take the CSRF token
#: from the overview, and fork with it (as the explorer's own htmx request does).
REBINDING_ATTACK = """
async (name) => {
  const read = async (url, init) => {
    try {
      const response = await fetch(url, init);
      return {status: response.status, text: await response.text()};
    } catch (error) {
      return {status: 0, text: String(error)};
    }
  };
  const out = {home: await read('/')};
  const token = out.home.text.match(/name="csrf-token" content="([^"]*)"/);
  out.token = token ? token[1] : '';
  out.api = await read('/api/branches');
  out.event = await read('/branches/research/events/3.json');
  out.fork = await read('/branches/research/fork', {
    method: 'POST',
    body: new URLSearchParams({name: name, csrf_token: out.token}),
    headers: {'X-CSRF-Token': out.token, 'HX-Request': 'true'},
  });
  return out;
}
"""


class _AttackerPage(http.server.BaseHTTPRequestHandler):
    """The attacker's own server: a page with nothing in it (its script comes later)."""

    def do_GET(self) -> None:
        body = b"<!doctype html><title>attacker</title><p>nothing to see"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_rebound_page_gets_no_agent_state_and_cannot_fork(
    chromium: Browser, tmp_path: Path, shots: Path
) -> None:
    """DNS rebinding in Chromium: ``--host-resolver-rules`` maps evil.example to
    127.0.0.1. The attacker's server answers on evil.example:PORT first; the tab loads its
    page; then that server goes and ``rewinddb serve --allow-writes`` takes the same port,
    as if the name now pointed at the victim. The page's script, same-origin with the
    explorer to the browser, reads pages and the API, takes the CSRF token and forks: it
    gets 421s, no agent state, no token, no fork. The same script on the explorer's own
    origin reads and forks, so the refusal is the Host check, not the script."""
    path = tmp_path / "demo"
    build_demo(path).close()
    port = free_port()
    evil = f"http://evil.example:{port}"
    browser = chromium.browser_type.launch(
        executable_path=CHROMIUM,
        args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP evil.example 127.0.0.1"],
    )
    try:
        tab = open_tab(browser)
        page = tab.page
        attacker = http.server.HTTPServer(("127.0.0.1", port), _AttackerPage)
        serving = threading.Thread(target=attacker.serve_forever, daemon=True)
        serving.start()
        try:
            page.goto(f"{evil}/")
            expect(page.locator("p")).to_have_text("nothing to see")
        finally:
            attacker.shutdown()
            attacker.server_close()
            serving.join(10)
        with serve(path, tmp_path / "server.log", "--allow-writes", port=port) as base:
            stolen = page.evaluate(REBINDING_ATTACK, "stolen")
            for part in ("home", "api", "event", "fork"):
                assert stolen[part]["status"] == 421, (part, stolen[part])
                assert "research" not in stolen[part]["text"], part
            assert stolen["token"] == ""
            tab.expect_http_error()

            # Browsing to the rebound name shows only our error page.
            page.goto(f"{evil}/branches/research")
            expect(page.locator("h1")).to_contain_text("421")
            assert "research-retry" not in page.content()
            page.screenshot(path=str(shots / "rebound.png"))
            page.wait_for_load_state("networkidle")
            tab.expect_http_error()
            # Its stylesheet and scripts are refused too (421 pages, not CSS or JS).
            tab.errors[:] = [e for e in tab.errors if f"'{evil}/static/" not in e]

            # The same script on the explorer's own origin: it can read and fork.
            page.goto(f"{base}/")
            own = page.evaluate(REBINDING_ATTACK, "own-origin")
            assert own["home"]["status"] == 200 and len(own["token"]) > 20
            assert "research" in own["api"]["text"]
            assert own["fork"]["status"] == 204, own["fork"]
            with urllib.request.urlopen(f"{base}/api/branches", timeout=10) as response:
                names = {branch["name"] for branch in json.load(response)}
            assert "own-origin" in names and "stolen" not in names
            tab.assert_clean()
            page.context.close()
    finally:
        browser.close()
