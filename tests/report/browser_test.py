#!/usr/bin/env python3
"""The HTML report in a real browser: headless Chromium (Debian's `chromium`,
installed by scripts/setup.sh) opens a page that `coolbench report` wrote for
a power-bound run on the simulated GPU (bursts, discards, gates, releases), must log no console error, and its screenshot must
be non-blank and show the plots' axes (long straight runs of the axis colour,
found in the pixels, read with Pillow). A control page with a script error
checks that console errors are seen at all. Without chromium it prints
"[  SKIPPED ]" with the reason (ctest counts it as skipped).

Usage: browser_test.py COOLBENCH MAKE_SAMPLE_RUN WORKDIR
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

AXIS_RGB = (0x1D, 0x23, 0x30)  # svg .domain in the page's stylesheet
WIDTH, HEIGHT = 1200, 1600


def skip(reason: str) -> None:
    print(f"[  SKIPPED ] {reason}")
    sys.exit(0)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def load_rgb(png: Path) -> np.ndarray:
    with Image.open(png) as image:
        return np.asarray(image.convert("RGB"))


def longest_run(mask: np.ndarray) -> np.ndarray:
    """The longest run of True along the last axis, for each row."""
    best = np.zeros(mask.shape[0], dtype=int)
    current = np.zeros(mask.shape[0], dtype=int)
    for x in range(mask.shape[1]):
        current = np.where(mask[:, x], current + 1, 0)
        best = np.maximum(best, current)
    return best


def render(chromium: str, page: Path, png: Path) -> str:
    """Opens `page`, saves a screenshot, returns what the browser logged."""
    args = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-extensions", "--disable-background-networking", "--hide-scrollbars",
        "--force-device-scale-factor=1", "--enable-logging=stderr", "--v=0",
        f"--user-data-dir={png.parent / ('profile-' + png.stem)}",
        f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={png}", page.as_uri(),
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if not png.exists():
        raise AssertionError(f"chromium wrote no screenshot (exit {done.returncode}):\n{done.stderr}")
    return done.stderr


def console_messages(log: str) -> list[str]:
    """What the page wrote to the console. Chromium logs every console message
    (errors and uncaught exceptions included) at its INFO level, without the
    message's own level; the page has no script, so any message is a failure."""
    return [line for line in log.splitlines() if re.search(r":CONSOLE(:|\()", line)]


def main() -> None:
    coolbench, make_sample_run, workdir = sys.argv[1:4]
    chromium = find_chromium()
    if chromium is None:
        skip("chromium is not installed (scripts/setup.sh installs Debian's chromium)")
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="coolbench_browser_", dir=workdir))
    run_json, page, png = work / "run.json", work / "run.html", work / "run.png"
    subprocess.run([make_sample_run, "power-bound", str(run_json)], check=True)
    subprocess.run([coolbench, "report", str(run_json), "-o", str(page)], check=True)

    # The control: the browser's log must show a page's console error.
    control = work / "control.html"
    control.write_text("<!DOCTYPE html><script>undefined_function();</script>")
    control_log = render(chromium, control, work / "control.png")
    assert console_messages(control_log), f"the control page's error was not seen:\n{control_log}"

    log = render(chromium, page, png)
    messages = console_messages(log)
    assert not messages, "console messages:\n" + "\n".join(messages)
    pixels = load_rgb(png)
    background = pixels[5, 5]
    not_background = np.any(pixels != background, axis=2).mean()
    assert not_background > 0.02, f"the screenshot is blank ({not_background:.4f} not background)"
    axis = np.all(np.abs(pixels.astype(int) - AXIS_RGB) <= 40, axis=2)
    horizontal = longest_run(axis).max()
    vertical = longest_run(axis.T).max()
    # The timeline's latency panel is 1000 px wide and 260 px high.
    assert horizontal >= 900, f"no x axis in the screenshot (longest axis-coloured row {horizontal} px)"
    assert vertical >= 200, f"no y axis in the screenshot (longest axis-coloured column {vertical} px)"
    print(f"ok: {not_background:.1%} of the screenshot drawn, axes {horizontal} px and {vertical} px, "
          f"no console error; {time.monotonic() - started:.1f} s")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
