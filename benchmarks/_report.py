"""What the benchmark scripts share: the table of figures, the number formats, timing.

The scripts are run as ``python benchmarks/X.py``, so this folder is on ``sys.path`` and
they ``import _report``. Nothing here measures anything by itself.
"""

from __future__ import annotations

import gc
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

KIB = 1024
MIB = 1024 * KIB


# -- the table -------------------------------------------------------------------


def table(
    header: tuple[str, ...],
    groups: Sequence[tuple[str | None, Sequence[tuple[str, ...]]]],
    numbers: int,
) -> list[str]:
    """Lines of a table: the first column left-aligned, the next ``numbers`` columns
    right-aligned, the others left-aligned; each group of lines under its title (None:
    no title line), a rule under the header and under the last line."""
    lines = [cells for _, cells_list in groups for cells in cells_list]
    widths = [max(len(cell) for cell in column) for column in zip(header, *lines, strict=True)]
    rule = "  ".join("-" * width for width in widths)

    def fmt(cells: tuple[str, ...]) -> str:
        first, *rest = cells
        right = [
            cell.rjust(width)
            for cell, width in zip(rest[:numbers], widths[1 : numbers + 1], strict=True)
        ]
        left = [
            cell.ljust(width)
            for cell, width in zip(rest[numbers:], widths[numbers + 1 :], strict=True)
        ]
        return "  ".join([first.ljust(widths[0]), *right, *left]).rstrip()

    out = [fmt(header), rule]
    for title, cells_list in groups:
        if title is not None:
            out.append(title)
        out.extend(fmt(cells) for cells in cells_list)
    out.append(rule)
    return out


@dataclass(frozen=True)
class Target:
    """A bound a figure must meet: ``op`` is ``<``, ``<=`` or ``>=``."""

    op: str
    limit: float
    shown: str

    def met(self, value: float) -> bool:
        if self.op == "<":
            return value < self.limit
        if self.op == "<=":
            return value <= self.limit
        return value >= self.limit


@dataclass(frozen=True)
class Row:
    """One line of the table. The target applies to ``checked``, or else to ``ratio``."""

    figure: str
    value: str
    baseline: str = ""
    ratio: float | None = None
    target: Target | None = None
    checked: float | None = None

    @property
    def verdict(self) -> str:
        if self.target is None:
            return "info"
        subject = self.ratio if self.checked is None else self.checked
        if subject is None:
            return "?"
        return "PASS" if self.target.met(subject) else "FAIL"

    def cells(self) -> tuple[str, ...]:
        return (
            f"  {self.figure}",
            self.value,
            self.baseline,
            "" if self.ratio is None else f"{self.ratio:.2f}",
            self.target.shown if self.target else "",
            self.verdict,
        )


@dataclass
class Report:
    """The rows of the table, grouped in sections, and notes printed under it."""

    sections: list[tuple[str, list[Row]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def section(self, title: str) -> None:
        self.sections.append((title, []))

    def add(self, row: Row) -> None:
        self.sections[-1][1].append(row)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def rows(self) -> list[Row]:
        return [row for _, rows in self.sections for row in rows]

    def render(self) -> str:
        header = ("figure", "rewinddb", "baseline", "ratio", "target", "result")
        groups = [(title, [row.cells() for row in rows]) for title, rows in self.sections]
        out = table(header, groups, numbers=3)
        verdicts = [row.verdict for row in self.rows()]
        out.append(
            f"{verdicts.count('PASS')} PASS, {verdicts.count('FAIL')} FAIL, "
            f"{verdicts.count('info')} info.  ratio = rewinddb / baseline "
            "(times: lower is better; rates: higher is better)"
        )
        if self.notes:
            out.append("")
            out.extend(f"note: {text}" for text in self.notes)
        return "\n".join(out)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us"


def rate(per_second: float) -> str:
    return f"{per_second:,.0f} /s"


def size(nbytes: float) -> str:
    if nbytes >= MIB:
        return f"{nbytes / MIB:.2f} MiB"
    return f"{nbytes / KIB:.1f} KiB"


# -- timing ----------------------------------------------------------------------


@contextmanager
def gc_paused() -> Iterator[None]:
    """Collect now, then keep the garbage collector out of the timed code."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def timed(fn: Callable[[], Any]) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def samples(calls: int, *fns: Callable[[], Any], warmup: bool = False) -> list[list[float]]:
    """The seconds of each call of each function, calling them in turn ``calls`` times
    (with ``warmup``, each called once, untimed, first). The order of the turn reverses
    every round: a call can slow the one right after it (a database server finishing the
    previous commit on a shared core), which must not always fall on the same side."""
    if warmup:
        for fn in fns:
            fn()
    taken: list[list[float]] = [[] for _ in fns]
    turn = list(zip(taken, fns, strict=True))
    with gc_paused():
        for _ in range(calls):
            for sample, fn in turn:
                sample.append(timed(fn))
            turn.reverse()
    return taken


def interleaved(calls: int, *fns: Callable[[], Any]) -> list[float]:
    """The median seconds per call of each function, calling them in turn ``calls`` times."""
    return [statistics.median(sample) for sample in samples(calls, *fns)]


def repeated(repeats: int, *fns: Callable[[], float]) -> list[float]:
    """The median of each measuring function's result over ``repeats`` interleaved runs."""
    taken: list[list[float]] = [[] for _ in fns]
    turn = list(zip(taken, fns, strict=True))
    for _ in range(repeats):
        for sample, fn in turn:
            with gc_paused():
                sample.append(fn())
        turn.reverse()  # as in ``samples``: no side always runs right after the other
    return [statistics.median(sample) for sample in taken]


def expect(actual: Any, expected: Any, what: str) -> None:
    """Refuse to time a read that does not return what it should."""
    if actual != expected:
        raise RuntimeError(f"{what}: expected {expected!r}, got {actual!r}")


# -- the lines above the table ---------------------------------------------------


def load_average() -> str:
    """The 1-minute load average at the start (a busy machine slows every figure)."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:  # not available on this platform
        return "unknown"


def python_version() -> str:
    return f"{platform.python_version()} ({platform.python_implementation()})"


def describe_machine(argv: list[str], *facts: tuple[str, str], machine: str = "") -> str:
    """The command, ``facts`` ((name, value): versions, the server...), and the machine
    the figures were measured on (``machine`` is appended to its line)."""
    command = shlex.join([os.path.relpath(sys.executable), *argv])
    cpus = f"{platform.platform()}, {os.cpu_count()} CPUs, load {load_average()}{machine}"
    lines = [("command", command), *facts, ("machine", cpus)]
    return "\n".join(f"{name + ':':<10}{value}" for name, value in lines)
