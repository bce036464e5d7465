"""The reasoning judge (SPEC §7): per-trajectory process supervision grounded in the verified call log.

A judge is a callable `judge(record, problem=None) -> JudgeVerdict`. Build one with
`make_judge("offline")` or `make_judge("openai:MODEL", base_url=..., fallback=[...])`; every judge's
claim is verified in code (`verify.py`) before it becomes a verdict. Sits above agents: it reads
`TrajectoryRecord`, and the runner receives it only as a callable.
"""

from typing import TYPE_CHECKING

from shoparena.records.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from shoparena.judge.api import (
        Judge,
        JudgeFileReport,
        JudgeSpecError,
        judge_file,
        judge_record,
        make_judge,
    )
    from shoparena.judge.llm import JudgeCallFailed, JudgeCircuitOpen, JudgeError, JudgeRunStats, LLMJudge
    from shoparena.judge.offline import OfflineJudge
    from shoparena.judge.rules import RuleSettings

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Judge": "shoparena.judge.api",
        "JudgeFileReport": "shoparena.judge.api",
        "JudgeSpecError": "shoparena.judge.api",
        "judge_file": "shoparena.judge.api",
        "judge_record": "shoparena.judge.api",
        "make_judge": "shoparena.judge.api",
        "JudgeCallFailed": "shoparena.judge.llm",
        "JudgeCircuitOpen": "shoparena.judge.llm",
        "JudgeError": "shoparena.judge.llm",
        "JudgeRunStats": "shoparena.judge.llm",
        "LLMJudge": "shoparena.judge.llm",
        "OfflineJudge": "shoparena.judge.offline",
        "RuleSettings": "shoparena.judge.rules",
    },
)

__all__ = [
    "Judge",
    "JudgeCallFailed",
    "JudgeCircuitOpen",
    "JudgeError",
    "JudgeFileReport",
    "JudgeRunStats",
    "JudgeSpecError",
    "LLMJudge",
    "OfflineJudge",
    "RuleSettings",
    "judge_file",
    "judge_record",
    "make_judge",
]
