"""The ``rewinddb`` command: look at a database's branches, logs, state and diffs, move
its history between databases (``export`` / ``import``), and bound or erase it
(``gc``, ``retain``, ``pin`` / ``unpin``, ``delete``).

The viewing commands open the database read-only and take ``--json`` for machine output;
the commands that change a database never create one (a mistyped path is an error).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import socket
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

import orjson

from ._engine import DEFAULT_BRANCH
from ._values import jsonable
from .database import Database
from .database import open as open_database
from .diff import Diff
from .errors import CorruptDatabaseError, InvalidInputError, RewindError
from .presenters import Presenter, readable, to_dict
from .progress import Progress
from .retention import GcReport, RetentionPolicy
from .transfer import TransferCounts


def _as_of(text: str | None) -> int | datetime | None:
    """``--as-of``: a version number or an ISO 8601 datetime with a timezone."""
    if text is None:
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a version number nor an ISO datetime"
        ) from None
    if when.tzinfo is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no timezone: add one, as in {text}Z (UTC) or {text}+02:00"
        )
    return when


def _dump(data: Any) -> None:
    def default(value: Any) -> Any:
        if isinstance(value, bytes):
            return jsonable(value)
        raise TypeError

    sys.stdout.write(
        orjson.dumps(
            data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS, default=default
        ).decode()
    )
    sys.stdout.write("\n")


def _text(value: Any) -> str:
    """A value for people: serde encodings decoded (``rewinddb.presenters.readable``)."""
    value = readable(value)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def cmd_branches(args: argparse.Namespace) -> None:
    with open_database(args.path, readonly=True) as db:
        branches = db.branches.list()
        if args.json:
            _dump([branch.to_dict() for branch in branches])
            return
        print(f"{'branch':20} {'parent':12} {'forked at':>9} {'head':>6} {'commits':>7}  created")
        for b in branches:
            print(
                f"{b.name:20} {b.parent or '-':12} {b.forked_at:>9} {b.head:>6} {b.commits:>7}"
                f"  {b.created_at.isoformat(timespec='seconds')}"
                + (f"  (history kept from {b.kept_from})" if b.kept_from is not None else "")
            )


def _branch_named(db: Database, name: str) -> str:
    """The branch a command's argument names (``story_text.branch_named``)."""
    from . import story_text

    return story_text.branch_named(db, name)


def cmd_log(args: argparse.Namespace) -> None:
    with open_database(args.path, readonly=True) as db:
        branch = _branch_named(db, DEFAULT_BRANCH if args.branch is None else args.branch)
        events = db.at(branch).events
        items = events.list(as_of=args.as_of, event_type=args.type, limit=args.limit)
        if args.json:
            _dump([item.event.to_dict() for item in items])
            return
        if (
            not items
            and args.branch is None
            and events.length() == 0
            and len(db.branches.names()) > 1
        ):
            print(
                f"branch {DEFAULT_BRANCH!r} has no events; name another with --branch "
                "(`rewinddb story PATH` lists the attempts, `rewinddb branches PATH` the branches)",
                file=sys.stderr,
            )
        for item in items:
            event = item.event
            print(
                f"seq {event.sequence:<5} v{event.version:<6} {event.event_type:16} "
                + (
                    f"[erased at version {event.erased_at}]"
                    if event.erased_at is not None
                    else _text(event.payload)
                )
            )


def cmd_story(args: argparse.Namespace) -> None:
    from . import story, story_text

    with open_database(args.path, readonly=True) as db:
        if args.attempt is None:
            attempts = story.attempts(db, include_internal=args.all)
            if args.json:
                _dump([to_dict(attempt) for attempt in attempts])
                return
            lines = story_text.attempts_lines(attempts)
        else:
            told = story.branch_story(db, story_text.attempt_branch(db, args.attempt))
            if args.json:
                _dump(to_dict(told))
                return
            lines = story_text.story_lines(told, story_text.current_title(db, told))
        for line in lines:
            print(line)


def cmd_show(args: argparse.Namespace) -> None:
    with open_database(args.path, readonly=True) as db:
        branch = _branch_named(db, args.branch)
        view = db.at(branch)
        snapshot = view.snapshot(as_of=args.as_of)
        snapshot["branch"] = branch
        snapshot["events"] = view.events.length(as_of=snapshot["version"])
        if args.json:
            _dump(snapshot)
            return
        print(f"branch {branch} at version {snapshot['version']}")
        for space in ("kv", "json", "state"):
            print(f"[{space}]")
            for key, value in snapshot[space].items():
                print(f"  {key} = {_text(value)}")
        print(f"[events] {snapshot['events']}")


def cmd_diff(args: argparse.Namespace) -> None:
    with open_database(args.path, readonly=True) as db:
        # Text is for people (serde encodings decoded); JSON keeps the stored values.
        a, b = _branch_named(db, args.a), _branch_named(db, args.b)
        diff = db.diff(a, b, as_of_a=args.as_of_a, as_of_b=args.as_of_b, readable=not args.json)
        if args.json:
            _dump(diff.to_dict())
            return
        lines = None
        if not args.stored:
            try:
                lines = _told_diff(db, diff, a, b)
            except CorruptDatabaseError:  # what tells it is damaged, not the diff itself
                lines = None
        for line in lines if lines is not None else [diff.to_text()]:
            print(line)


def _told_diff(db: Database, diff: Diff, a: str, b: str) -> list[str] | None:
    """``diff``'s lines as the two branches' presenter tells them (``+ messages[1]:
    human: Porto``), or None when no presenter but the store's own tells both."""
    from . import story, story_text

    teller, other = story.presenter_of(db, b), story.presenter_of(db, a)
    if teller.name != other.name or teller.name == Presenter.name:
        return None
    headers = (
        story_text.point_label(db, other, diff.a, other.summary(db, db.branches.get(a)).title),
        story_text.point_label(db, teller, diff.b, teller.summary(db, db.branches.get(b)).title),
    )
    rows = story.diff_rows(db, teller, diff)
    return list(story_text.diff_lines(diff, rows, headers, teller))


def cmd_export(args: argparse.Namespace) -> None:
    with open_database(args.path, readonly=True) as db:
        for name in args.branch or ():
            db.branches.get(name)  # an unknown branch fails before the file is created
        progress = Progress("exporting", 0, "records")
        if args.output == "-":
            counts = db.export_jsonl(sys.stdout.buffer, branches=args.branch, progress=progress)
        else:
            with open(args.output, "wb") as out:
                counts = db.export_jsonl(out, branches=args.branch, progress=progress)
        print(f"exported {counts}", file=sys.stderr)


def cmd_import(args: argparse.Namespace) -> None:
    # A URL goes to rewinddb.open as it is; a directory is removed again if the import
    # that created it fails.
    directory = None if "://" in args.path else Path(args.path)
    existed = directory is None or directory.exists()
    try:
        if args.file == "-":
            counts = _import(args.path, sys.stdin.buffer, 0)
        else:
            with open(args.file, "rb") as source:
                counts = _import(args.path, source, os.fstat(source.fileno()).st_size)
    except BaseException:
        if directory is not None and not existed and directory.exists():
            shutil.rmtree(directory)  # a failed import leaves no empty database behind
        raise
    print(f"imported {counts} into {args.path}", file=sys.stderr)


def _import(target: str, source: IO[bytes], size: int) -> TransferCounts:
    with open_database(target) as db:
        return db.import_jsonl(source, progress=Progress("importing", size, "bytes"))


# -- retention and erasure ---------------------------------------------------------------

_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def _duration(text: str) -> timedelta:
    """``--max-age``: a positive whole number and a unit, ``30d``, ``12h``, ``90m``, ``3600s``."""
    match = re.fullmatch(r"\s*(-?\d+)\s*([dhms])\s*", text)
    if match is None:
        raise InvalidInputError(
            f"--max-age {text!r} is not a duration: give a whole number and a unit "
            "(d, h, m or s), as in 30d, 12h, 90m or 3600s",
            code="invalid.retention",
        )
    amount = int(match.group(1))
    if amount <= 0:
        raise InvalidInputError(
            f"--max-age {text!r} must be more than zero (a negative age is in the future)",
            code="invalid.retention",
        )
    return timedelta(seconds=amount * _UNITS[match.group(2)])


def _age(age: timedelta | None) -> str:
    """A policy's ``max_age`` in the unit ``--max-age`` would take it in."""
    if age is None:
        return "-"
    seconds = int(age.total_seconds())
    if seconds != age.total_seconds():
        return f"{age.total_seconds():g}s"
    unit = next(unit for unit, size in _UNITS.items() if seconds % size == 0)
    return f"{seconds // _UNITS[unit]}{unit}"


def _policy_dict(policy: RetentionPolicy) -> dict[str, Any]:
    return {
        "pattern": policy.pattern,
        "keep_last": policy.keep_last,
        "max_age": None if policy.max_age is None else policy.max_age.total_seconds(),
        "keep_pinned": policy.keep_pinned,
    }


def _policy_text(policy: RetentionPolicy) -> str:
    terms = []
    if policy.keep_last is not None:
        terms.append(f"the last {policy.keep_last:,} versions")
    if policy.max_age is not None:
        terms.append(f"versions younger than {_age(policy.max_age)}")
    pinned = "pinned branches kept whole" if policy.keep_pinned else "pinned branches included"
    return f"{policy.pattern!r}: keep {' and '.join(terms)}; {pinned}"


def _gc_dict(report: GcReport) -> dict[str, Any]:
    data = dataclasses.asdict(report)
    data["longest_step_ms"] = round(report.longest_step * 1000, 3)
    return data


def cmd_gc(args: argparse.Namespace) -> None:
    """Apply the retention policies, purge deleted branches, give the space back."""
    with open_database(args.path, create=False) as db:
        report = db.gc(dry_run=args.dry_run, vacuum=args.vacuum)
    if args.json:
        _dump(_gc_dict(report))
        return
    print(f"{report}; longest write-lock step {report.longest_step * 1000:.1f} ms")
    kept = "would keep" if report.dry_run else "keeps"
    for name, version in sorted(report.horizons.items()):
        print(f"  {name}: {kept} its history from version {version}")
    if report.dry_run:
        print("dry run: nothing was changed; run it without --dry-run to free this")


def cmd_retain(args: argparse.Namespace) -> None:
    """Set, list or drop the retention policies."""
    terms = args.keep_last is not None or args.max_age is not None or args.include_pinned
    if args.list:
        if args.pattern is not None or terms:
            args.parser.error("--list takes no pattern and no terms")
    elif args.pattern is None:
        args.parser.error("give a PATTERN (or --list)")
    elif args.drop and terms:
        args.parser.error("--drop takes a pattern only")
    # Check the terms before opening: a bad one never touches the database.
    max_age = None if args.max_age is None else _duration(args.max_age)
    if not args.list and not args.drop:
        if args.keep_last is None and max_age is None:
            raise InvalidInputError(
                "give --keep-last N, --max-age AGE or both (a policy that keeps everything "
                "does nothing); --list lists the policies, --drop removes one",
                code="invalid.retention",
            )
        if args.keep_last is not None and args.keep_last < 1:
            raise InvalidInputError(
                f"--keep-last must be at least 1, not {args.keep_last}",
                code="invalid.retention",
            )
    with open_database(args.path, create=False, readonly=args.list) as db:
        if args.list:
            found = db.retention()
            if args.json:
                _dump([_policy_dict(policy) for policy in found])
            elif not found:
                print("no retention policies (set one: rewinddb retain PATH PATTERN --keep-last N)")
            else:
                print(f"{'pattern':20} {'keep last':>9} {'max age':>8}  pinned branches")
                for policy in found:
                    keep = "-" if policy.keep_last is None else str(policy.keep_last)
                    pinned = "kept whole" if policy.keep_pinned else "included"
                    print(f"{policy.pattern:20} {keep:>9} {_age(policy.max_age):>8}  {pinned}")
            return
        if args.drop:
            if not db.drop_retention(args.pattern):
                raise InvalidInputError(
                    f"there is no retention policy for {args.pattern!r}; "
                    f"`rewinddb retain {args.path} --list` lists them",
                    code="invalid.retention",
                )
            if args.json:
                _dump({"dropped": args.pattern})
            else:
                print(f"dropped the retention policy for {args.pattern!r}")
            return
        policy = db.retain(
            args.pattern,
            keep_last=args.keep_last,
            max_age=max_age,
            keep_pinned=not args.include_pinned,
        )
    if args.json:
        _dump(_policy_dict(policy))
    else:
        print(f"retain {_policy_text(policy)}")
        print(f"applied by the next gc (rewinddb gc {args.path} --dry-run shows what it frees)")


def cmd_pin(args: argparse.Namespace) -> None:
    with open_database(args.path, create=False) as db:
        if args.unpin:
            db.branches.unpin(args.branch)
        else:
            db.branches.pin(args.branch)
        pinned = db.branches.pinned()
    if args.json:
        _dump({"branch": args.branch, "pinned": args.branch in pinned, "all_pinned": pinned})
    elif args.unpin:
        print(f"unpinned {args.branch!r}")
    else:
        print(f"pinned {args.branch!r}: it cannot be deleted, and retention keeps it whole")


def cmd_delete(args: argparse.Namespace) -> None:
    with open_database(args.path, create=False) as db:
        receipt = db.branches.delete(args.branch, purge=args.purge)
    if args.json:
        _dump(
            {
                "branch": args.branch,
                "purged": receipt is not None,
                "removed": None if receipt is None else dataclasses.asdict(receipt),
            }
        )
    elif receipt is None:
        print(
            f"deleted {args.branch!r}; its rows stay until `rewinddb gc {args.path}` "
            "(or delete --purge) removes them"
        )
    else:
        print(f"deleted and purged {args.branch!r}: {receipt}")


def _web() -> Any:
    """The web explorer's module; a clear error when the ``[web]`` extra is missing."""
    try:
        from . import web
    except ImportError as error:
        raise RewindError(
            f'the web explorer needs its extra: pip install "rewinddb[web]" ({error})',
            code="missing.dependency",
        ) from None
    return web


def _serve(path: str | Path, args: argparse.Namespace) -> None:
    """Run the explorer on ``path`` until Ctrl-C."""
    web = _web()
    import uvicorn

    app = web.create_app(
        path,
        allow_writes=args.allow_writes,
        allowed_hosts=[args.host, *(args.allow_host or ())],
        read_connections=args.read_connections,
    )
    listening = _listen(args.host, args.port)
    port = listening.getsockname()[1]  # (the one the system chose, for --port 0)
    mode = "read-write" if args.allow_writes else "read-only"
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"rewinddb explorer ({mode}) for {path}: http://{host}:{port}/", flush=True)
    names = ", ".join(sorted(app.state.allowed_hosts))
    print(f"answers only for the hosts {names} (more: --allow-host NAME)", flush=True)
    if args.host in ("0.0.0.0", "::"):
        print("on every interface: reach it by a name or address given with --allow-host")
    print("press Ctrl-C to stop", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host`` and ``port``, before anything is announced: a port in
    use or a host that is not this machine's says so, and the explorer never starts."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        listening = socket.socket(family, socket.SOCK_STREAM)
    except OSError as error:
        raise OSError(error.errno, f"cannot listen on {host}: {error.strerror}") from None
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
    except OSError as error:
        listening.close()
        raise OSError(
            error.errno, f"cannot listen on {host} port {port}: {error.strerror}"
        ) from None
    return listening


def _port(text: str) -> int:
    """``--port``: a TCP port number (0: one the system picks)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0 to 65535)")
    return port


def cmd_serve(args: argparse.Namespace) -> None:
    _serve(args.path, args)


def cmd_demo(args: argparse.Namespace) -> None:
    from .demo import build_demo

    target = args.path
    try:
        build_demo(target).close()
        print(f"built a demo database in {target}", flush=True)
    except RewindError as error:
        if error.code != "demo.exists":
            raise
        print(f"using the demo database already in {target}", flush=True)
    if not args.no_serve:
        _serve(target, args)


def cmd_migrate(args: argparse.Namespace) -> None:
    """Bring a database's schema up to this rewinddb's (``open`` does it too)."""
    with open_database(args.path, create=False) as db:
        before, after = db._engine.conn.schema_migrated
    if args.json:
        _dump({"from": before, "to": after})
    elif before == after:
        print(f"{args.path}: schema {after}, up to date")
    else:
        print(f"{args.path}: schema {before} -> {after}")


def cmd_verify(args: argparse.Namespace) -> int:
    """Check the whole history; exit status 1 when anything is wrong."""
    with open_database(args.path, create=False) as db:
        report = db.verify()
    if args.json:
        _dump(
            {
                "ok": report.ok,
                "checked": report.checked,
                "branches": [
                    {
                        "branch": check.branch,
                        "ok": check.ok,
                        "first_bad": None if check.ok else str(check.first_bad),
                    }
                    for check in report.branches
                ],
                "problems": [str(problem) for problem in report.problems],
            }
        )
    else:
        print(report)
    return 0 if report.ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rewinddb",
        description="Inspect a rewinddb database (read-only), serve the web explorer on it, "
        "move its history between databases (export / import), or bound and erase it "
        "(gc, retain, pin, unpin, delete).",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str, handler: Any) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("path", help="the database directory, or a postgresql:// URL")
        sub.add_argument("--json", action="store_true", help="print JSON")
        sub.set_defaults(handler=handler)
        return sub

    command("branches", "List the branches.", cmd_branches)

    log = command("log", "List a branch's events with their versions.", cmd_log)
    log.add_argument("--branch", help="a branch or an attempt's title (default: default)")
    log.add_argument("--as-of", type=_as_of, help="a version or an ISO datetime")
    log.add_argument("--type", help="only events of this type")
    log.add_argument("--limit", type=int)

    told = command(
        "story",
        "The attempts as the explorer tells them (title, status, where each came from, "
        "how it ended); with ATTEMPT, its conversation and steps.",
        cmd_story,
    )
    told.add_argument(
        "attempt", nargs="?", help="a branch, or an attempt's title (a LangGraph thread id)"
    )
    told.add_argument("--all", action="store_true", help="also the internal branches")

    show = command("show", "Show all state of a branch (as of a version).", cmd_show)
    show.add_argument(
        "--branch", default="default", help="a branch or an attempt's title (a thread id)"
    )
    show.add_argument("--as-of", type=_as_of, help="a version or an ISO datetime")

    diff = command("diff", "Diff two branches (or two versions of one).", cmd_diff)
    diff.add_argument("a", help="the branch (or attempt's title) to diff from")
    diff.add_argument("b", help="the branch (or attempt's title) to diff to")
    diff.add_argument("--as-of-a", type=_as_of, help="version (or datetime) of A")
    diff.add_argument("--as-of-b", type=_as_of, help="version (or datetime) of B")
    diff.add_argument(
        "--stored",
        action="store_true",
        help="the store's own diff (keys and stored paths, bookkeeping included), not the "
        "branches' presenter's (a LangGraph thread's channels and messages)",
    )
    export = commands.add_parser(
        "export",
        help="Write the history as JSON Lines (to stdout by default).",
        description="Write the history as JSON Lines: branches, commits, values and events.",
    )
    export.add_argument("path", help="the database directory, or a postgresql:// URL")
    export.add_argument("--branch", action="append", help="only this branch (repeatable)")
    export.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    export.set_defaults(handler=cmd_export)

    load = commands.add_parser(
        "import",
        help="Rebuild an exported history in a new database.",
        description="Rebuild an exported history in a database with no history yet.",
    )
    load.add_argument(
        "path", help="the database directory (created if missing), or a postgresql:// URL"
    )
    load.add_argument("file", help="the .jsonl export ('-' for stdin)")
    load.set_defaults(handler=cmd_import)

    command(
        "migrate",
        "Bring the database's schema up to this rewinddb's (opening it writable does too).",
        cmd_migrate,
    )
    command(
        "verify",
        "Check the whole history (lineage, commit and event hash chains, list items); "
        "exit 1 and name each branch's first bad point if anything is wrong.",
        cmd_verify,
    )

    gc = command(
        "gc",
        "Apply the retention policies, remove the rows of deleted branches and give the "
        "space back, in short write transactions (agents may write meanwhile).",
        cmd_gc,
    )
    gc.add_argument(
        "--dry-run",
        action="store_true",
        help="change nothing; report exactly what a run would free",
    )
    gc.add_argument(
        "--vacuum",
        action="store_true",
        help="also rewrite the whole file (one long step; shrinks files made before schema 8)",
    )

    retain = command(
        "retain",
        "Set the retention policy of the branches matching PATTERN (applied by gc), "
        "list the policies (--list) or drop one (--drop).",
        cmd_retain,
    )
    retain.add_argument("pattern", nargs="?", help="a glob of branch names, such as 'lg/*'")
    retain.add_argument(
        "--keep-last", type=int, metavar="N", help="keep each branch's newest N versions"
    )
    retain.add_argument(
        "--max-age",
        metavar="AGE",
        help="keep versions younger than this: 30d, 12h, 90m or 3600s",
    )
    retain.add_argument(
        "--include-pinned",
        action="store_true",
        help="prune pinned branches too (by default a policy keeps them whole)",
    )
    which = retain.add_mutually_exclusive_group()
    which.add_argument("--list", action="store_true", help="list the policies")
    which.add_argument("--drop", action="store_true", help="remove PATTERN's policy")
    retain.set_defaults(parser=retain)

    pin = command(
        "pin",
        "Pin a branch: it cannot be deleted, and retention policies keep its whole history.",
        cmd_pin,
    )
    pin.add_argument("branch")
    pin.set_defaults(unpin=False)
    unpin = command("unpin", "Undo pin (nothing happens if it is not pinned).", cmd_pin)
    unpin.add_argument("branch")
    unpin.set_defaults(unpin=True)

    delete = command(
        "delete",
        "Delete a branch (not default, not a pinned one): its reads then fail. Its rows stay "
        "until gc, or go now with --purge; what its forks inherited stays.",
        cmd_delete,
    )
    delete.add_argument("branch")
    delete.add_argument(
        "--purge",
        action="store_true",
        help="remove its rows (and its deleted descendants') now, from the file too",
    )

    def web_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1 (this machine)")
        sub.add_argument(
            "--port", type=_port, default=8000, help="default: 8000 (0: any free port)"
        )
        sub.add_argument(
            "--allow-writes",
            action="store_true",
            help="open the database read-write and allow fork and merge from the pages",
        )
        sub.add_argument(
            "--allow-host",
            action="append",
            metavar="NAME",
            help="also answer requests for this host name (repeatable; any port). "
            "127.0.0.1, localhost, [::1] and the --host value always are; other names "
            "are refused (421), which stops DNS rebinding",
        )
        sub.add_argument(
            "--read-connections",
            type=int,
            metavar="N",
            help="read-only database connections the pages read from at once "
            "(default: 1 on a directory, 4 on a postgresql:// URL)",
        )

    serve = commands.add_parser(
        "serve",
        help="Serve the web explorer for a database.",
        description="Serve the web explorer (read-only unless --allow-writes).",
    )
    serve.add_argument("path", help="the database directory")
    web_options(serve)
    serve.set_defaults(handler=cmd_serve)

    demo = commands.add_parser(
        "demo",
        help="Build a demo database and serve it.",
        description="Build a demo database (three attempts at a task, a longer run with a "
        "fork of a fork and a merge) and serve the web explorer on it.",
    )
    demo.add_argument("path", nargs="?", default="rewinddb-demo", help="default: ./rewinddb-demo")
    demo.add_argument("--no-serve", action="store_true", help="build the database only")
    web_options(demo)
    demo.set_defaults(handler=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status = args.handler(args)
    except RewindError as error:
        print(f"rewinddb: error: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        if isinstance(error, BrokenPipeError):  # the reader went away (``| head``)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        print(f"rewinddb: error: {error}", file=sys.stderr)
        return 1
    return int(status or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
