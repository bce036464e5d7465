"""The corpus row and its metadata: the one shape every source is normalised into (SPEC §8.1).

A row is `{messages, tools, metadata}`: `messages` in the OpenAI tool-calls schema (assistant
`tool_calls` with JSON-text `arguments`, each answered by a `tool` message carrying its id; thinking in
`reasoning_content`), `tools` the OpenAI function schemas the episode offered, `metadata` what the
later stages decide on. Every stage reads and writes this model, so a source's quirks stop at the
normaliser. `CorpusResult`, what a build made, is here too: the build returns it and the report reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

Axis = Literal["A", "B"]
Pool = Literal["train", "eval", "never_touch"]

# Stable reject reasons (the public contract of rejects.jsonl and the report).
UNREADABLE = "unreadable"
UNKNOWN_SHAPE = "unknown_shape"
MALFORMED = "malformed_record"
JUDGE_BELOW_THRESHOLD = "judge_below_threshold"
OUTCOME_FAILED = "outcome_failed"
UNPAIRED_TOOL_CALL = "unpaired_tool_call"
RECOMMEND_COUNT = "recommend_count"
RECOMMEND_UNRESOLVED = "recommend_unresolved"
RECOMMEND_UNGROUNDED = "recommend_ungrounded"
TOO_LONG = "too_long"
THINK_THEN_STOP = "think_then_stop"
DEDUP_RANKED_OUT = "dedup_ranked_out"
NEVER_TOUCH = "never_touch"

NORMALISE_REASONS = (UNREADABLE, UNKNOWN_SHAPE, MALFORMED)
GATE_REASONS = (
    JUDGE_BELOW_THRESHOLD,
    OUTCOME_FAILED,
    UNPAIRED_TOOL_CALL,
    RECOMMEND_COUNT,
    RECOMMEND_UNRESOLVED,
    RECOMMEND_UNGROUNDED,
    THINK_THEN_STOP,
    TOO_LONG,
)
"""In the order the gates run: a row is rejected for the first gate it fails."""
LATE_REASONS = (DEDUP_RANKED_OUT, NEVER_TOUCH)
ALL_REASONS = (*NORMALISE_REASONS, *GATE_REASONS, *LATE_REASONS)


class Signals(BaseModel):
    """Ranking signals (SPEC §8.4), kept on every row so a reader can see why it won or lost."""

    model_config = ConfigDict(extra="forbid")

    depth: int = 0
    """Assistant turns carrying both reasoning text and at least one tool call."""
    tool_calls: int = 0
    reformulations: int = 0
    """Distinct normalised `find_product` queries."""
    verified: bool = False
    """check_product_match, or a view_product_information of a recommended id, before recommending."""
    longest_identical_run: int = 0
    """Longest run of consecutive calls with the same name and arguments."""
    shape: str = ""
    """The tool-call sequence as letters (see `rank.SHAPE_LETTERS`), for the diversity tie-break."""


class RewriteProvenance(BaseModel):
    """Where a rewritten row came from (`corpus.rewrite`): its calls, results and answer are those of
    `from_record`, a code-driven trace; `rewriter` wrote its reasoning."""

    model_config = ConfigDict(extra="forbid")

    from_record: str
    rewriter: str
    source_sha256: str | None = None
    """sha256 of the agent code the rewriter was given (None: it saw only the trace)."""


class RowMetadata(BaseModel):
    """What the pipeline knows about a row; filled by the normaliser, extended by later stages."""

    model_config = ConfigDict(extra="forbid")

    problem_id: str
    query: str
    bucket: str | None = None
    leak_cluster_id: str | None = None
    judge_quality: float | None = None
    """None = unjudged; an unjudged row never passes the quality gate."""
    tool_call_origin: Literal["llm", "code", "mixed"] | None = None
    """Who emitted the row's calls, when the source recorded it."""
    origin_counts: dict[str, int] | None = None
    """Per-origin counts of the non-ending calls (search, view, check …) when recorded."""
    source: str
    """Where the row came from: `file:line` (or `file[index]` for a JSON list)."""
    source_format: str
    record_id: str | None = None
    agent_id: str | None = None
    score_success: bool | None = None
    axis: Axis | None = None
    axis_method: Literal["origin", "structure"] | None = None
    signals: Signals | None = None
    token_count: int | None = None
    split: Pool | None = None
    rewrite: RewriteProvenance | None = None
    """Set on a row `corpus rewrite` made from an axis-B trace (None: the row is as its source wrote it)."""
    ungrounded: str | None = None
    """The `ungrounded` reason of the recording's recommendation (a trajectory record whose answer named
    products no search of the episode returned); left out of the JSON when None."""
    system_prompt: str | None = None
    """The system prompt the row is served with: the trace's own system message when it has one, else
    the default a model-backed agent adds (`DEFAULT_SYSTEM_PROMPT`). Training renders the row with it,
    so a trained model is taught on exactly the prompt it is later played with (manifest schema /2)."""

    @model_serializer(mode="wrap")
    def _ungrounded_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if data.get("ungrounded") is None:
            data.pop("ungrounded", None)
        return data


class CorpusRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    metadata: RowMetadata


class RejectedRow(BaseModel):
    """One line of rejects.jsonl: the reason, a human detail, where it came from and what it was.

    Every reject the build writes is made as one of these and written by `to_json`, so this model is
    the file's contract rather than a description of it; `model_validate_json` reads a line back."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    reason: str
    detail: str
    source: str
    problem_id: str | None = None
    row: orjson.Fragment | dict[str, Any] | None = None
    """The normalised row when normalisation succeeded; else the raw record (or its text) in `raw`.
    The build hands in the JSON it already made of the row (`orjson.Fragment`), spliced into the line
    unparsed; a line read back gives a dict."""
    raw: Any = None

    def to_json(self) -> bytes:
        """The line's JSON, keys in field order. Pydantic keeps exactly the fields, in that order, in
        `__dict__`; dumping it is ~40x faster than `dict(self)`, which matters at one reject in three
        rows. `default=str` writes what JSON cannot hold (a raw record's odd value) as text."""
        return orjson.dumps(self.__dict__, default=str)


class CorpusResult(BaseModel):
    counts: dict[str, int]
    reasons: dict[str, int]
    manifest: dict[str, Any]
    out: Path
    seconds: float
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    """Wall time per stage (read+gates, rank, split, export, report): where a build spends its time."""
    notes: list[str] = Field(default_factory=list)
    """What the build did beyond what it was asked (e.g. an eval split raised to one leak cluster)."""
    warnings: list[str] = Field(default_factory=list)
    """What a caller should act on (e.g. an empty eval split that no problem could fill)."""

    def timing(self) -> str:
        """`12.3 s (4,567 rows/s; read+gates 9.1 s, rank 0.4 s, …)` for people to read."""
        stages = ", ".join(f"{name.replace('_', '+')} {s:.1f} s" for name, s in self.stage_seconds.items())
        return (
            f"{self.seconds:.1f} s ({self.counts['inputs'] / max(self.seconds, 1e-9):,.0f} rows/s; {stages})"
        )


# Rows of a corpus share a few tools lists (~5 KB of schemas each). The normaliser hands equal lists
# out as one shared object (`shared_tools`), so their JSON is made once per list (`tools_json`), not
# once for the token counter's key and again for every row written. A row never mutates its tools.
_RECENT_TOOLS: list[list[dict]] = []
_TOOLS_JSON: dict[int, tuple[list[dict], bytes]] = {}


def shared_tools(tools: list[dict]) -> list[dict]:
    """An equal tools list seen recently, else this one (remembered)."""
    for known in _RECENT_TOOLS:
        if known == tools:
            return known
    _RECENT_TOOLS.insert(0, tools)
    del _RECENT_TOOLS[8:]
    return tools


def tools_json(tools: list[dict]) -> bytes:
    """A tools list's JSON, remembered per list object (see `shared_tools`)."""
    known = _TOOLS_JSON.get(id(tools))
    if known is not None and known[0] is tools:
        return known[1]
    data = orjson.dumps(tools)
    if len(_TOOLS_JSON) >= 64:
        _TOOLS_JSON.clear()
    _TOOLS_JSON[id(tools)] = (tools, data)  # holding the list keeps its id from being reused
    return data


def row_json(row: CorpusRow) -> bytes:
    """The row's JSON, the same bytes as `orjson.dumps(row.model_dump(mode="json"))` in one pass:
    messages by orjson, the shared tools and the small metadata spliced in as ready-made JSON."""
    metadata = row.metadata
    return orjson.dumps(
        {
            "messages": row.messages,
            "tools": orjson.Fragment(tools_json(row.tools)),
            "metadata": orjson.Fragment(metadata.__pydantic_serializer__.to_json(metadata)),
        }
    )


_MESSAGES_AT = len(b'{"messages":')


def row_parts(data: bytes) -> tuple[bytes, bytes, bytes]:
    """(messages, tools, metadata) JSON of bytes `row_json` wrote, cut apart without parsing them, so a
    later stage can patch the small metadata and splice the large parts back as they are. The cuts are
    exact: `row_json` writes the three keys in this order, and neither `,"tools":` nor `,"metadata":`
    can occur earlier (quotes inside strings are escaped; message keys are fixed and none is `tools`)."""
    if not data.startswith(b'{"messages":') or not data.endswith(b"}"):
        raise ValueError("not a row written by row_json")
    tools_at = data.index(b',"tools":')
    metadata_at = data.rindex(b',"metadata":')
    return data[_MESSAGES_AT:tools_at], data[tools_at + 9 : metadata_at], data[metadata_at + 12 : -1]


def join_row(messages: bytes, tools: bytes, metadata: bytes) -> bytes:
    """The inverse of `row_parts`."""
    return b'{"messages":' + messages + b',"tools":' + tools + b',"metadata":' + metadata + b"}"
