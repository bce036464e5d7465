# expect: security.banned_member
# evasion: string.Formatter().get_field is getattr by string
import string


def agent_main(problem_data):
    return string.Formatter().get_field("0.__class__", [problem_data], {})
