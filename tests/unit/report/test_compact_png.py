"""The report's palette copy of a figure: smaller, same size in pixels, close in colour; bad bytes pass through."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.figure import Figure
from PIL import Image

from qkov.report.render_html import compact_png


def _figure_png() -> bytes:
    """A figure like the study's: lines, a log axis, a heatmap with a 256-entry colour map."""
    rng = np.random.default_rng(0)
    fig = Figure(figsize=(8, 3.5), dpi=150)  # no pyplot: no backend to switch, no figure registry to close
    a, b = fig.subplots(1, 2)
    t = np.logspace(0, 3, 200)
    for k in range(4):
        a.loglog(t, t ** (-0.3 * (k + 1)), label=f"ratio {k}")
    a.legend()
    im = b.imshow(rng.random((5, 5)) * 100, cmap="Blues")
    fig.colorbar(im, ax=b)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def test_palette_copy_is_smaller_same_shape_and_close_in_colour():
    png = _figure_png()
    small = compact_png(png)
    assert len(small) < 0.6 * len(png)          # the point of it: the page's bytes (measured ~0.35 on the study)
    with Image.open(io.BytesIO(png)) as a, Image.open(io.BytesIO(small)) as b:
        assert a.size == b.size
        x = np.asarray(a.convert("RGB"), dtype=float)
        y = np.asarray(b.convert("RGB"), dtype=float)
    # 256 median-cut colours for a figure with a few line colours and one colour map: the mean error is
    # well under one grey level in 255 (a wrong palette or a channel swap is tens of levels)
    assert np.abs(x - y).mean() < 1.0
    assert np.percentile(np.abs(x - y), 99) < 12.0


def test_bytes_pillow_cannot_read_are_embedded_unchanged():
    junk = b"\x89PNG\r\n\x1a\nnot really a png"
    assert compact_png(junk) == junk


def test_a_palette_image_is_left_as_it_is():
    im = Image.new("P", (20, 10))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    assert compact_png(buf.getvalue()) == buf.getvalue()
