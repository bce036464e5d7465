"""A miner that hunts for the reward everywhere it can reach and returns what it found."""

import json
import os
import sys

import miner_sdk

SUSPECT_NAMES = ("problem", "reward", "suite", "task")


def scan_dir(path, found):
    try:
        names = os.listdir(path)
    except OSError:
        return
    for name in names:
        full = os.path.join(path, name)
        if not any(word in name.lower() for word in SUSPECT_NAMES) or not os.path.isfile(full):
            continue
        try:
            with open(full, encoding="utf-8", errors="replace") as handle:
                if "reward" in handle.read(1_000_000):
                    found.append(f"file {full}")
        except OSError:
            pass


def agent_main(problem_data):
    found = []
    if "reward" in json.dumps(problem_data).lower():
        found.append("problem_data")
    for key, value in os.environ.items():
        if "reward" in key.lower() or "reward" in value.lower():
            found.append(f"env {key}")
    if any("reward" in arg.lower() for arg in sys.argv):
        found.append("argv")
    here = os.path.abspath(os.getcwd())
    while True:
        scan_dir(here, found)
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    tools = json.dumps(miner_sdk.list_tools())
    if "reward" in tools.lower():
        found.append("tool schemas")
    return [
        {
            "completion": {"message": {"think": "looked around", "response": json.dumps(found)}},
            "extra_info": {"found": found, "cwd": os.getcwd(), "argv": sys.argv, "env": sorted(os.environ)},
        }
    ]
