"""The layouts the widget's panels share: rows that wrap, columns that share the width,
panels that scroll instead of overflowing."""

from __future__ import annotations

import ipywidgets as widgets

from rewinddb import rendering

#: A panel's HTML: normal line height (the HTML widget's is a control's), text wraps.
_PANEL = '<div style="line-height:1.45;min-width:0;{wrap}">{body}</div>'
_WRAP = rendering.WRAP.replace("white-space:pre-wrap", "")
#: Boxes side by side share the width and wrap under each other when it is narrow.
ROW = {"flex_flow": "row wrap", "width": "100%", "align_items": "flex-start"}
#: A panel beside another: an equal share of the row, never less than 22em unless the
#: row is narrower (then it stacks).
COLUMN = {"flex": "1 1 22em", "min_width": "0", "overflow": "auto"}
WIDE = {"width": "100%", "min_width": "0", "overflow": "auto"}
#: A long panel (a conversation, a state) scrolls within a screenful.
TALL = {**WIDE, "max_height": "40em"}


def panel(body: str) -> str:
    """``body`` (escaped HTML) as a panel's content."""
    return _PANEL.format(wrap=_WRAP, body=body)


def html_widget(layout: dict[str, str]) -> widgets.HTML:
    """An empty HTML panel with ``layout``."""
    return widgets.HTML(layout=widgets.Layout(**layout))


def row(children: list[widgets.Widget]) -> widgets.HBox:
    """``children`` side by side, wrapping when the row is narrow."""
    return widgets.HBox(children, layout=widgets.Layout(**ROW))
