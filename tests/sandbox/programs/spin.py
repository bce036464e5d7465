"""An endless loop: burn CPU for ever (or sleep for ever with `sleep` as the argument)."""

import sys
import time

if sys.argv[1:] == ["sleep"]:
    while True:
        time.sleep(1)
while True:
    pass
