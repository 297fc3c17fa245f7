"""Per-message times of the ways RewindSaver's codec can give a stored message back, in one run.

Run from the repository root (the langgraph extra installed)::

    .venv/bin/python benchmarks/langgraph_codec.py [--repeats 7] [--quick]

Every later checkpoint of a thread reads the same messages again, so the saver's
``Decoder`` remembers what each stored item decoded to and makes a new, independent copy
instead of running the serde again. This script times, for each kind of message, the
serde's ``loads_typed`` (what a first read costs) against the public ways to make such a
copy: the ``Decoder`` itself (a copy through the object's own ``__reduce_ex__`` and
``__setstate__``, as ``copy.deepcopy`` makes one), ``pickle.loads`` of a pickled copy,
``copy.deepcopy``, ``model_copy(deep=True)`` and ``model_construct`` given copied field
values. Each is checked to give back an equal message before it is timed. Writing is
timed the same way: the serde's ``dumps_typed`` against the ``Encoder`` recognising a
message it stored before. Figures are medians over ``--repeats`` timings of this process's
CPU time (``time.process_time``, so that other processes sharing the machine do not count),
in microseconds per message and as a ratio to the serde's time.
"""

from __future__ import annotations

import argparse
import copy
import pickle
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from rewinddb.integrations.langgraph._codec import (
    Decoder,
    Encoder,
    _copied,
    _plan,
    dump_item,
)

TEXT = "lorem ipsum dolor sit amet " * 18  # ~490 characters, as in langgraph_savers.py


class Rated(AIMessage):
    """An application's own message class: one more field."""

    rating: int = 0


def messages() -> dict[str, Any]:
    call = {"name": "search", "args": {"query": "hotels", "tags": ["a", "b"]}, "id": "c1"}
    usage = {"input_tokens": 12, "output_tokens": 80, "total_tokens": 92}
    return {
        "human": HumanMessage(content=TEXT, id="h1"),
        "ai+tools": AIMessage(
            content=TEXT,
            id="a1",
            tool_calls=[call],
            response_metadata={"model_name": "m", "finish_reason": "tool_calls"},
            usage_metadata=usage,
        ),
        "tool": ToolMessage(content=TEXT, tool_call_id="c1", id="t1", name="search"),
        "system": SystemMessage(content=TEXT, id="s1"),
        "ai chunk": AIMessageChunk(content=TEXT, id="k1", additional_kwargs={"n": 1}),
        "remove": RemoveMessage(id="h1"),
        "custom": Rated(content=TEXT, id="r1", rating=4),
    }


def same(got: Any, want: Any) -> bool:
    """Equal as a message (type, fields, extra attributes, which fields were set)."""
    return (
        type(got) is type(want)
        and got == want
        and got.model_dump() == want.model_dump()
        and got.model_fields_set == want.model_fields_set
    )


def options(serde: JsonPlusSerializer, message: Any) -> dict[str, Callable[[], Any]]:
    """The ways to give back ``message`` as the serde loads it, each a call to time."""
    typed = serde.dumps_typed(message)
    template = serde.loads_typed(typed)
    stored = dump_item(serde, message)
    decoder = Decoder(serde)
    decoder.item(stored)  # the first read decodes with the serde and remembers
    pickled = pickle.dumps(template, protocol=pickle.HIGHEST_PROTOCOL)
    kind = type(template)
    fields = {name: getattr(template, name) for name in kind.model_fields}
    fields.update(template.model_extra or {})
    plan = _plan(fields)
    fields_set = template.model_fields_set
    return {
        "serde loads_typed": lambda: serde.loads_typed(typed),
        "Decoder, remembered": lambda: decoder.item(stored),
        "pickle.loads": lambda: pickle.loads(pickled),
        "copy.deepcopy": lambda: copy.deepcopy(template),
        "model_copy(deep=True)": lambda: template.model_copy(deep=True),
        "model_construct": lambda: kind.model_construct(
            _fields_set=set(fields_set), **_copied(fields, plan)
        ),
    }


def encoders(serde: JsonPlusSerializer, message: Any) -> dict[str, Callable[[], Any]]:
    encoder = Encoder(serde)
    encoder.item(message)
    return {
        "serde dumps_typed": lambda: dump_item(serde, message),
        "Encoder, remembered": lambda: encoder.item(message),
    }


def median_us(call: Callable[[], Any], number: int, repeats: int) -> float:
    timings = timeit.repeat(call, number=number, repeat=repeats, timer=time.process_time)
    return statistics.median(timings) / number * 1e6


def table(
    title: str,
    made: dict[str, dict[str, Callable[[], Any]]],
    number: int,
    repeats: int,
) -> None:
    kinds = list(made)
    names = list(made[kinds[0]])
    times = {
        (kind, name): median_us(made[kind][name], number, repeats)
        for kind in kinds
        for name in names
    }
    print(title)
    print(f"{'':22} " + " ".join(f"{kind:>14}" for kind in kinds))
    for name in names:
        cells = []
        for kind in kinds:
            base = times[(kind, names[0])]
            cells.append(f"{times[(kind, name)]:6.2f} {times[(kind, name)] / base:5.2f}x")
        print(f"{name:22} " + " ".join(f"{cell:>14}" for cell in cells))
    print()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="timings per figure")
    parser.add_argument("--quick", action="store_true", help="a few calls each (smoke test)")
    args = parser.parse_args(argv)
    number, repeats = (20, 3) if args.quick else (5000, args.repeats)
    serde = JsonPlusSerializer(allowed_msgpack_modules=[(__name__, "Rated")])
    decoding: dict[str, dict[str, Callable[[], Any]]] = {}
    for kind, message in messages().items():
        decoding[kind] = options(serde, message)
        want = serde.loads_typed(serde.dumps_typed(message))
        for name, call in decoding[kind].items():
            if not same(call(), want):
                print(f"{name} does not give back the {kind} message", file=sys.stderr)
                return 1
    encoding = {kind: encoders(serde, message) for kind, message in messages().items()}
    unit = f"CPU us per message and ratio to the serde, medians of {repeats} x {number} calls"
    table(f"Decode ({unit})", decoding, number, repeats)
    table(f"Encode ({unit})", encoding, number, repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
