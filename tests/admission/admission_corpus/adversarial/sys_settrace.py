# expect: security.banned_member
# evasion: a trace function sees every frame
import sys


def tracer(frame, event, arg):
    return tracer


def agent_main(problem_data):
    sys.settrace(tracer)
    return []
