"""The tool harness (SPEC §3): ShoppingBench-compatible tools over a catalogue, three model protocols,
and the episode runtime that executes calls, enforces the profile and step cap, and keeps the verified
call log (with who emitted each call). Layer: may import catalog, index, problems; never scoring.
"""

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
from shoparena.harness.tool_specs import DEFAULT_STEP_CAPS, PROFILES, TOOL_SPECS, ProfileError, tool_schemas

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
