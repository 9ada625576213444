"""The columns a formula reads, by the names formulaic gives them: plain, in backticks
(`` `Solar.R` ``, `` `my col` ``, which formulaic renames ``Solar_R`` to evaluate and keeps
as ``Solar`` among a formula's variables) or in ``Q("...")``; inside ``C(...)``; its
left-hand side's one column."""

from __future__ import annotations

import re

__all__ = ["NAMESPACE", "target_column", "backtick_aliases", "variables_read",
           "categorical_read", "names_read", "with_backticks"]

#: Names a formula may use that are not columns (the namespace formulaic evaluates in).
NAMESPACE = {"np", "numpy"}


def target_column(parsed, formula):
    """The column of the left-hand side: one column of the data, named as it is or in
    backticks (`` `Ozone.ppb` ``), never an expression."""
    lhs = [factor for term in getattr(parsed, "lhs", ()) for factor in term.factors]
    if len(lhs) != 1:
        raise ValueError(f"The formula needs one column on its left-hand side; got {formula!r}.")
    if lhs[0].eval_method.name != "LOOKUP":
        raise ValueError(f"The formula's left-hand side must be one column of the data, not "
                         f"{lhs[0].expr!r}: add the transformed target as a column "
                         "(data.assign(...)) and name it.")
    return lhs[0].expr


def backtick_aliases(rhs, columns):
    """``{python name: column}`` of the columns a right-hand side names in backticks
    (`` `Solar.R` ``, `` `my col` ``), as formulaic renames them to evaluate the
    expressions (``Solar_R``) and names their transforms' state (``scale(Solar_R)``)."""
    from formulaic.utils.code import sanitize_variable_names

    aliases = {}
    for term in rhs:
        for factor in term.factors:
            if factor.eval_method.name == "PYTHON":
                renamed = {}
                sanitize_variable_names(factor.expr, dict.fromkeys(columns), renamed)
                aliases.update(renamed)
    return aliases


def variables_read(rhs):
    """The columns a right-hand side reads: those its factors name, as they are, in
    backticks, or in ``Q("...")``, also inside a stateful transform (``income`` in
    ``scale(income)``, which formulaic leaves out of the formula's variables) and with
    a dot in the name (formulaic keeps ``Solar`` of `` `Solar.R` ``)."""
    names = set()
    for term in rhs:
        for factor in term.factors:
            if factor.eval_method.name == "LOOKUP":
                names.add(factor.expr)
            elif factor.eval_method.name == "PYTHON":
                names.update(names_read(factor.expr))
    return names - set(_transform_names())


def categorical_read(rhs):
    """The columns a right-hand side reads inside ``C(...)`` (categorical, whatever their
    dtype)."""
    import ast

    wrapped = set()
    for term in rhs:
        for factor in term.factors:
            if factor.eval_method.name != "PYTHON":
                continue
            tree, renamed = _parsed(factor.expr)
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "C" \
                        and node.args:
                    wrapped.update(names_read(with_backticks(ast.unparse(node.args[0]), renamed)))
    return wrapped


def _parsed(expression):
    """``(syntax tree, {python name: column})`` of ``expression``, its backticked names
    renamed as formulaic renames them."""
    import ast

    from formulaic.utils.code import sanitize_variable_names

    aliases = {}
    code = sanitize_variable_names(expression, {}, aliases)
    return ast.parse(code, mode="eval"), aliases


def names_read(expression):
    """The names a Python ``expression`` reads as values (columns, and modules such as
    ``np``; not the functions it calls by name), backticked ones and ``Q("...")``'s as
    the columns they name."""
    import ast

    tree, aliases = _parsed(expression)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and id(node) not in called:
            names.add(aliases.get(node.id, node.id))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Q" \
                and node.args and isinstance(node.args[0], ast.Constant):
            names.add(str(node.args[0].value))
    return names


def with_backticks(expression, aliases):
    """``expression`` with formulaic's names for backticked columns (``Solar_R``) in
    backticks again (`` `Solar.R` ``), to be evaluated on the table."""
    if not aliases:
        return expression
    pattern = r"\b(" + "|".join(map(re.escape, sorted(aliases, key=len, reverse=True))) + r")\b"
    return re.sub(pattern, lambda match: f"`{aliases[match[1]]}`", expression)


def _transform_names():
    from formulaic.transforms import TRANSFORMS

    return TRANSFORMS
