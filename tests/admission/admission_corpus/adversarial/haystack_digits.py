# expect: integrity.unanalysable
# evasion: the digits scattered through a long haystack and filtered out at run time
HAYSTACK = ("abcdefghij" * 7000)[:35000] + "5" + ("klmnopqrst" * 3000) + "0" + "uvwxyz" * 5000 + "35687794"


def agent_main(problem_data):
    return ["".join(c for c in HAYSTACK if c.isdigit())]
