# expect: security.evaluated_annotation
# evasion: singledispatch's register reads the annotation with get_type_hints, which evaluates a string built at run time
import functools

HINT = "".join(reversed(")'di'(metsys.)'so'(tropmi_" [::-1][::-1]))


@functools.singledispatch
def handle(value):
    return value


@handle.register
def _(value: HINT):
    return value


def agent_main(problem_data):
    return handle(problem_data)
