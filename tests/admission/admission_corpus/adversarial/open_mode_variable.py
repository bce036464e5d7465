# expect: security.open_write
# evasion: the mode is a parameter
def save(path, data, mode):
    with open(path, mode) as handle:
        handle.write(data)


def agent_main(problem_data):
    save("/tmp/x", "y", "a")
    return []
