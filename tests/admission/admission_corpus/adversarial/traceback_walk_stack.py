# expect: security.frame_access
# evasion: traceback.walk_stack yields the live frames, and StackSummary(capture_locals=True) their locals
import traceback


def agent_main(problem_data):
    summary = traceback.StackSummary.extract(traceback.walk_stack(None), capture_locals=True)
    return [str(summary)]
