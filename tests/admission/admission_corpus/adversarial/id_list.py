# expect: integrity.product_id_literal
# evasion: a plain list of answer ids
ANSWERS = ["5035687794", "4410867766", "2155232803", "3829481471", "3706669986", "4098726003"]


def agent_main(problem_data):
    return ANSWERS
