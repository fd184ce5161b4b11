"""Colours, markers, dashes and hatches of chart series: one set for both back-ends.

Colours are Okabe-Ito (told apart with the common colour-vision deficiencies; olive in place
of its yellow, unreadable as a thin line on white), in an order whose neighbours differ in
lightness for greyscale print, then four of Paul Tol's muted colours, so the twelve series a
chart may have (`limits.MAX_SERIES`) each get a colour of their own. Markers, dashes and
hatches are named here in neutral words; each back-end maps them to its own vocabulary.
"""

from __future__ import annotations

from typing import Literal, get_args

PALETTE = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#999933",  # olive
    "#332288",  # indigo
    "#882255",  # wine
    "#44AA99",  # teal
    "#CC6677",  # rose
)
# a reference line drawn for every series at once (one "ideal" for all) and box medians
REFERENCE_GREY = "#555555"
TEXT_COLOUR = "#1f2328"
GRID_COLOUR = "#e3e6ea"
AXIS_COLOUR = "#c4c9d0"
NO_DATA_COLOUR = "#e3e6ea"

Marker = Literal[
    "circle", "square", "triangle-up", "diamond", "triangle-down", "cross", "x", "star"
]
MARKERS: tuple[Marker, ...] = get_args(Marker)
Dash = Literal["solid", "dashed", "dotted"]
# line hatches only: a dot or circle hatch is ~70 KB of SVG per pattern and slow to lay out
Hatch = Literal["", "/", "x", "\\", "-", "|", "+"]
HATCHES: tuple[Hatch, ...] = ("", "/", "x", "\\", "-", "|", "+")


def colour(slot: int) -> str:
    return PALETTE[slot % len(PALETTE)]


def marker(slot: int) -> Marker:
    return MARKERS[slot % len(MARKERS)]


def hatch(slot: int) -> Hatch:
    return HATCHES[slot % len(HATCHES)]


def hex_byte(fraction: float) -> str:
    """A colour channel or opacity (0-1) as the two hex digits of '#rrggbb' and '#rrggbbaa'."""
    return bytes([round(min(1.0, max(0.0, fraction)) * 255)]).hex()
