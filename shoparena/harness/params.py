"""Tool parameters: one declaration gives both the JSON schema the model sees and the argument check.

The check is hand-written rather than a JSON-schema library because it must be fast (a non-search call
costs well under a millisecond) and because its messages are read by models: each says which argument
is wrong, what was given and what is expected. Coercions are the lossless ones models need in practice:
numeric strings for numbers ("2" → 2), numbers for strings (ids as 123 → "123"), a list of ids or
prices where a comma-separated string is expected, and a JSON value given directly where a JSON *string* is declared.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from shoparena.harness import jsontext

ParamType = Literal["string", "integer", "number"]
JsonKind = Literal["object", "array"]


class ArgumentError(ValueError):
    """An argument the tool cannot accept; the message is shown to the model as is."""


class Param(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    type: ParamType
    description: str
    required: bool = False
    default: Any = None
    enum: tuple[str, ...] | None = None
    list_as_csv: bool = False
    """A string of comma-separated items; a JSON list of strings/ints is accepted and joined."""
    json_kind: JsonKind | None = None
    """A string holding JSON of this kind; the decoded value is what the tool receives."""

    def schema(self) -> dict:
        schema: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        if self.default is not None:
            schema["default"] = self.default
        return schema

    def signature(self) -> str:
        return f"{self.name}{'' if self.required else '?'}: {self.type}"

    def coerce(self, value: Any) -> Any:
        """The value the tool receives, or ArgumentError naming the argument."""
        if self.json_kind is not None:
            return self._coerce_json(value)
        if self.type == "string":
            text = self._coerce_string(value)
            if self.enum is not None and text not in self.enum:
                raise ArgumentError(f"argument {self.name!r}: {text!r} is not one of {', '.join(self.enum)}")
            return text
        if self.type == "integer":
            return self._coerce_integer(value)
        return self._coerce_number(value)

    def _wrong(self, value: Any, expected: str) -> ArgumentError:
        shown = jsontext.dumps(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return ArgumentError(f"argument {self.name!r}: expected {expected}, got {_type_name(value)} {shown}")

    def _coerce_string(self, value: Any) -> str:
        if isinstance(value, str):
            return value
        if _is_number(value):
            return _number_text(value)
        if (
            self.list_as_csv
            and isinstance(value, list)
            and all(isinstance(v, str) or _is_number(v) for v in value)
        ):
            return ",".join(v if isinstance(v, str) else _number_text(v) for v in value)
        expected = "a comma-separated string" if self.list_as_csv else "a string"
        raise self._wrong(value, expected)

    def _coerce_integer(self, value: Any) -> int:
        if isinstance(value, bool):
            raise self._wrong(value, "an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise self._wrong(value, "an integer")

    def _coerce_number(self, value: Any) -> float:
        if isinstance(value, bool):
            raise self._wrong(value, "a number")
        number: float | None = None
        if isinstance(value, int | float):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        if number is None or not math.isfinite(number):
            raise self._wrong(value, "a finite number")
        return number

    def _coerce_json(self, value: Any) -> Any:
        python_type = dict if self.json_kind == "object" else list
        expected = f"a JSON {self.json_kind} (as a string or directly)"
        if isinstance(value, str):
            try:
                value = jsontext.loads(value)
            except ValueError as exc:
                raise ArgumentError(
                    f"argument {self.name!r}: not valid JSON ({exc}); expected {expected}"
                ) from None
        if not isinstance(value, python_type):
            raise self._wrong(value, expected)
        return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _number_text(value: int | float) -> str:
    """Ids arrive as integers, prices as floats; 120.0 stays '120.0' (float() reads it back exactly)."""
    return str(value)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def bind_arguments(tool: str, params: tuple[Param, ...], arguments: dict[str, Any]) -> dict[str, Any]:
    """Check and coerce a call's arguments; null counts as absent; unknown names are an error."""
    by_name = {param.name: param for param in params}
    unknown = [name for name in arguments if name not in by_name]
    if unknown:
        raise ArgumentError(
            f"{tool}: unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"valid: {signature(tool, params)}"
        )
    bound: dict[str, Any] = {}
    for param in params:
        value = arguments.get(param.name)
        if value is None:
            if param.required:
                raise ArgumentError(
                    f"{tool}: missing required argument {param.name!r}; valid: {signature(tool, params)}"
                )
            if param.default is not None:
                bound[param.name] = param.default
            continue
        try:
            bound[param.name] = param.coerce(value)
        except ArgumentError as exc:
            raise ArgumentError(f"{tool}: {exc}") from None
    return bound


def signature(tool: str, params: tuple[Param, ...]) -> str:
    return f"{tool}({', '.join(param.signature() for param in params)})"


def parameters_schema(params: tuple[Param, ...]) -> dict:
    return {
        "type": "object",
        "properties": {param.name: param.schema() for param in params},
        "required": [param.name for param in params if param.required],
    }
