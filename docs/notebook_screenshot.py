"""Render examples/notebook_tour.ipynb in a real JupyterLab and save the explorer's picture.

The picture is the tour's second explorer: the LangGraph thread of
``examples/langgraph_react.py`` read as a conversation (pass ``--first`` for the first,
the tutorial's attempts on their steps tab). Not part of the test suite (it needs
JupyterLab, Playwright and Debian's chromium):

    pip install jupyterlab playwright          # never `playwright install`
    apt-get install -y chromium
    jupyter lab --allow-root --no-browser --ip=127.0.0.1 --port=8899 \\
        --IdentityProvider.token=secret --ServerApp.root_dir=examples &
    python docs/notebook_screenshot.py          # writes docs/notebook-explorer.png
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

URL = "http://127.0.0.1:8899/lab/tree/notebook_tour.ipynb?token=secret&reset"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
]
OUT = Path(__file__).with_name("notebook-explorer.png")
WHICH = 0 if "--first" in sys.argv[1:] else 1

with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(URL)
    page.wait_for_selector(".jp-Notebook", timeout=60_000)
    page.keyboard.press("Escape")
    page.click("text=Kernel")
    page.click("text=Restart Kernel and Run All Cells…")
    page.click("button:has-text('Restart')", timeout=5_000)
    explorers = page.locator(".jp-OutputArea-output:has(.js-plotly-plot)")
    explorers.nth(WHICH).wait_for(timeout=60_000)
    time.sleep(3)  # let the widgets finish drawing
    news = page.locator("button:text-is('No'):visible")  # JupyterLab asks about its news
    if news.count():
        news.first.click()
    output = explorers.nth(WHICH)
    approval = output.locator("[data-kind=approval]")
    if approval.count():  # scroll the conversation to the approval card
        approval.first.evaluate("card => card.scrollIntoView({block: 'center'})")
    output.scroll_into_view_if_needed()
    output.screenshot(path=str(OUT))
    browser.close()
print(f"wrote {OUT}")
