# The seed tutorial's "Now rewind", with only its import changed.
# Run examples/agent_attempts.py first, in the same directory.
import rewinddb as stratadb

with stratadb.open("./agent") as db:
    run = db.at(branch="run-2")
    for item in run.events.list():
        e = item.event
        state = run.json.get("portfolio", as_of=item.version)
        print(f"seq {e.sequence}  {e.event_type:10}  portfolio was {state}")
