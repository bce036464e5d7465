"""Export for TRL's SFTTrainer (SPEC §8.7): Hugging Face datasets-style JSONL and Parquet with a
`messages` column (OpenAI tool-calls schema), a `tools` column (a list of OpenAI function schemas) and a
`metadata` column.

JSONL rows follow TRL's tool-calling dataset format exactly: tool-call `arguments` are JSON objects (what
chat templates such as Qwen3's and Llama's expect), thinking sits in `reasoning_content`.

Parquet needs one Arrow type per column, and tool arguments and tool schemas differ in their keys from
call to call, so Arrow would widen them to one struct with every key and fill the missing ones with
nulls — which a chat template would then render. Parquet therefore keeps `function.arguments` as JSON
text (the OpenAI wire form, which Qwen3's template also accepts), `tools` as one JSON text per row and
`metadata` as JSON text; `read_parquet_rows` gives back rows identical to the JSONL ones.
"""

from __future__ import annotations

import hashlib
import mmap
import os
from pathlib import Path
from typing import Any

import orjson

from shoparena.harness import jsontext

PARQUET_BATCH = 2048


def trl_message(message: dict) -> dict:
    """One canonical message in TRL form: tool-call arguments as objects where they parse."""
    if not message.get("tool_calls"):
        return message
    calls = []
    for call in message["tool_calls"]:
        text = call["function"]["arguments"]
        try:
            arguments: Any = jsontext.loads(text) if text.strip() else {}
        except ValueError:
            arguments = text
        calls.append({**call, "function": {"name": call["function"]["name"], "arguments": arguments}})
    return {**message, "tool_calls": calls}


def trl_messages(messages: list[dict]) -> bytes:
    """Canonical messages as the JSON of their TRL form (`trl_message` on each): a TRL row is
    `{"messages": <this>, "tools": …, "metadata": …}` (`models.join_row`)."""
    return orjson.dumps([trl_message(m) for m in messages])


class HashingWriter:
    """A JSONL file written line by line, with its sha256 and row count for the manifest."""

    def __init__(self, path: Path):
        self.path = path
        self._file = path.open("wb")
        self._hash = hashlib.sha256()
        self.rows = 0

    def write_line(self, data: bytes) -> None:
        line = data + b"\n"
        self._file.write(line)
        self._hash.update(line)
        self.rows += 1

    def append_file(self, path: Path, rows: int) -> None:
        """Appends a file of whole lines (`rows` of them) that another process wrote: hashed from a
        memory map and copied by the kernel, so its bytes never pass through Python objects."""
        size = path.stat().st_size
        if size == 0:
            return
        self._file.flush()
        with path.open("rb") as source, mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ) as view:
            self._hash.update(view)
            _copy_range(source.fileno(), self._file.fileno(), size, view)
        self.rows += rows

    def close(self) -> dict:
        self._file.close()
        return {"rows": self.rows, "sha256": self._hash.hexdigest(), "bytes": self.path.stat().st_size}


def _copy_range(source: int, target: int, size: int, view: mmap.mmap) -> None:
    """`size` bytes from the start of `source` to the current end of `target`, in the kernel where it
    can (`copy_file_range`), else written from the map."""
    copied = 0
    try:
        while copied < size:
            done = os.copy_file_range(source, target, size - copied, copied)
            if done == 0:
                break
            copied += done
    except OSError:  # e.g. a filesystem or kernel without it: write what is left from the map
        pass
    with memoryview(view) as data:
        while copied < size:
            copied += os.write(target, data[copied:])


def _parquet_schema():
    import pyarrow as pa

    call = pa.struct(
        [
            ("id", pa.string()),
            ("type", pa.string()),
            ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())])),
        ]
    )
    message = pa.struct(
        [
            ("role", pa.string()),
            ("content", pa.string()),
            ("reasoning_content", pa.string()),
            ("tool_calls", pa.list_(call)),
            ("tool_call_id", pa.string()),
            ("name", pa.string()),
        ]
    )
    return pa.schema([("messages", pa.list_(message)), ("tools", pa.string()), ("metadata", pa.string())])


MESSAGE_KEYS = ("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name")


class ParquetSink:
    """Rows (canonical form) streamed to Parquet in batches."""

    def __init__(self, path: Path):
        import pyarrow.parquet as pq

        self.path = path
        self.schema = _parquet_schema()
        self._writer = pq.ParquetWriter(str(path), self.schema, compression="zstd")
        self._lines: list[bytes] = []
        self._tools: tuple[bytes, bytes] = (b"", b"")
        self.rows = 0

    def write_json(self, messages: bytes, tools: bytes, metadata: bytes) -> None:
        """One row from the JSON of its parts (canonical messages, tools, metadata): Arrow's JSON
        reader builds the columns in C++, several times faster than converting Python objects."""
        if tools != self._tools[0]:  # rows mostly share one tools list: escape it once
            self._tools = (tools, orjson.dumps(tools.decode()))
        self._lines.append(
            b'{"messages":'
            + messages
            + b',"tools":'
            + self._tools[1]
            + b',"metadata":'
            + orjson.dumps(metadata.decode())
            + b"}\n"
        )
        self.rows += 1
        if len(self._lines) >= PARQUET_BATCH:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.json as pa_json

        if not self._lines:
            return
        table = pa_json.read_json(
            pa.BufferReader(b"".join(self._lines)),
            # the Python stages are single-threaded here, so Arrow may parse blocks on every core
            read_options=pa_json.ReadOptions(use_threads=True, block_size=1 << 22),
            parse_options=pa_json.ParseOptions(
                explicit_schema=self.schema, unexpected_field_behavior="error"
            ),
        )
        self._writer.write_table(table)
        self._lines = []

    def close(self) -> dict:
        self._flush()
        self._writer.close()
        digest = hashlib.sha256(self.path.read_bytes()).hexdigest()
        return {"rows": self.rows, "sha256": digest, "bytes": self.path.stat().st_size}


def read_parquet_rows(path: Path | str) -> list[dict]:
    """Rows of an exported Parquet file in the JSONL (TRL) form: nulls dropped, JSON text decoded."""
    import pyarrow.parquet as pq

    rows = []
    for record in pq.read_table(str(path)).to_pylist():
        messages = []
        for message in record["messages"]:
            message = {k: v for k, v in message.items() if v is not None or k == "content"}
            messages.append(trl_message(message))
        rows.append(
            {
                "messages": messages,
                "tools": jsontext.loads(record["tools"]),
                "metadata": jsontext.loads(record["metadata"]),
            }
        )
    return rows
