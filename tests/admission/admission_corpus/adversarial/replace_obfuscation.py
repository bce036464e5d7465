# expect: integrity.assembled_id
# evasion: separators removed at run time
def agent_main(problem_data):
    return ["5035-687-794".replace("-", "")]
