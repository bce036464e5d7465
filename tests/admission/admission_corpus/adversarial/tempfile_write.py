# expect: security.file_write
# evasion: tempfile creates files
import tempfile


def agent_main(problem_data):
    tempfile.NamedTemporaryFile(delete=False).write(b"x")
    return []
