"""An agent written as a small state machine over typed records."""

from __future__ import annotations

import itertools
import textwrap
from collections import deque
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import NamedTuple

import miner_sdk


class Phase(Enum):
    SEARCH = auto()
    INSPECT = auto()
    DECIDE = auto()
    DONE = auto()


class Hit(NamedTuple):
    product_id: str
    title: str
    price: float


@dataclass
class Memory:
    query: str
    queue: deque = field(default_factory=deque)
    hits: list[Hit] = field(default_factory=list)
    details: dict = field(default_factory=dict)
    log: list[str] = field(default_factory=list)


class Agent:
    __slots__ = ("memory", "phase", "steps")

    def __init__(self, query: str):
        self.memory = Memory(query)
        self.phase = Phase.SEARCH
        self.steps: list[dict] = []
        words = [w for w in query.lower().split() if len(w) > 3]
        self.memory.queue.extend(" ".join(chunk) for chunk in (words[:6], words[:3], words[-3:]) if chunk)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(phase={self.phase.name}, hits={len(self.memory.hits)})"

    @property
    def finished(self) -> bool:
        return self.phase is Phase.DONE

    @staticmethod
    def short(text: str) -> str:
        return textwrap.shorten(text, width=60, placeholder=" …")

    def record(self, think: str) -> None:
        self.steps.append({"completion": {"message": {"think": think}}})

    def step(self) -> None:
        if self.phase is Phase.SEARCH:
            if not self.memory.queue:
                self.phase = Phase.DECIDE
                return
            query = self.memory.queue.popleft()
            result = miner_sdk.call_tool("find_product", q=query)["result"] or []
            self.memory.hits += [Hit(h["product_id"], h["title"], h["price"]) for h in result]
            self.record(f"searched {query!r}: {len(result)} hits")
            if result:
                self.phase = Phase.INSPECT
        elif self.phase is Phase.INSPECT:
            ids = [hit.product_id for hit in itertools.islice(self.memory.hits, 5)]
            for info in (
                miner_sdk.call_tool("view_product_information", product_ids=",".join(ids))["result"] or []
            ):
                self.memory.details[info["product_id"]] = info
            self.record(f"inspected {len(ids)} products")
            self.phase = Phase.DECIDE
        elif self.phase is Phase.DECIDE:
            words = set(self.memory.query.lower().split())
            best = max(
                self.memory.hits, key=lambda h: len(words & set(h.title.lower().split())), default=None
            )
            if best is not None:
                miner_sdk.call_tool("recommend_product", product_ids=best.product_id)
                self.record(f"recommend {best.product_id}: {self.short(best.title)}")
            miner_sdk.call_tool("terminate", status="success" if best else "failure")
            self.phase = Phase.DONE


def agent_main(problem_data):
    agent = Agent(problem_data["query"])
    for _ in range(10):
        if agent.finished:
            break
        agent.step()
    return agent.steps
