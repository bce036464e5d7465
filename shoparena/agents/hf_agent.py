"""An agent over a local Hugging Face causal LM: the checkpoints the training stages produce (SPEC §9).

The prompt is the checkpoint's own chat template, so the model sees exactly the format it was trained
on: with protocol `qwen` and a template that renders tools (Qwen3's does), the tool schemas and the
`tool` results go through the template; otherwise the protocol writes them into the messages. The
output is parsed by the harness protocol like any other model's. torch and transformers are imported
only when an agent is built, so the rest of shoparena runs without them (extra `hf`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from shoparena.agents.base import (
    Agent,
    AgentRun,
    AgentSpecError,
    ProblemView,
    check_options,
    episode_seed,
)
from shoparena.agents.chat_loop import (
    DEFAULT_SYSTEM_PROMPT,
    ChatLoop,
    Completion,
    ModelError,
)
from shoparena.harness.episode import Episode
from shoparena.harness.protocols import canonical_protocol

TEXT_PROTOCOLS = ("qwen3", "upstream")
"""A local model writes text: the protocols that read calls from it (spelled any way the harness knows)."""


class Generation(BaseModel):
    """One generate call: the new text and its token counts."""

    model_config = ConfigDict(extra="forbid")

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


def template_renders_tools(chat_template: Any) -> bool:
    """Whether a chat template reads the `tools` variable (Qwen3, Llama 3.1, Mistral … do)."""
    if isinstance(chat_template, dict):
        chat_template = chat_template.get("tool_use") or chat_template.get("default") or ""
    return isinstance(chat_template, str) and "tools" in chat_template


def pick_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"hf agent: device {device!r} asked for but torch sees no CUDA device")
    return device


def is_adapter_dir(path: str) -> bool:
    """A PEFT adapter directory (what the training stages write): `adapter_config.json`, no full model."""
    return (Path(path) / "adapter_config.json").is_file()


def adapter_base_path(path: str) -> str:
    """The base model an adapter directory names (`base_model_name_or_path`)."""
    import json

    base = json.loads((Path(path) / "adapter_config.json").read_text()).get("base_model_name_or_path")
    if not base:
        raise ValueError(f"{path}/adapter_config.json names no base_model_name_or_path")
    return base


def load_adapter_model(path: str, torch_dtype: Any, trust_remote_code: bool) -> Any:
    """The base model named in the adapter's config with the adapter applied (peft imported only here).
    The training stages save the tokenizer beside the adapter, so the prompt format is the trained one."""
    from transformers import AutoModelForCausalLM

    base = adapter_base_path(path)
    try:
        from peft import PeftModel
    except ImportError as exc:
        raise ValueError(
            f"{path} is a LoRA adapter; loading it needs peft (pip install 'shoparena[train]')"
        ) from exc
    if is_adapter_dir(base):  # a stage trained on top of an earlier stage's adapter: merge that one first
        model = load_adapter_model(base, torch_dtype, trust_remote_code).merge_and_unload()
    else:
        model = AutoModelForCausalLM.from_pretrained(
            base, dtype=torch_dtype, trust_remote_code=trust_remote_code
        )
    return PeftModel.from_pretrained(model, path)


class HFAgent(Agent):
    """Generates with `transformers` on CPU or GPU; one `generate` per turn, no batching across problems."""

    kind = "hf"

    def __init__(
        self,
        path: str,
        *,
        device: str = "auto",
        protocol: str = "qwen",
        max_new_tokens: int = 2048,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        dtype: str = "auto",
        enable_thinking: bool | None = None,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        max_turns: int | None = None,
        trust_remote_code: bool = False,
        version: str = "0",
    ):
        if canonical_protocol(protocol) not in TEXT_PROTOCOLS:
            raise ValueError(
                f"hf agent: protocol {protocol!r} is not a text protocol; a local model writes text, "
                "use qwen3 (or qwen) or upstream (or tags)"
            )
        if max_new_tokens < 1:
            raise ValueError(f"hf agent: max_new_tokens must be at least 1, got {max_new_tokens}")
        super().__init__(Path(path).name or path, version)
        self.path = path
        self.protocol = canonical_protocol(protocol)
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self._episode_seed: int | None = None
        self.template_kwargs: dict[str, Any] = {}
        if enable_thinking is not None:
            self.template_kwargs["enable_thinking"] = enable_thinking
        self.device = pick_device(device)
        self.tokenizer, self.model = self._load(path, dtype, trust_remote_code)
        if not self.tokenizer.chat_template:
            raise ValueError(
                f"hf agent: {path} has no chat template (tokenizer_config.json / chat_template.jinja)"
            )
        self.eos_token_ids = self._eos_token_ids()
        self.context_length = getattr(self.model.config, "max_position_embeddings", None)
        via_template = self.protocol == "qwen3" and template_renders_tools(self.tokenizer.chat_template)
        self.loop = ChatLoop(
            self.complete,
            protocol,
            tools_via="api" if via_template else "prompt",
            system_prompt=system_prompt,
            max_turns=max_turns,
        )

    def _load(self, path: str, dtype: str, trust_remote_code: bool) -> tuple[Any, Any]:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if dtype == "auto":
            torch_dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        else:
            torch_dtype = getattr(torch, dtype, None)
            if not isinstance(torch_dtype, torch.dtype):
                raise ValueError(f"hf agent: unknown dtype {dtype!r}; use auto, float32, bfloat16, float16")
        try:
            source = path
            if is_adapter_dir(path) and not (Path(path) / "tokenizer_config.json").is_file():
                source = adapter_base_path(path)  # an adapter saved without its tokenizer: the base's
            tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
            if is_adapter_dir(path):
                model = load_adapter_model(path, torch_dtype, trust_remote_code)
            else:
                model = AutoModelForCausalLM.from_pretrained(
                    path, dtype=torch_dtype, trust_remote_code=trust_remote_code
                )
        except (OSError, ValueError) as exc:
            raise ValueError(f"hf agent: cannot load a causal LM checkpoint from {path}: {exc}") from exc
        model.to(self.device)
        model.eval()
        return tokenizer, model

    def _eos_token_ids(self) -> list[int]:
        """Every id that ends a turn: the generation config's, the tokenizer's, and ChatML's <|im_end|>."""
        ids: set[int] = set()
        configured = getattr(self.model.generation_config, "eos_token_id", None)
        if isinstance(configured, int):
            ids.add(configured)
        elif configured:
            ids.update(configured)
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        im_end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        if isinstance(im_end, int) and im_end != self.tokenizer.unk_token_id:
            ids.add(im_end)
        return sorted(ids)

    # -- one model call --------------------------------------------------------------------------
    def render_prompt(self, messages: list[dict], tools: list[dict] | None) -> str:
        """The prompt text for the next assistant turn, through the checkpoint's chat template."""
        return self.tokenizer.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=True, **self.template_kwargs
        )

    def generate(
        self,
        prompt: str,
        *,
        max_new_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        seed: int | None = None,
    ) -> Generation:
        """Continue `prompt`; the hook a test or a faster backend replaces.

        The keyword arguments override the agent's own settings for this call only (the model server
        takes them from each request); None keeps the agent's. `seed` reseeds torch before sampling.
        """
        import torch

        max_new_tokens = self.max_new_tokens if max_new_tokens is None else max_new_tokens
        temperature = self.temperature if temperature is None else temperature
        top_p = self.top_p if top_p is None else top_p
        if max_new_tokens < 1:
            raise ValueError(f"hf agent: max_new_tokens must be at least 1, got {max_new_tokens}")

        encoded = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        prompt_tokens = int(encoded["input_ids"].shape[1])
        if self.context_length and prompt_tokens >= self.context_length:
            raise ModelError(
                f"the prompt has {prompt_tokens} tokens; {self.path} takes at most {self.context_length}"
            )
        max_new = max_new_tokens
        if self.context_length:
            max_new = min(max_new, self.context_length - prompt_tokens)
        options: dict[str, Any] = {"max_new_tokens": max_new, "do_sample": temperature > 0}
        if temperature > 0:
            options.update(temperature=temperature, top_p=top_p)
        if seed is not None:
            torch.manual_seed(seed)
        pad = self.tokenizer.pad_token_id
        with torch.inference_mode():
            output = self.model.generate(
                **{k: v.to(self.device) for k, v in encoded.items()},
                eos_token_id=self.eos_token_ids,
                pad_token_id=pad if pad is not None else self.eos_token_ids[0],
                **options,
            )
        new_ids = output[0, prompt_tokens:].tolist()
        stopped = bool(new_ids) and new_ids[-1] in self.eos_token_ids
        return Generation(
            text=self.tokenizer.decode(new_ids, skip_special_tokens=True),
            prompt_tokens=prompt_tokens,
            completion_tokens=len(new_ids),
            finish_reason="stop" if stopped else "length",
        )

    def complete(self, messages: list[dict], tools: list[dict] | None) -> Completion:
        generation = self.generate(self.render_prompt(messages, tools))
        return Completion(
            output=generation.text,
            prompt_tokens=generation.prompt_tokens,
            completion_tokens=generation.completion_tokens,
            finish_reason=generation.finish_reason,
        )

    def begin_episode(self, problem_id: str, sample: int) -> None:
        self._episode_seed = None if self.seed is None else episode_seed(self.seed, problem_id, sample)

    def run(self, episode: Episode, view: ProblemView) -> AgentRun:
        seed = self._episode_seed if self._episode_seed is not None else self.seed
        self._episode_seed = None
        if seed is not None:
            import torch

            torch.manual_seed(seed)  # per episode: a sample does not depend on which ran before it
        return self.loop.run(episode)

    def system_prompt_for(self, tools: list[dict]) -> str | None:
        """Lets a runner record the system prompt in the episode trace (see ChatLoop.system_prompt_for)."""
        return self.loop.system_prompt_for(tools)

    def close(self) -> None:
        import torch

        self.model = None
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()


def make_hf_agent(target: str, **options: Any) -> HFAgent:
    """`hf:PATH`: a checkpoint directory, a LoRA adapter directory (base model from its
    `adapter_config.json`), or a hub id already in the local cache."""
    if not target.strip():
        raise ValueError("hf agent: give a checkpoint path, e.g. hf:./runs/sft/final")
    check_options(f"hf:{target}", HFAgent, options, skip=1)
    check_model_dir(target)
    return HFAgent(target, **options)


MODEL_DIR_HINT = "hf: takes a local checkpoint or LoRA adapter directory"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def check_model_dir(target: str) -> None:
    """Refuse, before torch loads anything, a target that is not a model directory, in words about
    directories (transformers would answer about hub repo ids or tokenizer backends)."""
    path = Path(target).expanduser()
    if not path.exists():
        if cached_hub_id(target):
            return
        raise AgentSpecError(f"hf:{target}: no such directory ({MODEL_DIR_HINT})")
    problem = model_dir_problem(path)
    if problem:
        raise AgentSpecError(f"hf:{target}: {problem} ({MODEL_DIR_HINT})")


def model_dir_problem(path: Path) -> str | None:
    """Why the existing `path` is not a checkpoint or adapter directory (None: it looks like one)."""
    if not path.is_dir():
        return "not a directory"
    if is_adapter_dir(str(path)):
        return None  # its base model (and maybe its tokenizer) come from adapter_config.json
    missing = [] if (path / "config.json").is_file() else ["config.json"]
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        missing.append(f"tokenizer ({' or '.join(TOKENIZER_FILES)})")
    if missing:
        return f"the directory holds no {' and no '.join(missing)}: not a checkpoint"
    return None


def cached_hub_id(target: str) -> bool:
    """Whether `target` is a hub repo id already in the local cache (loaded from there, not downloaded)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(target, "config.json"), str)
    except Exception:  # not a repo id at all (a path), or no huggingface_hub
        return False
