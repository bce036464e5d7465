# expect: integrity.answer_table
# evasion: two rows only (no table shape), XORed with a key read from the problem, decoded row by row
ROWS = [b"ojiolbmmcn", b"mhbkcijnlo"]


def agent_main(problem_data):
    out = []
    for row in ROWS:
        out.append(bytes(b ^ (len(problem_data) + 81) for b in row).decode())
    return out
