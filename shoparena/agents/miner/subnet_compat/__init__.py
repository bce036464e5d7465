"""SN15's miner-facing surface, so a subnet miner file runs here unchanged (issue 23).

The subnet's template and docs have miners import `src.agent.agent_interface` (Tool,
create_dialogue_step, execute_tool_call, generate_tool_call_id, …) and `src.agent.proxy_client`
(ProxyClient: `get("/search/find_product", params)`, `post("/inference/chat/completions", body)`).
These modules give the same names and behaviour, written here from the subnet's public API, and built
on `miner_sdk`: every search goes to the episode's tool server and every chat to its inference proxy,
so each call lands in the verified log under the same origins and limits as any miner's.

Like the runner and the SDK, the modules use the standard library only and no shoparena imports: the
file agent places them in the sandbox's /app (`sandbox.SUBNET_FILES`) and the runner maps
`src`, `src.agent`, `src.agent.agent_interface` and `src.agent.proxy_client` onto them. This package's
own `__init__` is never shipped.
"""
