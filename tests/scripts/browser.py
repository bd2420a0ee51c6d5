"""Pages opened from files in Debian's Chromium (scripts/setup installs it), driven by Playwright
(its own browser downloads are never used). A page is read once it says it is ready, never after a
fixed time: a loaded machine makes a test slower, not wrong. Plots are drawn as they come near the
screen, so every plot is scrolled into view, as a reader would."""

import contextlib
import shutil

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TIMEOUT_MS = 120_000


@contextlib.contextmanager
def chromium():
    from playwright.sync_api import sync_playwright  # in kbench's venv (scripts/requirements.txt)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


class Page:
    """URL in a new tab of BROWSER; `errors` collects what it logged as an error or threw."""

    def __init__(self, browser, url, width=1300, height=900):
        self.errors = []
        self.tab = browser.new_page(viewport={"width": width, "height": height})
        self.tab.set_default_timeout(TIMEOUT_MS)
        self.tab.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.tab.on("pageerror", lambda e: self.errors.append(str(e)))
        self.tab.goto(url)

    def body(self, key):
        """<body>'s data-KEY (camelCase), None while it is unset."""
        return self.tab.evaluate("k => document.body.dataset[k] || null", key)

    def drawn(self):
        """Waits until the plots on the first screen are drawn, then until all are, scrolling each
        into view; the page's HTML then."""
        self.tab.wait_for_function("document.body.dataset.firstScreenMs || document.body.dataset.ready")
        for plot in self.tab.query_selector_all("div.plot"):
            plot.scroll_into_view_if_needed()
        self.tab.wait_for_function("document.body.dataset.ready === '1'")
        self.tab.evaluate("window.scrollTo(0, 0)")
        return self.tab.content()
