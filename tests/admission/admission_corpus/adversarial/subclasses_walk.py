# expect: security.dunder_attribute
# evasion: the classic object.__subclasses__ walk
def agent_main(problem_data):
    for cls in ().__class__.__base__.__subclasses__():
        if cls.__name__ == "Popen":
            cls(["id"])
    return []
