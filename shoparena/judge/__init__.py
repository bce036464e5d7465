"""The reasoning judge (SPEC §7): per-trajectory process supervision grounded in the verified call log.

A judge is a callable `judge(record, problem=None) -> JudgeVerdict`. Build one with
`make_judge("offline")` or `make_judge("openai:MODEL", base_url=..., fallback=[...])`; every judge's
claim is verified in code (`verify.py`) before it becomes a verdict. Sits above agents: it reads
`TrajectoryRecord`, and the runner receives it only as a callable.
"""

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
