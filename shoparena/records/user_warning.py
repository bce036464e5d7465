"""How a warning meant for the user is printed (kept here, below every stage, so that the CLI can
install it without importing a stage)."""

from __future__ import annotations

import sys


def one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """`warnings.showwarning` for warnings meant for the user (an unconfined sandbox, say): one line
    each, without the source line Python's default format quotes. The CLI and pool workers install it."""
    print(f"warning: {message}", file=file if file is not None else sys.stderr)
