"""A point on the edge of a plot is drawn whole: a racer scoring 0 (the demo's random model does) sat as
half a marker under the x-axis, its line hidden behind the spine. Lines whose points all lie inside the
axes' limits are drawn unclipped and above the spines; a line that leaves the limits stays clipped."""

from __future__ import annotations

import re

from shoparena.report.plots import pyplot, svg

ZERO, OUTSIDE = "#123456", "#654321"


def line_group(page: str, colour: str) -> str:
    groups = re.findall(r'<g id="line2d_\d+">.*?</g>', page, re.S)
    found = [group for group in groups if f"stroke: {colour}" in group]
    assert len(found) == 1, page
    return found[0]


def test_a_point_on_the_axis_is_drawn_whole_and_a_line_past_the_limits_stays_clipped():
    figure, ax = pyplot().subplots()
    ax.plot([1, 2], [0.0, 0.0], marker="o", color=ZERO)
    ax.plot([1, 2], [0.5, 3.0], marker="o", color=OUTSIDE)
    ax.set_ylim(0, 1.05)
    page = svg(figure)
    assert "clip-path" not in line_group(page, ZERO)
    assert "clip-path" in line_group(page, OUTSIDE)
