"""A progress bar on stderr for long exports and imports; silent when not a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``[#########.....]  61%  12,345/20,000 records``, redrawn at most 10 times a second."""

    def __init__(self, label: str, total: int, unit: str, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label, self.total, self.unit = label, max(total, 0), unit
        self.done = 0
        self._drawn = 0.0

    def advance(self, amount: int = 1) -> None:
        self.done += amount
        if self.enabled and time.monotonic() - self._drawn >= 0.1:
            self._draw()

    def _draw(self) -> None:
        self._drawn = time.monotonic()
        fraction = min(self.done / self.total, 1.0) if self.total else 1.0
        bar = "#" * int(fraction * 30)
        self.stream.write(
            f"\r{self.label} [{bar:<30}] {fraction:4.0%}  {self.done:,}/{self.total:,} {self.unit}"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
