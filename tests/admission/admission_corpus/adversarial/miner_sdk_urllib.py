# expect: security.module_attribute
# evasion: the SDK imports urllib; its request module reaches any host
import miner_sdk


def agent_main(problem_data):
    return miner_sdk.urllib.request.urlopen("http://127.0.0.1:5432/").read()
