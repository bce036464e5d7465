"""Headless Chromium for the tests that look at pages and reports (Debian `chromium`).

- `chromium`: the browser's path (a pytest fixture; import it into a test module). Chromium is
  installed when missing and this process may (root with apt-get; `make browser-deps` does the same up
  front). Where it still is not there the tests skip with the reason — loudly — and on CI (`CI=true`)
  they fail instead.
- `shots`: the directory screenshots go to: `$SHOPARENA_SHOTS` when set (e.g. the CI's artefacts
  directory), else `screenshots/` under pytest's base temporary directory.
- `browse`, `dom`, `screenshot`: one headless run each.
- `svg_layout`: every inline SVG figure of a page laid out by the browser: the plot areas', legends' and
  legend texts' boxes in CSS pixels, to check that legends sit outside the plots and are legible.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

BROWSERS = ("chromium", "chromium-browser")
INSTALL = ["apt-get", "install", "-y", "chromium", "chromium-driver"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _find() -> str | None:
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


def _install() -> str:
    """Try to install chromium; returns what happened (for the skip message)."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "not root with apt-get, so it cannot be installed from here"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    attempt = subprocess.run(INSTALL, capture_output=True, text=True, env=env, timeout=900)
    if attempt.returncode != 0:
        subprocess.run(["apt-get", "update"], capture_output=True, env=env, timeout=600)
        attempt = subprocess.run(INSTALL, capture_output=True, text=True, env=env, timeout=900)
    tail = (attempt.stderr or attempt.stdout).strip().splitlines()[-1:] or ["?"]
    return f"`{' '.join(INSTALL)}` exited {attempt.returncode}: {tail[0]}"


@pytest.fixture(scope="session")
def chromium() -> str:
    found = _find()
    if found is None:
        why = _install()
        found = _find()
        if found is None:
            message = (
                f"BROWSER TESTS NOT RUN: Debian chromium is not installed ({why}). Install it with "
                f"`{' '.join(INSTALL)}` (or `make browser-deps` as root) to test the pages and reports "
                "in a real browser."
            )
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(message, pytrace=False)
            pytest.skip(message)
    return found


@pytest.fixture(scope="session")
def shots(tmp_path_factory) -> Path:
    """Where screenshots go (kept after the run: the CI uploads `$SHOPARENA_SHOTS`)."""
    chosen = os.environ.get("SHOPARENA_SHOTS")
    path = Path(chosen) if chosen else tmp_path_factory.getbasetemp() / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


def browse(chromium: str, url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [
        chromium,
        "--headless",
        "--no-sandbox",  # as root (containers, CI) chromium refuses its own sandbox
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-proxy-server",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=3000",
        *extra,
        url,
    ]
    return subprocess.run(command, capture_output=True, timeout=120, check=False)


def dom(chromium: str, url: str, profile: Path, *extra: str) -> str:
    done = browse(chromium, url, profile, "--dump-dom", *extra)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout.decode()


def screenshot(
    chromium: str, url: str, profile: Path, out: Path, width: int = 1280, height: int = 1600
) -> bytes:
    """A PNG of the page at `width`×`height` CSS pixels, written to `out` and returned."""
    out.parent.mkdir(parents=True, exist_ok=True)
    done = browse(chromium, url, profile, f"--screenshot={out}", f"--window-size={width},{height}")
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 20_000  # a rendered page, not a blank canvas
    return data


class Elements(HTMLParser):
    """Every element of a serialised DOM: (tag, attributes)."""

    def __init__(self, text: str):
        super().__init__()
        self.found: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


# The probe measures what the browser drew: per inline <svg> (matplotlib's: `axes_N` groups whose first
# `patch_N` child is the plot area, `legend_N` groups holding the entries), boxes in CSS pixels.
LAYOUT_PROBE = """
<script>
(() => {
  const box = (el) => { const r = el.getBoundingClientRect();
    return {left: r.left, top: r.top, right: r.right, bottom: r.bottom}; };
  const figures = [...document.querySelectorAll("svg")].map((svg) => {
    const scale = svg.getScreenCTM() ? svg.getScreenCTM().a : 1;
    const areas = [...svg.querySelectorAll('g[id^="axes_"]')]
      .map((ax) => ax.querySelector(':scope > g[id^="patch_"]'))
      .filter(Boolean).map(box);
    const legends = [...svg.querySelectorAll('g[id^="legend_"]')].map((legend) => ({
      box: box(legend),
      texts: [...legend.querySelectorAll("text")].map((t) => ({
        text: t.textContent,
        px: parseFloat(getComputedStyle(t).fontSize) * scale,
      })),
    }));
    return {figure: box(svg), areas, legends};
  });
  const out = document.createElement("pre");
  out.id = "svg-layout";
  out.textContent = JSON.stringify(figures);
  document.body.appendChild(out);
})();
</script>
"""


def svg_layout(chromium: str, page: Path, profile: Path, width: int = 1280) -> list[dict]:
    """Every inline SVG figure of `page` (a self-contained HTML file) as the browser lays it out at
    `width` CSS pixels: `{figure, areas: [box], legends: [{box, texts: [{text, px}]}]}`, boxes as
    {left, top, right, bottom}."""
    probe = page.with_name(page.stem + ".probe.html")
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8"
    )
    serialised = dom(chromium, probe.as_uri(), profile, f"--window-size={width},1200")
    probe.unlink()
    start = serialised.index('<pre id="svg-layout">') + len('<pre id="svg-layout">')
    text = serialised[start : serialised.index("</pre>", start)]
    return json.loads(
        text.replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    )


def overlap(a: dict, b: dict) -> float:
    """Area (CSS px²) two boxes share."""
    width = min(a["right"], b["right"]) - max(a["left"], b["left"])
    height = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
    return max(width, 0.0) * max(height, 0.0)


SVG_NS = "{http://www.w3.org/2000/svg}"
NEUTRAL = {"#ffffff", "#000000", "#cccccc"}


def figures(page: str) -> list[str]:
    """The inline SVG figures of a page, in order."""
    return [page[start : page.index("</svg>", start) + 6] for start in _starts(page, "<svg")]


def _starts(text: str, needle: str) -> list[int]:
    found, at = [], text.find(needle)
    while at >= 0:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def _colour(group) -> str | None:
    """The first non-neutral fill or stroke colour drawn inside an element."""
    import re

    for element in group.iter():
        for colour in re.findall(r"(?:fill|stroke):\s*(#[0-9a-fA-F]{6})", element.get("style", "")):
            if colour.lower() not in NEUTRAL:
                return colour.lower()
    return None


def legend_entries(svg: str) -> list[tuple[str, str | None]]:
    """(label, colour of its handle) for every entry of every legend of one matplotlib SVG figure."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(svg)
    entries = []
    for legend in root.iter(f"{SVG_NS}g"):
        if not legend.get("id", "").startswith("legend_"):
            continue
        handle = None
        for child in legend:
            kind = child.get("id", "")
            if kind.startswith("text_"):
                label = "".join(t.text or "" for t in child.iter(f"{SVG_NS}text")).replace("\u200b", "")
                entries.append((label, _colour(handle) if handle is not None else None))
                handle = None
            elif kind.startswith(("line2d_", "patch_", "PathCollection_", "PolyCollection_", "FillBetween")):
                colour = _colour(child)
                if colour is not None:
                    handle = child
    return entries


MIN_LEGEND_PX = 11.0
"""Legend text at least this many CSS pixels high as drawn (the page's body text is 16)."""


def assert_readable_figures(layout: list[dict], what: str, legends: bool = True) -> None:
    """Every legend outside every plot area of its figure, and its text legible (`legends`: the page
    has some, so the probe must have found them)."""
    assert layout, f"{what}: no figure"
    found = any(figure["legends"] and figure["areas"] for figure in layout)
    assert found or not legends, f"{what}: no legend found to check"
    for number, figure in enumerate(layout, 1):
        for legend in figure["legends"]:
            labels = [t["text"] for t in legend["texts"]]
            for area in figure["areas"]:
                assert overlap(legend["box"], area) == 0, (
                    f"{what}, figure {number}: legend {labels} on the plot"
                )
            for text in legend["texts"]:
                assert text["px"] >= MIN_LEGEND_PX, f"{what}, figure {number}: legend {text} too small"


def assert_one_colour_per_name(page: str, names: list[str]) -> dict[str, str]:
    """Each name has one colour in every figure's legend, and different names different colours."""
    seen: dict[str, set[str | None]] = {}
    for svg in figures(page):
        for label, colour in legend_entries(svg):
            seen.setdefault(label, set()).add(colour)
    for name in names:
        assert len(seen.get(name, ())) == 1, f"{name}: colours {seen.get(name)} across the figures"
    colours = {name: next(iter(seen[name])) for name in names}
    assert len(set(colours.values())) == len(names), colours
    return colours


def bar_fills(svg: str, axes: int = 1) -> list[str | None]:
    """The fill colour of each bar (patch) of one axes of a matplotlib SVG figure, in drawing order (the
    axes' background patch left out)."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(svg)
    group = next(g for g in root.iter(f"{SVG_NS}g") if g.get("id") == f"axes_{axes}")
    patches = [child for child in group if child.get("id", "").startswith("patch_")][1:]
    return [_colour(patch) for patch in patches]
