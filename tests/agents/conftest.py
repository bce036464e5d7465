"""The sandbox gate for tests that run miner files: they run in the real sandbox, so they fail where it
is missing, unless the machine is declared unable to sandbox (tests/sandbox/conftest.py)."""

from tests.sandbox.conftest import sandbox_ready  # noqa: F401  (a fixture, shared)
