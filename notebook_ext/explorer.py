"""``explore()``: a rewinddb database's attempts, conversations, steps and events in a notebook.

Standard ipywidgets 8 and a Plotly ``FigureWidget``, nothing to build: it works in
JupyterLab, classic Notebook and VS Code. What it shows of a branch comes from the
models the web explorer renders too (``rewinddb.story``: the summary, the transcript,
the steps, a step opened, two attempts compared), the events from the branch's log;
everything is escaped (``._html``, ``rewinddb.rendering``).
"""

from __future__ import annotations

import os
import threading
from html import escape
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go

import rewinddb
from rewinddb import rendering, story, story_text
from rewinddb.plotting import graph_figure, points_trace, story_labels
from rewinddb.presenters import STEPS_PAGE, Fork, StepPage, Transcript

from . import _html
from ._compare import CompareTab
from ._events import EventsTab
from ._graph import only_branches
from ._layout import ROW, TALL, WIDE, html_widget, panel

#: Dots a lane of the graph draws at most (evenly thinned): more than its width shows.
GRAPH_POINTS = 500
TABS = ("conversation", "steps", "events", "compare")
#: The events tab fills its panels when it is shown (the state and a decoded diff of a
#: long thread are the widget's slowest reads, and often not looked at).
CONVERSATION_TAB, EVENTS_TAB = TABS.index("conversation"), TABS.index("events")


class Explorer(widgets.VBox):
    """The explorer widget. Drive it like a user: set ``branch.value``, pick a step in
    ``steps`` (or move ``step_slider``), toggle ``show_hidden`` and ``show_raw``, move
    ``slider`` through the events, click a dot of ``graph``; read ``summary_panel``,
    ``transcript_panel``, ``step_panel``, ``step_state_panel``, ``raw_panel``,
    ``event_panel``, ``state_panel``, ``diff_panel`` and ``compare_panel``."""

    def __init__(
        self,
        db: rewinddb.Database | None,
        *,
        branch: str | None = None,
        live: bool = False,
        poll_interval: float = 1.0,
        owns_db: bool = False,
        problem: str | None = None,
        all_branches: bool = False,
    ) -> None:
        self.db = db
        self._owns_db = owns_db
        self._seen_version = -1
        self._stop = threading.Event()
        self._updating = False
        self._fork: Fork | None = None
        self._step_cursors: list[int | None] = []
        self._steps_before: int | None = None
        self._step_versions: list[int] = []
        self._transcript_before: int | None = None
        self._transcript: Transcript | None = None
        self._detail: story.StepDetail | None = None
        self._older_cursor: int | None = None
        self.title = widgets.HTML()
        self.message = widgets.HTML(layout=widgets.Layout(**WIDE))
        if db is None:
            super().__init__([self.title, self.message])
            self.message.value = _html.message(problem or "no database", error=True)
            return
        self.graph = go.FigureWidget()
        self.branch = widgets.Dropdown(
            description="branch", layout=widgets.Layout(width="auto", min_width="16em")
        )
        self.all_branches = widgets.Checkbox(
            value=all_branches, description="internal branches", indent=False
        )
        self.summary_panel = html_widget(WIDE)
        self.events = EventsTab(db)
        self.compare_tab = CompareTab(db)
        # The tabs' controls and panels, by name, for code and tests that drive the widget.
        self.slider, self.play = self.events.slider, self.events.play
        self.previous_button, self.next_button = (
            self.events.previous_button,
            self.events.next_button,
        )
        self.event_panel, self.diff_panel = self.events.event_panel, self.events.diff_panel
        self.state_panel = self.events.state_panel
        self.compare_a, self.compare_b = self.compare_tab.compare_a, self.compare_tab.compare_b
        self.compare_button = self.compare_tab.compare_button
        self.compare_panel = self.compare_tab.compare_panel
        self.tabs = widgets.Tab(
            [self._conversation_tab(), self._steps_tab(), self.events, self.compare_tab]
        )
        for index, name in enumerate(TABS):
            self.tabs.set_title(index, name)
        super().__init__(
            [
                self.title,
                self.message,
                self.graph,
                widgets.HBox([self.branch, self.all_branches], layout=widgets.Layout(**ROW)),
                self.summary_panel,
                self.tabs,
            ],
            layout=widgets.Layout(width="100%", min_width="0"),
        )
        self.branch.observe(self._on_branch, names="value")
        self.all_branches.observe(lambda _: self.refresh(), names="value")
        self.refresh(select=branch)
        self.tabs.observe(self._on_tab, names="selected_index")
        self.tabs.selected_index = (
            CONVERSATION_TAB if self._transcript is not None else TABS.index("steps")
        )
        if live:
            threading.Thread(target=self._poll, args=(poll_interval,), daemon=True).start()

    # -- the tabs --------------------------------------------------------------------

    def _conversation_tab(self) -> widgets.Widget:
        self.transcript_panel = html_widget(TALL)
        self.older_messages = widgets.Button(description="◀ older messages")
        self.newer_messages = widgets.Button(description="newer messages ▶")
        self.older_messages.on_click(lambda _: self.page_transcript(-1))
        self.newer_messages.on_click(lambda _: self.page_transcript(1))
        paging = widgets.HBox(
            [self.older_messages, self.newer_messages], layout=widgets.Layout(**ROW)
        )
        return widgets.VBox([paging, self.transcript_panel], layout=widgets.Layout(**WIDE))

    def _steps_tab(self) -> widgets.Widget:
        self.steps = widgets.Select(
            description="", rows=14, layout=widgets.Layout(width="97%", min_width="0")
        )
        self.step_slider = widgets.IntSlider(
            description="step", min=0, max=0, continuous_update=True, readout=False
        )
        self.older_steps = widgets.Button(description="◀ older", layout={"width": "auto"})
        self.newer_steps = widgets.Button(description="newer ▶", layout={"width": "auto"})
        self.older_steps.on_click(lambda _: self.page_steps(-1))
        self.newer_steps.on_click(lambda _: self.page_steps(1))
        self.steps_info = widgets.HTML()
        self.step_panel = html_widget(WIDE)
        self.step_state_panel = html_widget(TALL)
        self.raw_panel = html_widget(WIDE)
        self.show_hidden = widgets.ToggleButton(description="show 0 hidden", disabled=True)
        self.show_raw = widgets.ToggleButton(description="raw stored JSON")
        self.steps.observe(self._on_step, names="value")
        self.step_slider.observe(self._on_step_slider, names="value")
        self.show_hidden.observe(lambda _: self._render_step(), names="value")
        self.show_raw.observe(lambda _: self._render_step(), names="value")
        chooser = widgets.VBox(
            [
                self.steps_info,
                widgets.HBox([self.older_steps, self.newer_steps], layout=widgets.Layout(**ROW)),
                self.step_slider,
                self.steps,
            ],
            layout=widgets.Layout(flex="0 1 24em", min_width="14em", overflow="hidden"),
        )
        detail = widgets.VBox(
            [
                widgets.HBox([self.show_hidden, self.show_raw], layout=widgets.Layout(**ROW)),
                self.step_panel,
                self.step_state_panel,
                self.raw_panel,
            ],
            layout=widgets.Layout(flex="1 1 28em", min_width="0", overflow="auto"),
        )
        return widgets.HBox([chooser, detail], layout=widgets.Layout(**ROW))

    # -- loading -----------------------------------------------------------------------

    def refresh(self, select: str | None = None) -> None:
        """Reload the branches, the graph and the selected branch."""
        db = self._db()
        try:
            version = db.version
            attempts = story.attempts(db, include_internal=True)
        except rewinddb.RewindError as error:
            self.message.value = _html.message(str(error), error=True)
            return
        self._seen_version = version
        names = [a.branch.name for a in attempts]
        shown = [
            a.branch.name for a in attempts if self.all_branches.value or not a.summary.internal
        ]
        wanted = select or self.branch.value or (shown[0] if shown else "default")
        if wanted in names and wanted not in shown:
            shown.append(wanted)  # asked for by name: shown, even if internal
        if not shown:
            shown = names
        hidden = len(names) - len(shown)
        self.title.value = (
            f"<b>rewinddb</b> <code>{escape(str(db.path))}</code>: "
            f"{rendering.plural(len(names), 'branch', 'branches')}, version {version}"
            + (f" ({hidden} internal hidden)" if hidden else "")
        )
        self._draw_graph(version, shown)
        if wanted not in shown:
            instead = "default" if "default" in shown else shown[0]
            self.message.value = _html.message(
                f"branch {wanted!r} does not exist; showing {instead!r}. Branches: "
                + ", ".join(shown),
                error=True,
            )
            wanted = instead
        self._updating = True
        try:
            self.branch.options = shown
            self.branch.value = wanted
        finally:
            self._updating = False
        self._load_branch()

    def _draw_graph(self, version: int, branches: list[str]) -> None:
        db = self._db()
        graph = only_branches(db.graph(max_points_per_branch=GRAPH_POINTS), branches)
        figure = graph_figure(graph, head=version, labels=story_labels(db, graph))
        with self.graph.batch_update():
            self.graph.data = []
            self.graph.add_traces(list(figure.data))
            self.graph.layout = figure.layout
            self.graph.layout.autosize = True
        if self.graph.data:
            points_trace(self.graph).on_click(self._on_click)

    def _load_branch(self) -> None:
        """Read the selected branch's story (summary, conversation, steps) and events."""
        self._step_cursors, self._steps_before, self._transcript_before = [], None, None
        self._load_story(select_last=True)
        self.events.load(self.branch.value, follow=True)

    def _load_story(
        self, *, select_last: bool, select: int | None = None, steps: bool = True
    ) -> None:
        """Read the story pages at the cursors; select ``select`` (a version), the page's
        last step, or keep the selection (``steps=False``: only the conversation moved)."""
        try:
            found = story.branch_story(
                self._db(),
                self.branch.value,
                before=self._steps_before,
                transcript_before=self._transcript_before,
            )
        except rewinddb.RewindError as error:
            self._story_problem(error)
            return
        self._fork = found.summary.fork
        self._transcript = found.transcript
        self.summary_panel.value = panel(_html.summary_html(found.summary))
        self._show_transcript()
        if steps:
            self._show_steps(found.steps, select_last=select_last, select=select)

    def _story_problem(self, error: rewinddb.RewindError) -> None:
        text = _html.message(f"cannot tell this branch's story: {error}", error=True)
        self.summary_panel.value = text
        self.transcript_panel.value = ""
        self.step_panel.value = ""
        self.step_state_panel.value = self.raw_panel.value = ""
        self._transcript, self._detail, self._step_versions = None, None, []
        self._updating = True
        try:
            self.steps.options = []
        finally:
            self._updating = False

    # -- the conversation ----------------------------------------------------------------

    def _show_transcript(self) -> None:
        transcript = self._transcript
        self.transcript_panel.value = panel(_html.transcript_html(transcript, self._fork))
        self.older_messages.disabled = transcript is None or transcript.start == 0
        self.newer_messages.disabled = (
            transcript is None or transcript.start + len(transcript.messages) >= transcript.total
        )

    def page_transcript(self, direction: int) -> None:
        """Show the page of messages before (-1) or after (1) the one shown."""
        transcript = self._transcript
        if transcript is None:
            return
        if direction < 0:
            self._transcript_before = transcript.start
        else:
            end = transcript.start + len(transcript.messages) + STEPS_PAGE
            self._transcript_before = end if end < transcript.total else None
        self._load_story(select_last=False, steps=False)

    # -- steps -------------------------------------------------------------------------

    def _show_steps(self, page: StepPage, *, select_last: bool, select: int | None) -> None:
        self._step_versions = [step.version for step in page.steps]
        current = self.steps.value
        self._updating = True
        try:
            names = _html.step_names(page, self._fork)
            self.steps.options = list(zip(names, self._step_versions, strict=True))
            self.step_slider.max = max(len(page.steps) - 1, 0)
            self.step_slider.disabled = not page.steps
        finally:
            self._updating = False
        where = "the newest" if not self._step_cursors else "older"
        self.steps_info.value = escape(
            f"{len(page.steps)} of {rendering.plural(page.total, 'step')} ({where})"
            if len(page.steps) < page.total
            else rendering.plural(page.total, "step")
        )
        self._older_cursor = page.older
        self.older_steps.disabled = page.older is None
        self.newer_steps.disabled = not self._step_cursors
        if not page.steps:
            self._detail = None
            self.step_panel.value = panel(_html.message("This branch has no steps yet."))
            self.step_state_panel.value = self.raw_panel.value = ""
            return
        if select is None:
            keep = not select_last and current in self._step_versions
            select = current if keep else self._step_versions[-1]
        self.select_step(select)

    def select_step(self, version: int) -> None:
        """Open the step at ``version`` (or the newest before it) of the selected branch."""
        steps = self._step_versions
        if not steps:
            return
        if version not in steps:
            limit = self._steps_before  # this page holds every step older than it
            if steps[0] <= version and (limit is None or version < limit):
                version = max(v for v in steps if v <= version)
            elif version < steps[0] and self._older_cursor is None:
                version = steps[0]  # before the first step: the first
            else:  # another page holds it: the one whose newest step is at or before it
                self._step_cursors = [None]
                self._steps_before = version + 1
                self._load_story(select_last=True)
                return
        self._updating = True
        try:
            self.steps.value = version
            self.step_slider.value = self._step_versions.index(version)
        finally:
            self._updating = False
        self._open_step(version)

    def _open_step(self, version: int) -> None:
        try:
            self._detail = story.step_detail(self._db(), self.branch.value, version)
        except rewinddb.RewindError as error:
            self._detail = None
            self.step_panel.value = _html.message(str(error), error=True)
            self.step_state_panel.value = self.raw_panel.value = ""
            return
        hidden = self._detail.hidden_count
        self._updating = True
        try:
            self.show_hidden.disabled = hidden == 0
            if hidden == 0:
                self.show_hidden.value = False
        finally:
            self._updating = False
        self._render_step()

    def _render_step(self) -> None:
        detail = self._detail
        if detail is None:
            return
        hidden = detail.hidden_count
        self.show_hidden.description = (
            f"hide {hidden} hidden" if self.show_hidden.value else f"show {hidden} hidden"
        )
        self.step_panel.value = panel(
            _html.detail_html(detail, show_hidden=self.show_hidden.value, fork=self._fork)
        )
        self.step_state_panel.value = panel(_html.state_html(detail))
        self.raw_panel.value = panel(_html.raw_html(detail)) if self.show_raw.value else ""

    def page_steps(self, direction: int) -> None:
        """Show the page of steps before (-1) or after (1) the one shown."""
        if direction < 0:
            if self._older_cursor is None:
                return
            self._step_cursors.append(self._steps_before)
            self._steps_before = self._older_cursor
        else:
            if not self._step_cursors:
                return
            self._steps_before = self._step_cursors.pop()
        self._load_story(select_last=True)

    # -- events from the widgets -------------------------------------------------------

    def _on_branch(self, change: dict[str, Any]) -> None:
        if not self._updating:
            self.message.value = ""
            self._load_branch()
            if self._transcript is None and self.tabs.selected_index == CONVERSATION_TAB:
                self.tabs.selected_index = TABS.index("steps")  # nothing to read there

    def _on_step(self, change: dict[str, Any]) -> None:
        if not self._updating and change["new"] is not None:
            self.select_step(change["new"])

    def _on_step_slider(self, change: dict[str, Any]) -> None:
        if not self._updating and self._step_versions:
            self.select_step(self._step_versions[change["new"]])

    def _on_tab(self, change: dict[str, Any]) -> None:
        self.events.shown = False
        if change["new"] == EVENTS_TAB:
            self.events.opened()

    def _on_click(self, trace: Any, points: Any, state: Any) -> None:
        """A click on a dot selects its branch, its event (or the last event before it)
        and its step."""
        if not points.point_inds:
            return
        branch, sequence, version = trace.customdata[points.point_inds[0]]
        if branch != self.branch.value:
            self.branch.value = branch
        self.events.select(sequence, version)
        self.select_step(version)

    # -- the events and compare tabs ------------------------------------------------------

    def show(self, index: int) -> None:
        """Fill the events tab's panels for event ``index`` of the selected branch."""
        self.events.show(index)

    def step(self, delta: int) -> None:
        """Move the event slider by ``delta`` events (the ◀ ▶ buttons)."""
        self.events.step(delta)

    def compare(self) -> None:
        """Compare the compare tab's two points (``branch@version``) as attempts."""
        self.compare_tab.compare()

    # -- live --------------------------------------------------------------------------

    def _poll(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                if self._db().version != self._seen_version:
                    self.refresh()
            except rewinddb.RewindError:
                return  # closed: stop following

    def close(self) -> None:
        """Stop following, close the database if ``explore`` opened it, remove the widget."""
        self._stop.set()
        if self._owns_db and self.db is not None:
            self.db.close()
        super().close()

    def _db(self) -> rewinddb.Database:
        assert self.db is not None
        return self.db


def explore(
    db: rewinddb.Database | str | os.PathLike[str],
    *,
    branch: str | None = None,
    live: bool = False,
    poll_interval: float = 1.0,
    all_branches: bool = False,
) -> Explorer:
    """The explorer widget for ``db`` (an open database or a path, opened read-only).

    ``branch`` selects the branch to start on; ``live=True`` follows new events appended
    by this or another process; ``all_branches=True`` lists integrations' internal
    branches (LangGraph's index) and an empty ``default`` too. Problems (not a database,
    no such branch, a branch that cannot be decoded) are shown in the widget, not raised.
    """
    options = {"branch": branch, "live": live, "poll_interval": poll_interval}
    if isinstance(db, rewinddb.Database):
        return Explorer(db, all_branches=all_branches, **options)  # type: ignore[arg-type]
    try:
        opened = rewinddb.open(db, readonly=True, create=False)
    except rewinddb.RewindError as error:
        return Explorer(None, problem=f"cannot open {os.fspath(db)!r}: {error}")
    return Explorer(opened, owns_db=True, all_branches=all_branches, **options)  # type: ignore[arg-type]


def show_diff(
    db: rewinddb.Database,
    a: str,
    b: str,
    *,
    as_of_a: int | None = None,
    as_of_b: int | None = None,
) -> widgets.HTML:
    """One diff, inline: ``show_diff(db, "run-1", "run-2")``, told as ``b``'s presenter
    tells it (a LangGraph thread's channels by name, values decoded, bookkeeping
    folded), as the web explorer's compare page shows it. ``a`` and ``b`` are branches
    or attempts by their titles, as ``rewinddb story`` lists them (a thread id)."""
    try:
        a, b = story_text.branch_named(db, a), story_text.branch_named(db, b)
        diff = db.diff(a, b, as_of_a=as_of_a, as_of_b=as_of_b, readable=True)
        return widgets.HTML(panel(_html.diff_html(db, diff)))
    except rewinddb.RewindError as error:
        return widgets.HTML(_html.message(str(error), error=True))
