# expect: integrity.char_codes
# evasion: an id spelled with chr()
def agent_main(problem_data):
    pid = chr(53) + chr(48) + chr(51) + chr(53) + chr(54) + chr(56) + chr(55) + chr(55) + chr(57) + chr(52)
    return [pid]
