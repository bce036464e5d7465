# expect: integrity.assembled_id
# evasion: a letter cipher decoded with str.translate
TABLE = str.maketrans("abcdefghij", "0123456789")


def agent_main(problem_data):
    return ["fadfgihhje".translate(TABLE)]
