"""The LLM judge over OpenAI-compatible endpoints, with the run-level policy that keeps a batch honest:

- retries with exponential backoff for transport trouble (timeouts, refused connections, 429, 5xx);
- an ordered model fallback list: each problem tries the models in order; a model that answers
  something with no usable verdict is dropped for the rest of the run (it will not get better), as is
  one the endpoint does not know (HTTP 404);
- a circuit breaker: after `breaker_threshold` consecutive problems on which every judge call failed,
  every further call raises `JudgeCircuitOpen` at once; the run counts as failed when more than half of
  the problems it tried to judge could not be judged (`JudgeRunStats.failed`).

Whatever a model answers is verified in code (`verify.py`) before it becomes a verdict.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shoparena.judge.endpoint import ChatEndpoint, EndpointError
from shoparena.judge.prompt import PROMPT_VERSION, UnparseableVerdict, judge_messages, parse_claim
from shoparena.judge.rules import DEFAULT_RULES, RuleSettings
from shoparena.judge.trace import read_trace
from shoparena.judge.verify import verify_claim
from shoparena.problems.models import Problem
from shoparena.records.trajectory import TrajectoryRecord
from shoparena.records.verdict import JudgeVerdict

LLM_JUDGE_VERSION = f"llm-{PROMPT_VERSION}"


class JudgeError(RuntimeError):
    """No verdict for this record; the batch goes on (or stops, for `JudgeCircuitOpen`)."""


class JudgeCallFailed(JudgeError):
    """Every model failed on one problem; the message lists what each did."""


class JudgeCircuitOpen(JudgeError):
    """Too many consecutive problems failed: the judge refuses further calls for this run."""


@dataclass
class JudgeRunStats:
    problems: int = 0
    problems_failed: int = 0
    requests: int = 0
    requests_failed: int = 0
    consecutive_failures: int = 0
    circuit_open: bool = False
    dropped_models: dict[str, str] = field(default_factory=dict)
    """model → why it was dropped for the rest of the run."""

    @property
    def failed(self) -> bool:
        """The run's judging failed: the breaker tripped, or more than half the problems went unjudged."""
        return self.circuit_open or self.problems_failed * 2 > self.problems


class LLMJudge:
    """`judge(record, problem=None) -> JudgeVerdict` through a chat model; raises `JudgeError` on failure."""

    name = "openai"
    version = LLM_JUDGE_VERSION

    def __init__(
        self,
        models: Sequence[str],
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 1.0,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        json_mode: bool = False,
        breaker_threshold: int = 3,
        rules: RuleSettings = DEFAULT_RULES,
        sleep: Callable[[float], None] = time.sleep,
    ):
        models = [m.strip() for m in models if m and m.strip()]
        if not models:
            raise ValueError("the LLM judge needs at least one model name")
        self.models = list(dict.fromkeys(models))
        self.endpoint = ChatEndpoint(base_url, api_key, timeout_s)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.json_mode = json_mode
        self.breaker_threshold = breaker_threshold
        self.rules = rules
        self.stats = JudgeRunStats()
        self._sleep = sleep

    @property
    def active_models(self) -> list[str]:
        return [m for m in self.models if m not in self.stats.dropped_models]

    def _payload(self, model: str, messages: list[dict[str, str]]) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.json_mode:
            payload["response_format"] = {"type": "json_object"}
        return payload

    def _ask(self, model: str, messages: list[dict[str, str]], problems: list[str]) -> str | None:
        """The model's answer text, or None after recording why there is none."""
        for attempt in range(self.max_retries + 1):
            self.stats.requests += 1
            try:
                return self.endpoint.complete(self._payload(model, messages))
            except EndpointError as exc:
                self.stats.requests_failed += 1
                problems.append(f"{model}: {exc}")
                if exc.status == 404:
                    self.stats.dropped_models[model] = f"unknown to the endpoint: {exc}"
                    return None
                if not exc.retryable or attempt == self.max_retries:
                    return None
                self._sleep(self.backoff_s * 2**attempt)
        return None

    def __call__(self, record: TrajectoryRecord, problem: Problem | None = None) -> JudgeVerdict:
        if self.stats.circuit_open:
            raise JudgeCircuitOpen(
                f"judge circuit open after {self.breaker_threshold} consecutive problems failed; "
                f"not judging {record.problem.problem_id}"
            )
        self.stats.problems += 1
        messages = judge_messages(record)
        problems: list[str] = []
        for model in self.active_models:
            text = self._ask(model, messages, problems)
            if text is None:
                continue
            try:
                claim = parse_claim(text)
            except UnparseableVerdict as exc:
                self.stats.requests_failed += 1
                self.stats.dropped_models[model] = f"unparseable verdict: {exc}"
                problems.append(f"{model}: dropped for the rest of the run: {exc}")
                continue
            self.stats.consecutive_failures = 0
            return verify_claim(
                read_trace(record),
                claim,
                record.usage,
                judge_model=model,
                judge_version=self.version,
                rules=self.rules,
            )
        self.stats.problems_failed += 1
        self.stats.consecutive_failures += 1
        if self.stats.consecutive_failures >= self.breaker_threshold:
            self.stats.circuit_open = True
        if not problems:
            problems.append(f"no model left (dropped: {', '.join(self.stats.dropped_models) or 'none'})")
        raise JudgeCallFailed(
            f"record {record.record_id} (problem {record.problem.problem_id}): every judge model failed: "
            + " | ".join(problems[-6:])
        )

    def close(self) -> None:
        """Connections are per request; nothing to release."""
