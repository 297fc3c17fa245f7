"""The README quickstart: one attempt on its own branch, rewound event by event, merged.

Usage: python examples/quickstart.py [DIRECTORY]   (default: a new temporary directory)
"""

import sys
import tempfile

import rewinddb

path = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="rewinddb-") + "/agent"

with rewinddb.open(path) as db:  # a directory, created if missing; SQLite inside (WAL)
    db.kv.put("task", "reduce risk")
    db.json.set("portfolio", "$", {"stocks": 60, "bonds": 40})
    db.branches.fork("default", "run-1")  # O(1): copies nothing
    work = db.at(branch="run-1")  # a view; same primitives, scoped to the branch
    work.events.append("tool.call", {"tool": "read", "key": "portfolio"})
    work.json.set("portfolio", "$.stocks", 20)
    work.events.append("run.end", {"score": 90})
    for item in work.events.list():  # each item has .event and the .version it was appended at
        print(
            item.event.sequence,
            item.event.event_type,
            work.json.get("portfolio", as_of=item.version),
        )
    print(db.diff("default", "run-1"))
    receipt = db.branches.merge("run-1", "default")
    print(receipt)
    print("portfolio on default:", db.json.get("portfolio"))

print(f"\nThe database is in {path}; look at it with:\n  rewinddb log {path} --branch run-1")
