# expect: security.frame_internals
# evasion: a generator's frame leads to the caller's globals
def agent_main(problem_data):
    gen = (x for x in [1])
    return gen.gi_frame.f_back.f_globals
