# expect: integrity.assembled_id
# evasion: the id written backwards
def agent_main(problem_data):
    return ["4977865305"[::-1]]
