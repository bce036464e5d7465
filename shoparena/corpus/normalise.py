"""Normalisers (SPEC §8.1): any supported source record → one `CorpusRow`, or a `NormaliseError` saying
why not. Shapes are recognised by their defining keys, never guessed: a record that matches none is
rejected as `unknown_shape`, one that matches a shape but breaks it as `malformed_record`.

Supported shapes (`detect_format` names them):

- `trajectory`: our canonical `TrajectoryRecord` (schema `shoparena.trajectory/…`); the verified call log
  gives every call's origin.
- `arena_steps`: the arena's step log, a list of `{completion: {message: {think, tool_call: [{name,
  parameters, tool_call_id, result}], response}}, extra_info}`, bare or wrapped as `{steps: [...], query?,
  problem_id?, ...}`.
- `upstream_dialogue`: ShoppingBench dialogue text (`<user>`, `<think>`, `<tool_call>[…]</tool_call>`,
  `<obs>[…]</obs>`, `<response>`), as a string, `{dialogue|text: str}`, or upstream's rendered prompt
  (`# Dialogue Records History`) with an optional final model `output`.
- `tagged_chat`: chat messages whose assistant turns are text with tool calls in tags — Qwen3 native
  (`<tool_call>{"name","arguments"}</tool_call>`, results in `<tool_response>` user turns or `tool`
  messages) or upstream tags inside a running chat (`<obs>` user turns).
- `openai_messages`: rows already `{messages, tools?, metadata?}` in the OpenAI tool-calls schema.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from shoparena.corpus.models import MALFORMED, UNKNOWN_SHAPE, CorpusRow, RowMetadata, shared_tools
from shoparena.harness import jsontext
from shoparena.harness.models import ParsedCall
from shoparena.harness.protocols import QWEN3, UPSTREAM, content_text, scan_tags
from shoparena.harness.tool_specs import PROFILES, tool_schemas
from shoparena.records.score import ScoreSummary
from shoparena.records.trajectory import AgentInfo, ProblemInfo
from shoparena.records.verdict import JudgeVerdict

ENDING_TOOLS = frozenset({"recommend_product", "terminate"})
DIALOGUE_HEADER = "# Dialogue Records History"
_UPSTREAM_TAGS = ("user", "think", "tool_call", "obs", "response")


class NormaliseError(ValueError):
    """`reason` is a stable reject reason; `detail` names what is wrong."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def _malformed(detail: str) -> NormaliseError:
    return NormaliseError(MALFORMED, detail)


# -- shared helpers --------------------------------------------------------------------------------
def stable_problem_id(query: str) -> str:
    """A problem id for rows that carry none: the hash of the whitespace/case-normalised first user turn."""
    text = " ".join(query.lower().split())
    return "q-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def first_user_text(messages: list[dict]) -> str | None:
    for message in messages:
        if message.get("role") == "user":
            return content_text(message.get("content")) or ""
    return None


def tools_for(messages: list[dict]) -> list[dict]:
    """The schemas of the smallest harness profile offering every tool the trace calls (a row without
    `tools` still renders for training with the tools its episode must have had)."""
    used = {
        call.get("function", {}).get("name")
        for m in messages
        for call in m.get("tool_calls") or []
        if isinstance(call, dict)
    }
    for profile, names in PROFILES.items():
        if used <= set(names):
            return tool_schemas(profile)
    return tool_schemas("full")


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return jsontext.dumps({} if arguments is None else arguments)


def _observation_text(result: Any) -> str:
    return result if isinstance(result, str) else jsontext.dumps(result)


def _call_entry(call_id: str, name: str, arguments: Any) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": _arguments_text(arguments)},
    }


def _parsed_call_arguments(call: ParsedCall) -> Any:
    return call.arguments if call.arguments is not None else call.raw


def _origin_summary(origins: list[str]) -> tuple[str | None, dict[str, int] | None]:
    if not origins:
        return None, None
    counts = {"llm": origins.count("llm"), "code": origins.count("code")}
    kinds = {o for o in origins}
    return (origins[0] if len(kinds) == 1 else "mixed"), counts


_ROLES = ("system", "user", "assistant", "tool")


def _clean_message(message: Any, index: int) -> dict:
    """One OpenAI message, checked for the schema and with thinking moved to `reasoning_content`.
    Runs for every message of every row, so each role takes its own short path."""
    if not isinstance(message, dict):
        raise _malformed(f"messages[{index}] is {type(message).__name__}, not an object")
    role = message.get("role")
    if role not in _ROLES:
        raise _malformed(f"messages[{index}] has role {role!r}; expected system/user/assistant/tool")
    content = message.get("content")
    if content is not None and type(content) is not str:
        if isinstance(content, list):
            content = content_text(content)
        elif not isinstance(content, str):
            raise _malformed(f"messages[{index}].content is {type(content).__name__}, not text")
    if role == "tool":
        call_id = message.get("tool_call_id")
        out: dict[str, Any] = {
            "role": role,
            "content": "" if content is None else content,
            "tool_call_id": call_id if isinstance(call_id, str) else "",
        }
        name = message.get("name")
        if isinstance(name, str):
            out["name"] = name
        return out
    out = {"role": role, "content": content}
    if role != "assistant":
        return out
    reasoning = message.get("reasoning_content", message.get("reasoning"))
    if reasoning is None and content and "</think>" in content:
        scan = scan_tags(content, ("think",), json_tags=())
        reasoning, out["content"] = scan.thinking(), scan.outside.strip() or None
    if reasoning is not None:
        out["reasoning_content"] = str(reasoning)
    calls = message.get("tool_calls")
    if calls:
        if not isinstance(calls, list):
            raise _malformed(f"messages[{index}].tool_calls is not a list")
        out["tool_calls"] = [_clean_call(call, index, j) for j, call in enumerate(calls)]
    return out


def _clean_call(call: Any, index: int, j: int) -> dict:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise _malformed(f"messages[{index}].tool_calls[{j}] has no function name")
    call_id = call.get("id")
    arguments = function.get("arguments")
    return {
        "id": call_id if isinstance(call_id, str) else "",
        "type": "function",
        "function": {
            "name": function["name"],
            "arguments": arguments if isinstance(arguments, str) else _arguments_text(arguments),
        },
    }


def _judge_quality(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, dict):
        value = value.get("quality")
    try:
        quality = float(value)
    except (TypeError, ValueError):
        raise _malformed(f"judge quality {value!r} is not a number") from None
    return quality


def played_system_prompt(messages: list[dict]) -> str:
    """The system prompt a trace was played with: its own system message, else the agents' default."""
    from shoparena.agents.chat_loop import DEFAULT_SYSTEM_PROMPT

    for message in messages:
        if message.get("role") == "system" and isinstance(message.get("content"), str):
            return message["content"]
    return DEFAULT_SYSTEM_PROMPT


def _row(
    messages: list[dict],
    tools: list[dict] | None,
    source: str,
    source_format: str,
    meta: dict[str, Any],
) -> CorpusRow:
    query = meta.pop("query", None) or first_user_text(messages)
    if not query:
        raise _malformed("no user message: the row has no query to train on")
    problem_id = meta.pop("problem_id", None) or stable_problem_id(query)
    meta.setdefault("system_prompt", played_system_prompt(messages))
    metadata = RowMetadata(
        problem_id=str(problem_id), query=query, source=source, source_format=source_format, **meta
    )
    tools = tools or tools_for(messages)
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _malformed(f"tools[{i}] is {type(tool).__name__}, not a function schema object")
    tools = shared_tools(tools)
    # Messages come from the normalisers above (dicts they built) and tools were just checked, so the
    # row is assembled without validating its ~60 KB of messages again.
    return CorpusRow.model_construct(messages=messages, tools=tools, metadata=metadata)


_META_KEYS = (
    "problem_id",
    "bucket",
    "leak_cluster_id",
    "judge_quality",
    "tool_call_origin",
    "query",
    "rewrite",
)


def _meta_from(mapping: dict | None) -> dict[str, Any]:
    if not isinstance(mapping, dict):
        return {}
    meta: dict[str, Any] = {}
    for key in _META_KEYS:
        value = mapping.get(key)
        if value is not None:
            meta[key] = value
    if "judge_quality" in meta:
        meta["judge_quality"] = _judge_quality(meta["judge_quality"])
    elif mapping.get("judge") is not None:
        meta["judge_quality"] = _judge_quality(mapping["judge"])
    origin = meta.get("tool_call_origin")
    if origin is not None and origin not in ("llm", "code", "mixed"):
        raise _malformed(f"tool_call_origin {origin!r}: expected 'llm' or 'code'")
    for key in ("problem_id", "bucket", "leak_cluster_id", "query"):
        if key in meta:
            meta[key] = str(meta[key])
    return meta


# -- canonical trajectory records --------------------------------------------------------------------
class _TrajectoryView(BaseModel):
    """The small parts of a `TrajectoryRecord` the corpus reads, typed as the contract types them.
    `messages`, `tools` and the call log are checked by hand as they are read (`_trajectory_lists`):
    validating them as models would copy every message once more, and the call results, timings and
    usage are not read at all."""

    model_config = ConfigDict(extra="ignore")

    schema_version: str
    record_id: str
    agent: AgentInfo
    problem: ProblemInfo
    score: ScoreSummary
    judge: JudgeVerdict | None = None


_VIEW_KEYS = ("schema_version", "record_id", "agent", "problem", "score", "judge")


def _plain(value: Any) -> Any:
    """A lazily parsed JSON value (a simdjson proxy) as Python objects; plain values pass through."""
    if hasattr(value, "as_dict"):
        return value.as_dict()
    if hasattr(value, "as_list"):
        return value.as_list()
    return value


def _invalid(where: str, message: str) -> NormaliseError:
    return _malformed(f"trajectory record: {where}: {message}")


def _trajectory_lists(record: Any) -> tuple[list, list[dict], list[str], list[str]]:
    """(messages, tools, origins of non-ending calls, origins of all calls), checked. Only each call's
    name and origin are read from the call log, so a lazily parsed record never materialises the
    results it repeats from the tool messages."""
    messages = _plain(record.get("messages"))
    if not isinstance(messages, list):
        raise _invalid("messages", "Input should be a valid list")
    tools = _plain(record.get("tools"))
    if not isinstance(tools, list):
        raise _invalid("tools", "Input should be a valid list")
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _invalid(f"tools.{i}", "Input should be a valid dictionary")
    calls = record.get("calls")
    if not (isinstance(calls, list) or hasattr(calls, "as_list")):
        raise _invalid("calls", "Input should be a valid list")
    working: list[str] = []
    every: list[str] = []
    for i, call in enumerate(calls):
        if not (isinstance(call, dict) or hasattr(call, "as_dict")):
            raise _invalid(f"calls.{i}", "Input should be a valid dictionary")
        for key in ("call_id", "name", "origin"):
            if not isinstance(call.get(key), str):
                raise _invalid(f"calls.{i}.{key}", "Input should be a valid string")
        origin = call.get("origin")
        every.append(origin)
        if call.get("name") not in ENDING_TOOLS:
            working.append(origin)
    return messages, tools, working, every


def from_trajectory(record: Any, source: str) -> CorpusRow:
    """`record` is a dict, or a lazily parsed JSON object (a simdjson `Object`): then only the parts
    the corpus reads are turned into Python objects."""
    try:
        view = _TrajectoryView.model_validate({k: _plain(record.get(k)) for k in _VIEW_KEYS if k in record})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise _invalid(where, first["msg"]) from None
    raw_messages, tools, working, every = _trajectory_lists(record)
    messages = [_clean_message(m, i) for i, m in enumerate(raw_messages)]
    origin, counts = _origin_summary(working)
    if origin is None:
        origin, _ = _origin_summary(every)
    success = view.score.success
    meta = {
        "problem_id": view.problem.problem_id,
        "query": view.problem.query,
        "bucket": view.problem.bucket,
        "leak_cluster_id": view.problem.leak_cluster_id,
        "judge_quality": None if view.judge is None else float(view.judge.quality),
        "tool_call_origin": origin,
        "origin_counts": counts,
        "record_id": view.record_id,
        "agent_id": view.agent.agent_id,
        "score_success": bool(success) if success is not None else None,
    }
    ungrounded = _ungrounded_recommendation(record.get("calls"))
    if ungrounded is not None:
        meta["ungrounded"] = ungrounded
    return _row(messages, tools, source, "trajectory", meta)


def _ungrounded_recommendation(calls: Any) -> str | None:
    """The `ungrounded` reason of the recommendation that stands (the first counted recommend_product
    that ran without an error), from an already-checked call log."""
    for call in calls or ():
        if (
            call.get("name") == "recommend_product"
            and call.get("counted", True)
            and call.get("error") is None
        ):
            reason = call.get("ungrounded")
            return str(reason) if reason is not None else None
    return None


# -- arena step logs ---------------------------------------------------------------------------------
def _is_step(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("completion"), dict)


def from_arena_steps(steps: list, wrapper: dict | None, source: str) -> CorpusRow:
    meta = _meta_from(wrapper)
    query = meta.get("query")
    if query is None and wrapper is not None and isinstance(wrapper.get("problem"), dict):
        meta.update({k: v for k, v in _meta_from(wrapper["problem"]).items() if k not in meta})
        query = meta.get("query")
    origins: list[str] = []
    messages: list[dict] = []
    for i, step in enumerate(steps):
        if not _is_step(step):
            raise _malformed(f"step {i} has no 'completion' object")
        info = step.get("extra_info") if isinstance(step.get("extra_info"), dict) else {}
        if query is None:
            query = info.get("query")
            if query is not None:
                meta.setdefault("query", str(query))
        for key in ("problem_id", "bucket", "judge_quality", "tool_call_origin"):
            if key not in meta and info.get(key) is not None:
                meta.update(_meta_from({key: info[key]}))
        message = step["completion"].get("message")
        if not isinstance(message, dict):
            raise _malformed(f"step {i}: completion.message is not an object")
        think = message.get("think")
        response = message.get("response")
        calls = message.get("tool_call") or []
        if isinstance(calls, dict):
            calls = [calls]
        if not isinstance(calls, list):
            raise _malformed(f"step {i}: completion.message.tool_call is not a list")
        assistant: dict[str, Any] = {"role": "assistant", "content": response if response else None}
        if think:
            assistant["reasoning_content"] = str(think)
        tool_messages = []
        entries = []
        for j, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                raise _malformed(f"step {i}: tool_call[{j}] has no name")
            call_id = call.get("tool_call_id") or f"call_{i + 1}_{j + 1}"
            entries.append(
                _call_entry(str(call_id), call["name"], call.get("parameters", call.get("arguments")))
            )
            if call.get("origin") in ("llm", "code") and call["name"] not in ENDING_TOOLS:
                origins.append(call["origin"])
            if "result" in call:
                tool_messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(call_id),
                        "name": call["name"],
                        "content": _observation_text(call["result"]),
                    }
                )
        if entries:
            assistant["tool_calls"] = entries
        messages.append(assistant)
        messages.extend(tool_messages)
    if query is None:
        raise _malformed("arena step log without a query (no 'query' in the record or any extra_info)")
    messages.insert(0, {"role": "user", "content": str(query)})
    if origins and "tool_call_origin" not in meta:
        meta["tool_call_origin"], meta["origin_counts"] = _origin_summary(origins)
    tools = wrapper.get("tools") if wrapper is not None and isinstance(wrapper.get("tools"), list) else None
    return _row(messages, tools, source, "arena_steps", meta)


# -- tagged text: upstream dialogue and Qwen3 native ----------------------------------------------------
class _Builder:
    """Collects assistant turns and pairs tool results with the calls before them, by id or position."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.current: dict[str, Any] | None = None
        self.pending: list[dict] = []
        self.counter = 0
        self.generated: set[int] = set()

    def assistant(self) -> dict:
        if self.current is None:
            self.current = {"role": "assistant", "content": None}
        return self.current

    def flush(self) -> None:
        if self.current is not None:
            self.messages.append(self.current)
            self.pending = list(self.current.get("tool_calls", []))
            self.current = None

    def think(self, text: str) -> None:
        turn = self.current
        if turn is not None and (
            turn.get("tool_calls") or turn.get("content") or turn.get("reasoning_content")
        ):
            self.flush()
        self.assistant()["reasoning_content"] = text.strip()

    def calls(self, calls: list[ParsedCall]) -> None:
        turn = self.assistant()
        if turn.get("tool_calls") or turn.get("content"):
            self.flush()
            turn = self.assistant()
        entries = []
        for call in calls:
            if call.error is not None and not call.name:
                raise _malformed(f"tool call {self.counter + 1}: {call.error}")
            self.counter += 1
            entry = _call_entry(call.id or f"call_{self.counter}", call.name, _parsed_call_arguments(call))
            if call.id is None:
                self.generated.add(id(entry))
            entries.append(entry)
        turn.setdefault("tool_calls", []).extend(entries)

    def response(self, text: str) -> None:
        turn = self.assistant()
        turn["content"] = ((turn.get("content") or "") + text.strip()) or None

    def results(self, results: list[tuple[str | None, str]]) -> None:
        """Tool results in order; an explicit id wins, else the next unanswered call of the last turn."""
        self.flush()
        for call_id, text in results:
            if call_id is None:
                call_id = self.pending.pop(0)["id"] if self.pending else ""
            elif any(c["id"] == call_id for c in self.pending):
                self.pending = [c for c in self.pending if c["id"] != call_id]
            elif self.pending and id(self.pending[0]) in self.generated:
                # upstream calls carry no id while their <obs> names one: the call adopts it
                call = self.pending.pop(0)
                call["id"] = call_id
            name = next(
                (
                    c["function"]["name"]
                    for m in reversed(self.messages)
                    for c in m.get("tool_calls", [])
                    if c["id"] == call_id
                ),
                None,
            )
            message = {"role": "tool", "tool_call_id": call_id, "content": text}
            if name:
                message["name"] = name
            self.messages.append(message)

    def user(self, text: str) -> None:
        self.flush()
        self.pending = []
        self.messages.append({"role": "user", "content": text.strip()})

    def system(self, text: str) -> None:
        self.flush()
        self.messages.append({"role": "system", "content": text})

    def done(self) -> list[dict]:
        self.flush()
        return self.messages


def _obs_results(body: str) -> list[tuple[str | None, str]]:
    try:
        value = jsontext.loads(body.strip())
    except ValueError:
        return [(None, body.strip())]
    items = value if isinstance(value, list) else [value]
    results = []
    for item in items:
        if isinstance(item, dict) and ("results" in item or "tool_call_id" in item):
            call_id = item.get("tool_call_id")
            results.append(
                (str(call_id) if call_id is not None else None, _observation_text(item.get("results")))
            )
        else:
            results.append((None, _observation_text(item)))
    return results


def _upstream_blocks(builder: _Builder, text: str, where: str) -> None:
    scan = scan_tags(text, _UPSTREAM_TAGS, json_tags=("tool_call", "obs"))
    if not scan.blocks:
        raise _malformed(f"{where}: no <user>/<think>/<tool_call>/<obs>/<response> blocks")
    for tag, body in scan.blocks:
        if tag == "user":
            builder.user(body)
        elif tag == "think":
            builder.think(body)
        elif tag == "tool_call":
            builder.calls(UPSTREAM.parse_calls(body))
        elif tag == "obs":
            builder.results(_obs_results(body))
        else:
            builder.response(body)


def from_upstream_dialogue(
    text: str, output: str | None, system: str | None, wrapper: dict | None, source: str
) -> CorpusRow:
    builder = _Builder()
    if system:
        builder.system(system)
    body = text.split(DIALOGUE_HEADER, 1)[1] if DIALOGUE_HEADER in text else text
    _upstream_blocks(builder, body, "dialogue")
    if output:
        _upstream_blocks(builder, output, "output")
    messages = builder.done()
    return _row(messages, _tools_of(wrapper), source, "upstream_dialogue", _meta_from(_metadata_of(wrapper)))


def _is_upstream_call_block(text: str) -> bool:
    return "<tool_call>[" in text.replace("<tool_call>\n", "<tool_call>").replace(
        "<tool_call> ", "<tool_call>"
    )


def from_tagged_chat(messages: list, wrapper: dict, source: str) -> CorpusRow:
    builder = _Builder()
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _malformed(f"messages[{i}] is not an object")
        role = message.get("role")
        content = content_text(message.get("content")) or ""
        if role == "system":
            builder.system(content)
        elif role == "assistant":
            if _is_upstream_call_block(content) or "<obs>" in content:
                _upstream_blocks(builder, content, f"messages[{i}]")
                builder.flush()
                continue
            turn = QWEN3.parse(
                {
                    "role": "assistant",
                    "content": content,
                    **(
                        {"reasoning_content": message["reasoning_content"]}
                        if message.get("reasoning_content")
                        else {}
                    ),
                }
            )
            builder.flush()
            if turn.thinking is not None:
                builder.think(turn.thinking)
            if turn.calls:
                builder.calls(turn.calls)
            if turn.content:
                builder.response(turn.content)
            builder.assistant()
            builder.flush()
        elif role == "tool":
            call_id = message.get("tool_call_id")
            builder.results([(str(call_id) if call_id else None, content)])
        elif role == "user":
            stripped = content.strip()
            if stripped.startswith("<tool_response>"):
                scan = scan_tags(stripped, ("tool_response",), json_tags=())
                builder.results([(None, body.strip()) for body in scan.bodies("tool_response")])
            elif stripped.startswith("<obs>"):
                scan = scan_tags(stripped, ("obs",), json_tags=("obs",))
                builder.results([r for body in scan.bodies("obs") for r in _obs_results(body)])
            else:
                builder.user(content)
        else:
            raise _malformed(f"messages[{i}] has role {role!r}")
    rows = builder.done()
    return _row(rows, _tools_of(wrapper), source, "tagged_chat", _meta_from(_metadata_of(wrapper)))


# -- OpenAI messages rows ----------------------------------------------------------------------------
def _tools_of(wrapper: dict | None) -> list[dict] | None:
    if wrapper is None:
        return None
    tools = wrapper.get("tools")
    if tools is None:
        return None
    if isinstance(tools, str):
        try:
            tools = jsontext.loads(tools)
        except ValueError:
            raise _malformed("'tools' is a string that is not JSON") from None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise _malformed("'tools' must be a list of OpenAI function schemas")
    return tools


def _metadata_of(wrapper: dict | None) -> dict | None:
    if wrapper is None:
        return None
    metadata = wrapper.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise _malformed("'metadata' must be an object")
    merged = dict(metadata or {})
    for key in _META_KEYS:
        if key not in merged and wrapper.get(key) is not None:
            merged[key] = wrapper[key]
    return merged


def from_openai_messages(record: dict, source: str) -> CorpusRow:
    messages = [_clean_message(m, i) for i, m in enumerate(record["messages"])]
    meta = _meta_from(_metadata_of(record))
    return _row(messages, _tools_of(record), source, "openai_messages", meta)


# -- dispatch ---------------------------------------------------------------------------------------
def _has_tagged_assistant(messages: list) -> bool:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "assistant" and not message.get("tool_calls"):
            content = content_text(message.get("content")) or ""
            if "<tool_call>" in content:
                return True
    return False


def _dialogue_prompt(messages: list) -> str | None:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            content = content_text(message.get("content")) or ""
            if DIALOGUE_HEADER in content or content.lstrip().startswith("<user>"):
                return content
    return None


def is_trajectory(record: Any) -> bool:
    """A canonical trajectory record: an object (a dict or a lazily parsed one) with our schema tag."""
    return str(record.get("schema_version", "")).startswith("shoparena.trajectory/")


def detect_format(record: Any) -> str | None:
    """The shape of a source record, or None when it is none of the supported ones."""
    if isinstance(record, str):
        return "upstream_dialogue" if "<user>" in record else None
    if isinstance(record, list):
        return "arena_steps" if record and all(_is_step(s) for s in record) else None
    if not isinstance(record, dict):
        return None
    if is_trajectory(record):
        return "trajectory"
    steps = record.get("steps", record.get("trajectory"))
    if isinstance(steps, list) and steps and _is_step(steps[0]):
        return "arena_steps"
    if isinstance(record.get("dialogue", record.get("text")), str) and "<user>" in record.get(
        "dialogue", record.get("text")
    ):
        return "upstream_dialogue"
    messages = record.get("messages")
    if isinstance(messages, list) and messages:
        if _dialogue_prompt(messages) is not None:
            return "upstream_dialogue"
        if _has_tagged_assistant(messages):
            return "tagged_chat"
        return "openai_messages"
    return None


def normalise_record(record: Any, source: str) -> CorpusRow:
    """One source record → its canonical row; raises `NormaliseError` (reason + detail) otherwise."""
    fmt = detect_format(record)
    try:
        if fmt is None:
            raise NormaliseError(UNKNOWN_SHAPE, _shape_hint(record))
        if fmt == "trajectory":
            return from_trajectory(record, source)
        if fmt == "arena_steps":
            if isinstance(record, list):
                return from_arena_steps(record, None, source)
            return from_arena_steps(record.get("steps", record.get("trajectory")), record, source)
        if fmt == "upstream_dialogue":
            return _dialogue(record, source)
        if fmt == "tagged_chat":
            return from_tagged_chat(record["messages"], record, source)
        return from_openai_messages(record, source)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _malformed(f"{fmt}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def _dialogue(record: Any, source: str) -> CorpusRow:
    if isinstance(record, str):
        return from_upstream_dialogue(record, None, None, None, source)
    text = record.get("dialogue", record.get("text"))
    output = record.get("output", record.get("completion"))
    if isinstance(text, str):
        return from_upstream_dialogue(text, output if isinstance(output, str) else None, None, record, source)
    messages = record["messages"]
    prompt = _dialogue_prompt(messages)
    system = next(
        (m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "system"), None
    )
    after = []
    seen = False
    for message in messages:
        if seen and isinstance(message, dict) and message.get("role") == "assistant":
            after.append(content_text(message.get("content")) or "")
        if isinstance(message, dict) and message.get("role") == "user" and message.get("content") == prompt:
            seen = True
    if isinstance(output, str):
        after.append(output)
    return from_upstream_dialogue(prompt or "", "\n".join(after) or None, system, record, source)


def _shape_hint(record: Any) -> str:
    if isinstance(record, dict):
        keys = ", ".join(sorted(map(str, record))[:8])
        return (
            f"an object with keys [{keys}] is none of: trajectory record (schema_version), arena steps "
            "(steps[].completion), upstream dialogue (<user> text), chat messages"
        )
    if isinstance(record, list):
        return "a list that is not an arena step log (every item needs a 'completion' object)"
    if isinstance(record, str):
        return "text without upstream dialogue tags (<user>…)"
    return f"a JSON {type(record).__name__} is not a trajectory"
