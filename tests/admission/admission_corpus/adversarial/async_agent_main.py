# expect: format.agent_main
# evasion: an async entry point
async def agent_main(problem_data):
    return []
