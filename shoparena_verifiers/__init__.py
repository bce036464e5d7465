"""The verifiers plugin id `shoparena-verifiers`: `vf-eval shoparena-verifiers --env.taskset.catalog DIR ...`.

verifiers imports a taskset by its id as a top-level module and reads its `__all__` for exactly one
Taskset, Harness and Env subclass; it cannot import a dotted module, so this package re-exports those of
`shoparena.integrations.verifiers` (where everything lives).
"""

from shoparena.integrations.verifiers import (
    ShopEnv,
    ShopHarness,
    ShopTaskset,
    load_environment,
    to_trajectory,
)

__all__ = ["ShopEnv", "ShopHarness", "ShopTaskset", "load_environment", "to_trajectory"]
