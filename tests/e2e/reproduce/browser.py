"""Open a file in headless Chromium through selenium (shared by the browser test and manual checks)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,2000")


def chromium_missing() -> str | None:
    """Why the browser test cannot run here, or ``None`` when Chromium and chromedriver are installed."""
    for p in (CHROMIUM, CHROMEDRIVER):
        if not Path(p).exists() and shutil.which(Path(p).name) is None:
            return f"{p} is not installed (CI installs the Debian packages chromium and chromium-driver)"
    return None


def open_driver(profile_dir: Path):
    """A headless Chromium webdriver with a fresh profile directory."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    for f in FLAGS:
        opts.add_argument(f)
    opts.add_argument(f"--user-data-dir={profile_dir}")
    service = Service(CHROMEDRIVER if Path(CHROMEDRIVER).exists() else shutil.which("chromedriver"))
    return webdriver.Chrome(service=service, options=opts)


def screenshot(html: Path, png: Path) -> None:
    """Save a full-page screenshot of ``html`` as ``png`` (manual check)."""
    with tempfile.TemporaryDirectory() as prof:
        d = open_driver(Path(prof))
        try:
            d.get(html.resolve().as_uri())
            h = d.execute_script("return document.documentElement.scrollHeight")
            d.set_window_size(1280, min(int(h), 12000))
            d.save_screenshot(str(png))
        finally:
            d.quit()


if __name__ == "__main__":  # python tests/reproduce/browser.py report.html shot.png
    import sys

    screenshot(Path(sys.argv[1]), Path(sys.argv[2]))
