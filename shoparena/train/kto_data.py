"""KTO examples from trajectory records (SPEC §9.4): unpaired, one per assistant turn, labelled by the
episode's strict score.

A multi-turn episode is not one prompt and one completion: the tool results between the model's turns
are the environment's words, not the model's, and must never be trained on. So each assistant turn is
one example — prompt: the conversation before it, rendered by the checkpoint's own chat template with
the generation prompt (exactly what the model saw when it wrote the turn); completion: the turn as the
template renders it, through its end-of-turn token — and carries the episode's label: desirable when
the episode scored 1.0 under the strict rules, undesirable otherwise.

Records are read by the corpus normaliser (`corpus.normalise.from_trajectory`, tool-call arguments as
objects as in the corpus export), so KTO sees the same messages SFT did. A record not scored in strict
mode is a reject (its label would be the wrong rule's), as is one that does not normalise or whose
rendering is not prefix-stable; the batch goes on and the rejects say why.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from shoparena.corpus.normalise import NormaliseError, from_trajectory
from shoparena.train.chat_render import row_system_prompt, serving_messages
from shoparena.train.rollouts import strict_pass


class KTOExample(BaseModel):
    prompt: str
    completion: str
    label: bool
    problem_id: str
    record_id: str
    turn: int
    """Index of the assistant message in the conversation."""


class KTOReject(BaseModel):
    source: str
    record_id: str | None
    reason: str
    detail: str


class KTOData(BaseModel):
    examples: list[KTOExample]
    rejects: list[KTOReject]
    episodes: int
    """Records that yielded examples."""
    desirable_episodes: int

    @property
    def desirable(self) -> int:
        return sum(e.label for e in self.examples)

    @property
    def undesirable(self) -> int:
        return len(self.examples) - self.desirable

    def counts(self) -> dict[str, int]:
        return {
            "episodes": self.episodes,
            "desirable_episodes": self.desirable_episodes,
            "undesirable_episodes": self.episodes - self.desirable_episodes,
            "examples": len(self.examples),
            "desirable_examples": self.desirable,
            "undesirable_examples": self.undesirable,
            "rejected_records": len(self.rejects),
        }


def render(tokenizer: Any, messages: list[dict], tools: list[dict] | None, generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(
        messages, tools=tools or None, tokenize=False, add_generation_prompt=generation_prompt
    )


def turn_examples(
    tokenizer: Any, messages: list[dict], tools: list[dict] | None
) -> list[tuple[int, str, str]]:
    """(assistant index, prompt text, completion text) per assistant turn. The completion ends at the
    template's end-of-turn token (trailing newline dropped, so TRL does not append a second one).
    Raises ValueError when the template does not render the prompt as a prefix of prompt + turn."""
    out = []
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or index == 0:
            continue
        prompt = render(tokenizer, messages[:index], tools, True)
        full = render(tokenizer, messages[: index + 1], tools, False)
        if not full.startswith(prompt):
            raise ValueError(
                f"the chat template does not render assistant turn {index} after its prompt "
                f"(prompt ends {prompt[-60:]!r}, prompt + turn has {full[len(prompt) - 60 : len(prompt)]!r} there)"
            )
        completion = full[len(prompt) :]
        eos = tokenizer.eos_token or ""
        if eos and completion.rstrip("\n").endswith(eos):
            completion = completion.rstrip("\n")
        if completion.strip():
            out.append((index, prompt, completion))
    return out


def kto_examples(records: Iterable[tuple[str, dict]], tokenizer: Any) -> KTOData:
    """`records`: (source, trajectory record) pairs, e.g. `path:line`."""
    examples: list[KTOExample] = []
    rejects: list[KTOReject] = []
    episodes = desirable = 0
    for source, record in records:
        record_id = record.get("record_id") if isinstance(record, dict) else None
        if record.get("scoring_mode") != "strict":
            rejects.append(
                KTOReject(
                    source=source,
                    record_id=record_id,
                    reason="not_strict",
                    detail=f"scored in {record.get('scoring_mode')!r} mode; KTO labels need strict scoring "
                    "(sample with `shoparena train teacher`, or `shoparena eval --mode strict`)",
                )
            )
            continue
        try:
            row = from_trajectory(record, source)
        except NormaliseError as exc:
            rejects.append(
                KTOReject(source=source, record_id=record_id, reason=exc.reason, detail=exc.detail)
            )
            continue
        # the serving rendering (chat_render.serving_messages): KTO's prompts are the agent's prompts
        messages = serving_messages(row.messages, row_system_prompt(row.model_dump(mode="json")))
        try:
            turns = turn_examples(tokenizer, messages, row.tools)
        except Exception as exc:  # a template error names the record rather than stopping the batch
            rejects.append(KTOReject(source=source, record_id=record_id, reason="render", detail=str(exc)))
            continue
        if not turns:
            rejects.append(
                KTOReject(source=source, record_id=record_id, reason="no_turns", detail="no assistant turn")
            )
            continue
        label = strict_pass(record)
        episodes += 1
        desirable += label
        for index, prompt, completion in turns:
            examples.append(
                KTOExample(
                    prompt=prompt,
                    completion=completion,
                    label=label,
                    problem_id=row.metadata.problem_id,
                    record_id=record_id or "",
                    turn=index,
                )
            )
    return KTOData(examples=examples, rejects=rejects, episodes=episodes, desirable_episodes=desirable)
