# expect: security.banned_member
# evasion: lifts the int→str digit limit to print huge numbers whose digits hide answers
import sys


def agent_main(problem_data):
    sys.set_int_max_str_digits(0)
    return [str(7**20000)[1234:1244]]
