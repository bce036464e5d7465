# expect: security.banned_import
# evasion: pickle runs code while loading
import pickle


def agent_main(problem_data):
    return pickle.loads(b"cos\nsystem\n(S'id'\ntR.")
