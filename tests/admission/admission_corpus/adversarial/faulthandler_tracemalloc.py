# expect: security.frame_access
# evasion: faulthandler dumps every thread's stack; tracemalloc records frames of every allocation
import faulthandler
import tracemalloc


def agent_main(problem_data):
    faulthandler.dump_traceback()
    tracemalloc.start()
    return []
