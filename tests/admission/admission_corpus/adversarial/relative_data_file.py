# expect: integrity.shipped_data
# evasion: opens a file by relative path
import json


def agent_main(problem_data):
    with open("answers.json", encoding="utf-8") as handle:
        return json.load(handle)
