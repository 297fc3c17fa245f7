"""Write ``saver_layout_1.sqlite3`` and ``saver_layout_1.json``: a database as the saver
wrote it before it kept trigger channels in the checkpoint record (layout 1: a key per
channel, the namespace record rewritten on every checkpoint, 32-digit versions with a
random part), and what LangGraph showed of its threads then.

Run it with a rewinddb of that layout (commit a760a67 or earlier) on the path, from the
repository root: ``PYTHONPATH=<that rewinddb>:tests/helpers python
tests/integrations/data/make_saver_layout_1.py``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
from pathlib import Path

from layout_graphs import history, write_threads

from rewinddb.integrations.langgraph import RewindSaver

HERE = Path(__file__).parent


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        with RewindSaver.from_path(Path(scratch) / "agent") as saver:
            write_threads(saver)
            shown = {thread_id: history(saver, thread_id) for thread_id in ("chat", "approve")}
        source = sqlite3.connect(Path(scratch) / "agent" / "rewind.sqlite3")
        target = HERE / "saver_layout_1.sqlite3"
        target.unlink(missing_ok=True)
        source.execute("VACUUM INTO ?", (str(target),))
        source.close()
    (HERE / "saver_layout_1.json").write_text(json.dumps(shown, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
