# -*- coding: utf-7 -*-
# expect: format.encoding
# evasion: a utf-7 cookie makes Python read different code than a UTF-8 reader sees
def agent_main(problem_data):
    return []  #+AAoAIAAgACAAIABpAG0AcABvAHIAdAAgAG8AcwA-
