"""Returns a claimed call of 27.5 MB in five fields (a 202 MB record before caps)."""


def agent_main(problem_data):
    big = "7," * 2_750_000
    call = {"name": "recommend_product", "parameters": {"product_ids": big}}
    return [{"completion": {"message": {"think": big, "tool_call": [call], "response": big}, "content": big}}]
