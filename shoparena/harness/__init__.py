"""The tool harness (SPEC §3): ShoppingBench-compatible tools over a catalogue, three model protocols,
and the episode runtime that executes calls, enforces the profile and step cap, and keeps the verified
call log (with who emitted each call). Layer: may import catalog, index, problems; never scoring.
"""

from typing import TYPE_CHECKING

from shoparena.records.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from shoparena.harness.episode import Episode, load_shops
    from shoparena.harness.models import EpisodeSummary, Observation, ParsedCall, ParsedTurn
    from shoparena.harness.protocols import (
        OPENAI,
        PROTOCOL_ALIASES,
        PROTOCOLS,
        QWEN3,
        UPSTREAM,
        OpenAIProtocol,
        Protocol,
        Qwen3Protocol,
        UpstreamProtocol,
        canonical_protocol,
        get_protocol,
        protocol_spellings,
        qwen3_tools_system,
        upstream_system_prompt,
    )
    from shoparena.harness.record_limits import RecordLimits
    from shoparena.harness.tool_specs import (
        DEFAULT_STEP_CAPS,
        PROFILES,
        TOOL_SPECS,
        ProfileError,
        tool_schemas,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Episode": "shoparena.harness.episode",
        "load_shops": "shoparena.harness.episode",
        "EpisodeSummary": "shoparena.harness.models",
        "Observation": "shoparena.harness.models",
        "ParsedCall": "shoparena.harness.models",
        "ParsedTurn": "shoparena.harness.models",
        "OPENAI": "shoparena.harness.protocols",
        "PROTOCOL_ALIASES": "shoparena.harness.protocols",
        "PROTOCOLS": "shoparena.harness.protocols",
        "QWEN3": "shoparena.harness.protocols",
        "UPSTREAM": "shoparena.harness.protocols",
        "OpenAIProtocol": "shoparena.harness.protocols",
        "Protocol": "shoparena.harness.protocols",
        "Qwen3Protocol": "shoparena.harness.protocols",
        "UpstreamProtocol": "shoparena.harness.protocols",
        "canonical_protocol": "shoparena.harness.protocols",
        "get_protocol": "shoparena.harness.protocols",
        "protocol_spellings": "shoparena.harness.protocols",
        "qwen3_tools_system": "shoparena.harness.protocols",
        "upstream_system_prompt": "shoparena.harness.protocols",
        "RecordLimits": "shoparena.harness.record_limits",
        "DEFAULT_STEP_CAPS": "shoparena.harness.tool_specs",
        "PROFILES": "shoparena.harness.tool_specs",
        "TOOL_SPECS": "shoparena.harness.tool_specs",
        "ProfileError": "shoparena.harness.tool_specs",
        "tool_schemas": "shoparena.harness.tool_specs",
    },
)

__all__ = [
    "DEFAULT_STEP_CAPS",
    "OPENAI",
    "PROFILES",
    "PROTOCOLS",
    "PROTOCOL_ALIASES",
    "QWEN3",
    "TOOL_SPECS",
    "UPSTREAM",
    "Episode",
    "EpisodeSummary",
    "Observation",
    "OpenAIProtocol",
    "ParsedCall",
    "ParsedTurn",
    "ProfileError",
    "Protocol",
    "Qwen3Protocol",
    "RecordLimits",
    "UpstreamProtocol",
    "canonical_protocol",
    "get_protocol",
    "load_shops",
    "protocol_spellings",
    "qwen3_tools_system",
    "tool_schemas",
    "upstream_system_prompt",
]
