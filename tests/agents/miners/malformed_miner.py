"""A miner whose output shape depends on the query: a dict instead of a list, or steps missing fields."""


def agent_main(problem_data):
    if "dict" in problem_data["query"]:
        return {"steps": "should have been a list"}
    return [
        {"completion": {"message": {"think": "fine"}}},
        {"completion": {"message": {"tool_call": [{"parameters": {"q": "no name"}}]}}},
        {"no_completion": True},
    ]
