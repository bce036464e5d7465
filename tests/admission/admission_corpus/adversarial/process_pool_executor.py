# expect: security.process_pool
# evasion: a process pool starts interpreters (and pickles callables) outside the agent's process
import concurrent.futures


def agent_main(problem_data):
    with concurrent.futures.ProcessPoolExecutor() as pool:
        return list(pool.map(str, [1]))
