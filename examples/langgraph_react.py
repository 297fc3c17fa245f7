"""A ReAct travel agent recorded with ``RewindSaver`` (no network, no API key).

A scripted chat model (langchain_core's ``BaseChatModel``, answering from the
conversation) and a hand-built LangGraph graph: ``agent`` (the model) -> ``tools``
(``ToolNode`` with ``search_flights`` and ``book_hotel``) -> ``agent``, with an
``approve`` step that asks a human (``interrupt``) before a hotel is booked. The run has a
system message, ten human turns, tool calls and results, one interrupt resumed with
``Command(resume=...)``, then time travel: a past tool call is edited with
``update_state`` and the graph re-runs from it, which records a fork branch
``lg/<thread>~xxxxxxxx``. Open the database in the explorer afterwards:

    .venv/bin/python examples/langgraph_react.py [DIRECTORY]
    rewinddb serve DIRECTORY
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from rewinddb.integrations.langgraph import RewindSaver

THREAD_ID = "lisbon-trip"
SYSTEM = "You are a travel assistant. Use the tools to search flights and book hotels."
RESUME = "yes, book it"
EDITED_CITY = "Madrid"

FLIGHTS = {
    "Lisbon": "TP 1231 08:05 from Berlin, 189 EUR; LH 1166 13:40, 214 EUR",
    "Porto": "FR 144 09:30 from Berlin, 79 EUR",
    "Madrid": "IB 3671 07:15 from Berlin, 142 EUR; UX 1508 18:20, 120 EUR",
}

# What the model does for each human turn: a plain answer, or a tool call (then an
# answer built from the tool's result).
TURNS: tuple[tuple[str, str | tuple[str, dict[str, Any]]], ...] = (
    ("Hi! I'm planning a trip to Lisbon in May.", "Lovely choice. How can I help?"),
    ("Which flights go to Lisbon?", ("search_flights", {"city": "Lisbon"})),
    ("What's the weather like there in May?", "Mostly sunny, around 22 °C by day."),
    ("Book the hotel in Lisbon for 3 nights.", ("book_hotel", {"city": "Lisbon", "nights": 3})),
    ("Are there cheaper flights to Porto?", ("search_flights", {"city": "Porto"})),
    ("How long is the train from Porto to Lisbon?", "About three hours on the Alfa Pendular."),
    ("Which neighbourhood is the hotel in?", "Alfama, close to the castle."),
    ("Any restaurant you'd recommend nearby?", "Try a tasca in Alfama for grilled sardines."),
    ("Do I need a visa as an EU citizen?", "No, an EU identity card is enough."),
    ("Thanks, that's all for now.", "Have a wonderful trip to Lisbon!"),
)


@tool
def search_flights(city: str) -> str:
    """Find flights to a city."""
    return FLIGHTS.get(city, f"no flights found to {city}")


@tool
def book_hotel(city: str, nights: int) -> str:
    """Book a hotel room in a city for a number of nights."""
    confirmation = f"{city[:3].upper()}-{nights}"
    return f"Booked Casa Alfama in {city} for {nights} nights, confirmation {confirmation}"


class ScriptedTravelModel(BaseChatModel):
    """A chat model that answers from ``TURNS``: the reply to the last human message,
    or, after a tool answered, a summary of the tool's result. Ids are positions in
    the conversation, so every run records the same messages."""

    @property
    def _llm_type(self) -> str:
        return "scripted-travel"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=reply(messages))])


def reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """The scripted model's answer to a conversation."""
    message_id = f"ai-{len(messages)}"
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Here is what I found: {last.content}", id=message_id)
    scripted = dict(TURNS).get(str(last.content), "Sorry, I can't help with that.")
    if isinstance(scripted, str):
        return AIMessage(scripted, id=message_id)
    name, args = scripted
    call = {"name": name, "args": args, "id": f"call-{len(messages)}", "type": "tool_call"}
    return AIMessage("", tool_calls=[call], id=message_id)


MODEL = ScriptedTravelModel()


def agent(state: MessagesState) -> dict:
    """The model's turn."""
    return {"messages": [MODEL.invoke(state["messages"])]}


def route(state: MessagesState) -> Literal["approve", "tools", "__end__"]:
    """Tool calls go to the tools (a booking to the approval first); an answer ends."""
    last = state["messages"][-1]
    calls = getattr(last, "tool_calls", None) or []
    if not calls:
        return END
    return "approve" if any(call["name"] == "book_hotel" for call in calls) else "tools"


def approve(state: MessagesState) -> Command[Literal["tools", "agent"]]:
    """Ask a human before booking; a "no" answers the call as declined."""
    call = next(c for c in state["messages"][-1].tool_calls if c["name"] == "book_hotel")
    args = call["args"]
    answer = interrupt(
        {
            "question": f"Book the hotel in {args['city']} for {args['nights']} nights?",
            "tool": call["name"],
            "args": args,
        }
    )
    if str(answer).lower().startswith("yes"):
        return Command(goto="tools")
    declined = ToolMessage(f"The user declined: {answer}", tool_call_id=call["id"])
    return Command(goto="agent", update={"messages": [declined]})


def build(saver: RewindSaver) -> Any:
    """The ReAct graph, compiled with ``saver`` as its checkpointer."""
    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("approve", approve)
    builder.add_node("tools", ToolNode([search_flights, book_hotel]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


def record(directory: Path) -> dict[str, Any]:
    """Run the whole story into a database at ``directory``; returns the facts a test
    checks the explorer against (names, texts, ids)."""
    config = {"configurable": {"thread_id": THREAD_ID}}
    with RewindSaver.from_path(directory) as saver:
        graph = build(saver)
        question = None
        for number, (text, _) in enumerate(TURNS):
            first = [SystemMessage(SYSTEM, id="system")] if number == 0 else []
            graph.invoke({"messages": [*first, HumanMessage(text, id=f"human-{number}")]}, config)
            pending = graph.get_state(config).interrupts
            if pending:  # the approval step asks before the booking runs
                question = pending[0].value["question"]
                graph.invoke(Command(resume=RESUME), config)
        answer = graph.get_state(config).values["messages"][-1].content

        # Time travel: the checkpoint right after the model asked for the Lisbon flights.
        past = next(
            snapshot
            for snapshot in graph.get_state_history(config)
            if snapshot.next == ("tools",)
            and snapshot.values["messages"][-1].tool_calls[0]["args"] == {"city": "Lisbon"}
        )
        call = past.values["messages"][-1].tool_calls[0]
        edited_args = {"city": EDITED_CITY}
        edited = AIMessage(
            "",
            id=past.values["messages"][-1].id,
            tool_calls=[{**call, "args": edited_args}],
        )
        fork_config = graph.update_state(past.config, {"messages": [edited]})
        fork_answer = graph.invoke(None, fork_config)["messages"][-1].content

        branches = [b.name for b in saver.db.branches.list() if b.name.startswith("lg/")]
        main_branch = f"lg/{THREAD_ID}"
        (fork_branch,) = (name for name in branches if name.startswith(main_branch + "~"))
    return {
        "directory": directory,
        "thread_id": THREAD_ID,
        "main_branch": main_branch,
        "fork_branch": fork_branch,
        "question": TURNS[1][0],
        "answer": answer,
        "fork_answer": fork_answer,
        "tool": call["name"],
        "tool_args": call["args"],
        "tool_call_id": call["id"],
        "tool_result": FLIGHTS[call["args"]["city"]],
        "interrupt_question": question,
        "resume": RESUME,
        "edited_args": edited_args,
        "edited_checkpoint_id": fork_config["configurable"]["checkpoint_id"],
        "forked_from_checkpoint_id": past.config["configurable"]["checkpoint_id"],
    }


def main(directory: Path) -> None:
    """Record the run and say where it is and how to open it."""
    facts = record(directory)
    print(f"database: {directory}")
    print(f"thread {facts['thread_id']!r}: branch {facts['main_branch']}")
    print(f"time-travel edit: branch {facts['fork_branch']} ({facts['edited_args']})")
    print(f"final answer: {facts['answer']}")
    print(f"open it in the explorer: rewinddb serve {directory}")


def parse_args(argv: Sequence[str] | None = None) -> Path:
    """The database directory the command line names (a new temporary one if none)."""
    parser = argparse.ArgumentParser(
        description="Record a ReAct travel agent's LangGraph run with RewindSaver "
        "(no network, no API key), then open it with `rewinddb serve DIRECTORY`."
    )
    parser.add_argument(
        "directory",
        nargs="?",
        type=Path,
        help="the database directory to record into (default: a new temporary directory)",
    )
    directory: Path | None = parser.parse_args(argv).directory
    return directory if directory is not None else Path(tempfile.mkdtemp()) / "agent"


if __name__ == "__main__":
    main(parse_args())
