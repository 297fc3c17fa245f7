"""The ``rewinddb`` command: look at a database's branches, logs, state and diffs, and
move its history between databases (``export`` / ``import``).

The viewing commands open the database read-only and take ``--json`` for machine output.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import orjson

from ._values import jsonable
from .database import open as open_database
from .errors import RewindError
from .presenters import readable
from .progress import Progress
from .transfer import TransferCounts


def _as_of(text: str | None) -> int | datetime | None:
    """``--as-of``: a version number or an ISO 8601 datetime with a timezone."""
    if text is None:
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a version number nor an ISO datetime"
        ) from None


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
            )


def cmd_log(args: argparse.Namespace) -> None:
    with open_database(args.path, readonly=True) as db:
        items = db.at(args.branch).events.list(
            as_of=args.as_of, event_type=args.type, limit=args.limit
        )
        if args.json:
            _dump([item.event.to_dict() for item in items])
            return
        for item in items:
            event = item.event
            print(
                f"seq {event.sequence:<5} v{event.version:<6} {event.event_type:16} "
                f"{_text(event.payload)}"
            )


def cmd_show(args: argparse.Namespace) -> None:
    with open_database(args.path, readonly=True) as db:
        view = db.at(args.branch)
        snapshot = view.snapshot(as_of=args.as_of)
        snapshot["branch"] = args.branch
        snapshot["events"] = view.events.length(as_of=snapshot["version"])
        if args.json:
            _dump(snapshot)
            return
        print(f"branch {args.branch} at version {snapshot['version']}")
        for space in ("kv", "json", "state"):
            print(f"[{space}]")
            for key, value in snapshot[space].items():
                print(f"  {key} = {_text(value)}")
        print(f"[events] {snapshot['events']}")


def cmd_diff(args: argparse.Namespace) -> None:
    with open_database(args.path, readonly=True) as db:
        # Text is for people (serde encodings decoded); JSON keeps the stored values.
        diff = db.diff(
            args.a, args.b, as_of_a=args.as_of_a, as_of_b=args.as_of_b, readable=not args.json
        )
        if args.json:
            _dump(diff.to_dict())
        else:
            print(diff.to_text())


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
    target = Path(args.path)
    existed = target.exists()
    try:
        if args.file == "-":
            counts = _import(target, sys.stdin.buffer, 0)
        else:
            with open(args.file, "rb") as source:
                counts = _import(target, source, os.fstat(source.fileno()).st_size)
    except BaseException:
        if not existed and target.exists():
            shutil.rmtree(target)  # a failed import leaves no empty database behind
        raise
    print(f"imported {counts} into {args.path}", file=sys.stderr)


def _import(target: Path, source: IO[bytes], size: int) -> TransferCounts:
    with open_database(target) as db:
        return db.import_jsonl(source, progress=Progress("importing", size, "bytes"))


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
    mode = "read-write" if args.allow_writes else "read-only"
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"rewinddb explorer ({mode}) for {path}: http://{host}:{args.port}/", flush=True)
    names = ", ".join(sorted(app.state.allowed_hosts))
    print(f"answers only for the hosts {names} (more: --allow-host NAME)", flush=True)
    if args.host in ("0.0.0.0", "::"):
        print("on every interface: reach it by a name or address given with --allow-host")
    print("press Ctrl-C to stop", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


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
        "or move its history between databases (export / import).",
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
    log.add_argument("--branch", default="default")
    log.add_argument("--as-of", type=_as_of, help="a version or an ISO datetime")
    log.add_argument("--type", help="only events of this type")
    log.add_argument("--limit", type=int)

    show = command("show", "Show all state of a branch (as of a version).", cmd_show)
    show.add_argument("--branch", default="default")
    show.add_argument("--as-of", type=_as_of, help="a version or an ISO datetime")

    diff = command("diff", "Diff two branches (or two versions of one).", cmd_diff)
    diff.add_argument("a", help="the branch to diff from")
    diff.add_argument("b", help="the branch to diff to")
    diff.add_argument("--as-of-a", type=_as_of, help="version (or datetime) of A")
    diff.add_argument("--as-of-b", type=_as_of, help="version (or datetime) of B")
    export = commands.add_parser(
        "export",
        help="Write the history as JSON Lines (to stdout by default).",
        description="Write the history as JSON Lines: branches, commits, values and events.",
    )
    export.add_argument("path", help="the database directory")
    export.add_argument("--branch", action="append", help="only this branch (repeatable)")
    export.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    export.set_defaults(handler=cmd_export)

    load = commands.add_parser(
        "import",
        help="Rebuild an exported history in a new database.",
        description="Rebuild an exported history in a database with no history yet.",
    )
    load.add_argument("path", help="the database directory (created if missing)")
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

    def web_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1 (this machine)")
        sub.add_argument("--port", type=int, default=8000, help="default: 8000")
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
            help="read-only database connections the pages read from at once (default: 4)",
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
