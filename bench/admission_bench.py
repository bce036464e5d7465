"""Admission time: `check_submission` on realistic agents and on 1 MiB files (target ≤ 1 s per 1 MiB).

    .venv/bin/python bench/admission_bench.py
    .venv/bin/python bench/admission_bench.py --repeats 9

What is timed: the whole `check_submission(code)` (decode, parse, names, security walk, integrity
literal scan, the constant evaluator), on
- every benign corpus agent as submitted (a few KB each: what the server sees daily), p50/p95;
- 1 MiB of dense agent code: the benign corpus concatenated until the file reaches the 1 MiB limit
  (admitted: every check runs to the end);
- 1 MiB that is mostly one long prompt plus a synonym table (the prompt-heavy shape);
- 1 MiB of hostile code: the adversarial corpus repeated (thousands of findings, capped per rule).
Each 1 MiB row is the median of --repeats runs, as wall time and as this process's CPU time (the
standard machine is shared, so CPU time is the steadier figure), next to `ast.parse` alone, the floor
no Python-level checker can go below. Results: a table on stdout and bench/out/admission_bench.json.
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from bench.common import percentiles
from shoparena.admission import MAX_SOURCE_BYTES, check_submission

TARGET_S = 1.0
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "admission" / "admission_corpus"
OUT_DIR = Path(__file__).resolve().parent / "out"
console = Console()


def _fill(parts: list[bytes], tail: bytes) -> bytes:
    """Repeat `parts` (renaming each copy's agent_main so only one entry point remains) up to 1 MiB."""
    out = bytearray()
    copy = 0
    while True:
        for part in parts:
            block = part.replace(b"def agent_main(", f"def agent_main_{copy}(".encode()) + b"\n\n"
            if len(out) + len(block) + len(tail) > MAX_SOURCE_BYTES:
                return bytes(out) + tail
            out += block
            copy += 1


def dense_code() -> bytes:
    parts = [path.read_bytes() for path in sorted((CORPUS / "benign").glob("*.py"))]
    return _fill(parts, b"\n\ndef agent_main(problem_data):\n    return []\n")


def prompt_heavy() -> bytes:
    sentence = "You are a careful shopping assistant; compare every candidate with every constraint. "
    lines = [f'    "{sentence}"' for _ in range(11_000)]
    synonyms = ",\n".join(f'    "word{i}": ["alt{i}a", "alt{i}b"]' for i in range(400))
    body = (
        "import json\n\nPROMPT = (\n" + "\n".join(lines) + "\n)\n\nSYNONYMS = {\n" + synonyms + "\n}\n\n"
        "def agent_main(problem_data):\n    return [json.dumps({'prompt': PROMPT[:100]})]\n"
    ).encode()
    return body[: body.rfind(b"\n", 0, MAX_SOURCE_BYTES)] if len(body) > MAX_SOURCE_BYTES else body


def hostile() -> bytes:
    parts = [
        path.read_bytes()
        for path in sorted((CORPUS / "adversarial").glob("*.py"))
        if b"format." not in path.read_bytes()[:200] and path.stem != "padding_budget"
    ]
    return _fill(parts, b"\n\ndef agent_main(problem_data):\n    return []\n")


def timed(code: bytes, repeats: int) -> dict:
    walls, cpus, parse_walls = [], [], []
    verdict = []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        verdict = check_submission(code)
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
        gc.disable()  # as check_submission parses: without the cyclic collector
        start = time.perf_counter()
        ast.parse(code)
        parse_walls.append(time.perf_counter() - start)
        gc.enable()
    return {
        "bytes": len(code),
        "wall_s": round(statistics.median(walls), 4),
        "cpu_s": round(statistics.median(cpus), 4),
        "parse_only_s": round(statistics.median(parse_walls), 4),
        "violations": len(verdict),
        "rules": sorted({v.rule for v in verdict}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    agents = sorted((CORPUS / "benign").glob("*.py"))
    samples = []
    for _ in range(max(args.repeats, 3)):
        for path in agents:
            code = path.read_bytes()
            start = time.perf_counter()
            check_submission(code)
            samples.append(time.perf_counter() - start)
    typical = percentiles(samples)
    typical["bytes_mean"] = round(statistics.fmean(p.stat().st_size for p in agents))

    rows = {
        "dense code": timed(dense_code(), args.repeats),
        "long prompt": timed(prompt_heavy(), args.repeats),
        "hostile": timed(hostile(), args.repeats),
    }
    table = Table(title="admission time (check_submission)")
    for column in ("input", "bytes", "wall s", "CPU s", "ast.parse alone s", "violations"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{len(agents)} corpus agents", f"{typical['bytes_mean']:,} avg", f"p50 {typical['p50_ms']:.1f} ms",
        "", "", "0",
    )  # fmt: skip
    for name, row in rows.items():
        table.add_row(
            name, f"{row['bytes']:,}", f"{row['wall_s']:.3f}", f"{row['cpu_s']:.3f}",
            f"{row['parse_only_s']:.3f}", str(row["violations"]),
        )  # fmt: skip
    console.print(table)
    worst = max(row["cpu_s"] for row in rows.values())
    verdict = "met" if worst <= TARGET_S else "MISSED"
    console.print(f"target ≤ {TARGET_S:.0f} s CPU per 1 MiB file: {verdict} (worst {worst:.3f} s)")

    OUT_DIR.mkdir(exist_ok=True)
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_version()}, {platform.platform()}",
        "typical_agents_ms": typical,
        "one_mib": rows,
        "target_s": TARGET_S,
    }
    (OUT_DIR / "admission_bench.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
