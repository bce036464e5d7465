# expect: integrity.product_id_literal
# evasion: ids as integers
IDS = (5035687794, 4410867766, 2155232803, 3829481471)


def agent_main(problem_data):
    return [str(i) for i in IDS]
