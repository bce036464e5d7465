# expect: integrity.char_codes
# evasion: digit character codes mapped through chr
CODES = [53, 48, 51, 53, 54, 56, 55, 55, 57, 52]


def agent_main(problem_data):
    return ["".join(map(chr, CODES))]
