# expect: integrity.product_id_literal
# evasion: a JSON document inside a string
import json

TABLE = json.loads('{"a": "5035687794", "b": "4410867766", "c": "2155232803", "d": "3829481471"}')


def agent_main(problem_data):
    return TABLE
