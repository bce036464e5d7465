# expect: integrity.shipped_data
# evasion: reads a data file from the agent's directory
import json
import os


def agent_main(problem_data):
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "answers.json")) as handle:
        return json.load(handle)[problem_data["query"]]
