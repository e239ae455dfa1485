"""One line for a params.yaml value the schema refuses: the key, what it got, what is allowed
(``params.yaml: prepare.window must be auto or an integer >= 1, got 0``)."""
from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from .schema import RENAMED, Params

_WHAT = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "model_type": "a mapping of keys",
    "dict_type": "a mapping of keys",
    "list_type": "a list",
    "value_error": "a number",
    "finite_number": "a finite number",
    "string_pattern_mismatch": "names of forecasters joined by + (e.g. model+comb)",
}
_BOUND = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
          "less_than_equal": "<="}


def _section(loc: tuple) -> Any:
    """The schema model holding the field at ``loc``."""
    model: Any = Params
    for key in loc[:-1]:
        model = model.model_fields[key].annotation if isinstance(model, type) and \
            issubclass(model, BaseModel) and key in model.model_fields else None
    return model


def _typed(loc: tuple) -> tuple[Any, list]:
    """The type of the field at ``loc`` (or, an item of a list, of its items), Annotated
    unwrapped, and every constraint on it (the field's and the item type's); (None, []) if
    the schema has no such field."""
    item = loc[-1].isdigit()
    field_loc = loc[:-1] if item else loc
    model = _section(field_loc)
    field = model.model_fields.get(field_loc[-1]) \
        if isinstance(model, type) and issubclass(model, BaseModel) else None
    if field is None:
        return None, []
    marks = list(field.metadata)
    kind = (get_args(field.annotation) or (None,))[0] if item else field.annotation
    while get_origin(kind) is Annotated:
        kind, *more = get_args(kind)
        marks += [m for x in more for m in (x.metadata if isinstance(x, FieldInfo) else [x])]
    return kind, marks


def _field_kind(loc: tuple) -> str:
    """'an integer' or 'a number' for the field at ``loc`` (or, an item of a list, for its
    items), '' if unknown."""
    return {int: "an integer", float: "a number"}.get(_typed(loc)[0], "")


def _range(loc: tuple) -> str:
    """The bounds of the field at ``loc`` (or, an item of a list, of its items) as the schema
    writes them, the lower first ('> 0 and < 1'); '' if it has none. A refused value is told
    both sides of what is allowed, not only the side it crossed."""
    marks = _typed(loc)[1]
    ops = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}     # lower bounds first
    return " and ".join(f"{op} {getattr(m, attr)}" for attr, op in ops.items()
                        for m in marks if getattr(m, attr, None) is not None)


def _allowed(e: dict) -> str:
    return e["ctx"]["expected"].replace("' or '", "' | '").replace("', '", "' | '")


def one_line(err: ValidationError) -> str:
    e = err.errors()[0]
    loc = tuple(str(p) for p in e["loc"])
    key = ".".join(loc)
    typ, got = e["type"], e.get("input")
    if typ == "extra_forbidden":
        if key in RENAMED:
            new, why = RENAMED[key]
            return f"params.yaml: {key} was renamed {new} ({why})"
        known = ", ".join(_section(loc).model_fields)
        return f"params.yaml: unknown key {key} (known keys here: {known})"
    if typ == "literal_error" and loc[-1].isdigit():  # an item of a list
        return (f"params.yaml: {'.'.join(loc[:-1])} may hold only {_allowed(e)}, got {got!r} "
                f"(item {int(loc[-1]) + 1})")
    if typ == "literal_error":
        hint = ("; interpolate was removed: it filled a gap from the next value, which can be "
                "the target" if (key, got) == ("data.missing", "interpolate") else "")
        return f"params.yaml: {key} must be one of {_allowed(e)}, got {got!r}{hint}"
    if typ in _BOUND:
        bound = next(iter(e["ctx"].values()))
        kind = _field_kind(loc) or "a number"
        allowed = _range(loc) or f"{_BOUND[typ]} {bound}"
        if loc[-1].isdigit():   # an item of a list
            kinds = {"an integer": "integers", "a number": "numbers"}[kind]
            return (f"params.yaml: {'.'.join(loc[:-1])} may hold only {kinds} "
                    f"{allowed}, got {got!r} (item {int(loc[-1]) + 1})")
        return f"params.yaml: {key} must be {kind} {allowed}, got {got!r}"
    if typ == "described":
        return f"params.yaml: {key} must be {e['msg']}, got {got!r}"
    if typ in ("string_too_short", "string_too_long"):
        lo, hi = e["ctx"].get("min_length"), e["ctx"].get("max_length")
        what = "a non-empty string" if lo else f"at most {hi} character"
        return f"params.yaml: {key} must be {what}, got {got!r}"
    if typ == "too_short":
        return f"params.yaml: {key} must not be empty, got {got!r}"
    what = _WHAT.get(typ, e["msg"].lower())
    return f"params.yaml: {key} must be {what}, got {got!r}"
