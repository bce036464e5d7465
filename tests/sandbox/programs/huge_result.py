"""A result of 1 GB: write it to the result channel until the sandbox stops taking it."""

import os
import sys

chunk = b"r" * (1 << 20)
written = 0
try:
    with open(os.environ["SHOPARENA_RESULT_PATH"], "wb", buffering=0) as channel:
        for _ in range(1024):
            channel.write(chunk)
            written += len(chunk)
except BrokenPipeError as exc:
    print(f"refused after {written} bytes: {exc}", file=sys.stderr)
