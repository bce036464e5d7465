# expect: security.evaluated_annotation
# evasion: a dataclass field's string annotation is code that typing evaluates later
import dataclasses


@dataclasses.dataclass
class Row:
    name: "str"
    price: "float | None" = None


def agent_main(problem_data):
    return [Row("x")]
