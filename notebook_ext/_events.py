"""The explorer's events tab: a slider (with play and step buttons) through a branch's
log, and for the event it points at the event, the state as of it and what changed
since the event before (the core diff engine's output, decoded for people)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

import rewinddb
from rewinddb import rendering

from . import _html
from ._layout import COLUMN, TALL, WIDE, html_widget, row


@dataclass(frozen=True)
class Point:
    """A branch at a version."""

    branch: str
    version: int


class EventsTab(widgets.VBox):
    """Scrubs through a branch's events. ``load`` reads the log; the panels are filled
    when the tab is ``shown`` or the slider moves."""

    def __init__(self, db: rewinddb.Database) -> None:
        self._db = db
        self._branch = "default"
        self._events: list[rewinddb.Event] = []
        self._forked_at = 0
        self._updating = False
        self._stale = False
        self.shown = False
        self.slider = widgets.IntSlider(description="event", min=0, max=0, continuous_update=True)
        self.play = widgets.Play(interval=500, min=0, max=0)
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.previous_button = widgets.Button(description="◀", layout={"width": "3em"})
        self.next_button = widgets.Button(description="▶", layout={"width": "3em"})
        self.event_panel = html_widget(COLUMN)
        self.diff_panel = html_widget(COLUMN)
        self.state_panel = html_widget(TALL)
        self.slider.observe(self._on_slider, names="value")
        self.previous_button.on_click(lambda _: self.step(-1))
        self.next_button.on_click(lambda _: self.step(1))
        super().__init__(
            [
                row([self.previous_button, self.play, self.slider, self.next_button]),
                row([self.event_panel, self.diff_panel]),
                self.state_panel,
            ],
            layout=widgets.Layout(**WIDE),
        )

    @property
    def events(self) -> list[rewinddb.Event]:
        return self._events

    def load(self, branch: str, *, follow: bool) -> None:
        """Read ``branch``'s log; keep the position unless it was at the end (or the
        branch changed)."""
        at_end = not self._events or self.slider.value >= len(self._events) - 1
        if branch != self._branch:
            self._branch, self._events, at_end = branch, [], True
        try:
            view = self._db.at(branch)
            self._events = [item.event for item in view.events.list()]
            self._forked_at = view.info().forked_at
        except rewinddb.RewindError as error:
            self._events = []
            self.event_panel.value = _html.message(str(error), error=True)
            self.diff_panel.value = self.state_panel.value = ""
            return
        last = max(len(self._events) - 1, 0)
        self._updating = True
        try:
            self.slider.max = self.play.max = last
            self.slider.disabled = not self._events
            if follow and at_end:
                self.slider.value = last
        finally:
            self._updating = False
        self._stale = True
        if self.shown:
            self.show(self.slider.value)

    def opened(self) -> None:
        """The tab became visible: fill its panels if the log changed since."""
        self.shown = True
        if self._stale:
            self.show(self.slider.value)

    def show(self, index: int) -> None:
        """Fill the panels for event ``index`` of the branch."""
        self._stale = False
        db = self._db
        if not self._events:
            self.event_panel.value = _html.message(
                f"branch {self._branch!r} has no events yet; its state now:"
            )
            self.diff_panel.value = ""
            try:
                self.state_panel.value = rendering.state_html(db.at(self._branch).snapshot())
            except rewinddb.RewindError as error:
                self.state_panel.value = _html.message(str(error), error=True)
            return
        event = self._events[index]
        point, previous = self._point(event), self._previous(index)
        try:
            snapshot = db.at(point.branch).snapshot(as_of=point.version)
            diff = db.diff(
                previous.branch,
                point.branch,
                as_of_a=previous.version,
                as_of_b=point.version,
                readable=True,
            )
        except rewinddb.RewindError as error:
            self.state_panel.value = _html.message(str(error), error=True)
            self.diff_panel.value = ""
        else:
            self.state_panel.value = "<b>state as of this event</b>" + rendering.state_html(
                snapshot
            )
            self.diff_panel.value = "<b>changed since the previous event</b>" + (
                _html.diff_html(db, diff)
            )
        self.event_panel.value = rendering.event_html(event)

    def _point(self, event: rewinddb.Event) -> Point:
        """Where to read the state at ``event``: this branch, or (for events it inherited
        from before its fork point) the branch that appended it."""
        if event.version >= self._forked_at:
            return Point(self._branch, event.version)
        return Point(event.branch, event.version)

    def _previous(self, index: int) -> Point:
        if index > 0:
            return self._point(self._events[index - 1])
        first = self._point(self._events[0])
        return Point(first.branch, self._db.branches.get(first.branch).forked_at)

    def step(self, delta: int) -> None:
        """Move the slider by ``delta`` events (the ◀ ▶ buttons)."""
        self.slider.value = min(max(self.slider.value + delta, 0), self.slider.max)

    def select(self, sequence: int, version: int) -> None:
        """Show the event ``sequence``, or (a commit's dot) the last event at or before
        ``version``."""
        index = next(
            (i for i, e in enumerate(self._events) if e.sequence == sequence),
            max((i for i, e in enumerate(self._events) if e.version <= version), default=0),
        )
        self.slider.value = index
        self.show(index)

    def _on_slider(self, change: dict[str, Any]) -> None:
        if not self._updating:
            self.show(change["new"])
