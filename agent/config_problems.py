"""Configuration errors in our words: one line per setting, what is wrong and how to fix it.

pydantic reports a bad setting in its own words ("Input should be less than or equal to 50",
"Value error, ..."). :func:`describe_problems` turns a :class:`~pydantic.ValidationError` of the
settings into one line a user can act on::

    AGENT_POLL_TIMEOUT: 99 is too large, set a whole number from 0 to 50 (default 30)

The value is shown only when the setting is no secret (a token, a password, a key). A check of
our own (a field validator) raises ``ValueError`` with a message already in this form ("what is
wrong, what to set"); it is used as it is.

Covered by ``tests/test_config.py``.
"""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticUndefined

__all__ = ["describe_problems"]

_WHERE = "in the environment or .env"
# The error types that mean "out of bounds", each way.
_TOO_LARGE = {"less_than", "less_than_equal", "too_long", "string_too_long"}
_TOO_SMALL = {"greater_than", "greater_than_equal", "too_short", "string_too_short"}
_SHOWN = 40  # characters of a bad value shown


def describe_problems(exc: ValidationError, model: type[BaseModel]) -> str:
    """Return every problem of ``exc`` on one line, each naming its setting and the fix.

    Args:
        exc: the validation error of ``model``'s settings.
        model: the settings class (its fields give the expected form and default).
    """
    by_alias = {field.alias or name: field for name, field in model.model_fields.items()}
    problems = [_problem(error, by_alias) for error in exc.errors()]
    return "; ".join(problems)


def _problem(error: ErrorDetails, fields: dict[str, FieldInfo]) -> str:
    name = str(error["loc"][0]) if error["loc"] else "settings"
    field = fields.get(name)
    if error["type"] == "value_error":
        # Our own check: its message says what is wrong and what to set.
        return f"{name}: {error['ctx']['error']}"
    if field is None:
        return f"{name}: {error['msg']}"
    value = _shown(error.get("input"), field)
    kind = error["type"]
    if kind in _TOO_LARGE:
        wrong = "too long" if "long" in kind else "too large"
    elif kind in _TOO_SMALL:
        wrong = "too short" if "short" in kind else "too small"
    else:
        wrong = "not valid"
    fix = f"set {_expected(field)} {_WHERE}"
    if field.default not in (None, PydanticUndefined):
        fix += f" (default {_default(field.default)})"
    elif field.default_factory is not None:
        fix += ", or unset it for the default"
    return f"{name}: {value} is {wrong}, {fix}"


def _shown(value: object, field: FieldInfo) -> str:
    """The bad value as the message may show it: never a secret, and never very long."""
    if _is_secret(field.annotation) or value is None:
        return "the value"
    text = value if isinstance(value, str) else str(value)
    if text == "":
        return "empty"
    if len(text) > _SHOWN:
        text = text[: _SHOWN - 1] + "…"
    return text if text.replace(".", "").replace("-", "").isalnum() else repr(text)


def _is_secret(annotation: Any) -> bool:
    return annotation is SecretStr or SecretStr in get_args(annotation)


def _plain(annotation: Any) -> Any:
    """The annotation without ``| None``."""
    if get_origin(annotation) in (Union, types.UnionType):
        kept = [arg for arg in get_args(annotation) if arg is not type(None)]
        return kept[0] if len(kept) == 1 else annotation
    return annotation


def _expected(field: FieldInfo) -> str:
    """What the setting takes, in words: "a whole number from 0 to 50", "full or process"."""
    annotation = _plain(field.annotation)
    if get_origin(annotation) is Literal:
        *others, last = (str(choice) for choice in get_args(annotation))
        return f"{', '.join(others)} or {last}" if others else last
    if annotation is bool:
        return "true or false"
    rules = {type(rule): rule for rule in field.metadata}
    shortest, longest = rules.get(annotated_types.MinLen), rules.get(annotated_types.MaxLen)
    if shortest is not None or longest is not None:
        low = shortest.min_length if shortest is not None else 0
        if longest is None:
            return f"text of at least {low} characters"
        return f"text of {low} to {longest.max_length} characters"
    kind = {int: "a whole number", float: "a number"}.get(annotation, "a value")
    bounds = []
    for rule_type, attribute, words in _BOUNDS:
        rule = rules.get(rule_type)
        if rule is not None:
            bounds.append(f"{words} {getattr(rule, attribute):g}")
    ge, le = rules.get(annotated_types.Ge), rules.get(annotated_types.Le)
    if ge is not None and le is not None and len(bounds) == 2:
        return f"{kind} from {ge.ge:g} to {le.le:g}"
    return f"{kind} ({', '.join(bounds)})" if bounds else kind


_BOUNDS = (
    (annotated_types.Gt, "gt", "above"),
    (annotated_types.Ge, "ge", "at least"),
    (annotated_types.Lt, "lt", "below"),
    (annotated_types.Le, "le", "at most"),
)


def _default(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}"
    if isinstance(value, frozenset | set | tuple | list):
        return ", ".join(str(item) for item in value) or "empty"
    return str(value)
