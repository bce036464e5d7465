# expect: integrity.encoded_blob
# evasion: packed binary data
PACKED = b"\x01\x2c\x28\xb7\x72\x01\x06\xe5\x3a\xb6\x00\x80\x72\x8b\xc3\xe4\x9f\x11"


def agent_main(problem_data):
    return [PACKED.hex()]
