"""An endless loop: burn CPU for ever (or sleep for ever with `sleep` as the first argument)."""

import sys
import time

if sys.argv[1:2] == ["sleep"]:  # a marker may follow
    while True:
        time.sleep(1)
while True:
    pass
