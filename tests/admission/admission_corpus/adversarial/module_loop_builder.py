# expect: integrity.assembled_id
# evasion: a module-level loop builds the answer
ANSWER = ""
for code in (53, 48, 51, 53, 54, 56, 55, 55, 57, 52):
    ANSWER += chr(code)


def agent_main(problem_data):
    return [ANSWER]
