# expect: security.private_attribute
# evasion: builtins' private state (the licence file list)
def agent_main(problem_data):
    license._Printer__filenames = ["/etc/passwd"]
    return str(license)
