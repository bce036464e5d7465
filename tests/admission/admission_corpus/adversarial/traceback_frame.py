# expect: security.dunder_attribute
# evasion: an exception's traceback leads to frames
def agent_main(problem_data):
    try:
        raise ValueError
    except ValueError as exc:
        return exc.__traceback__.tb_frame.f_back.f_globals
