"""Integers as people write them: ``66974689739603969``, ``0x3fff``, ``2^54``, ``2**54``,
``268369921*249561089``, ``2^60 - 2^18 + 1``.

One syntax for every integer a user types (a modulus on the command line or in a ring file,
a record count for ``plan``): decimal or 0x/0o/0b literals joined by ``+ - * ^ **``
(``^`` is a power, as in the papers), ``·``/``×`` for products, parentheses, ``_`` as a digit
separator.  Nothing is evaluated beyond that arithmetic.
"""

from __future__ import annotations

import ast

from .errors import SpiralpirError

MAX_EXPONENT = 4096  # keeps "9^9^9" from hanging the parser; moduli stop near 2^220
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Pow: "^"}


def parse_integer(text: str, what: str) -> int:
    """The integer ``text`` denotes; ``what`` names it in errors ("--modulus", ...)."""
    src = str(text).strip().replace("·", "*").replace("×", "*").replace("^", "**")
    try:
        tree = ast.parse(src, mode="eval")
        return _value(tree.body, text, what)
    except (SyntaxError, ValueError):
        raise SpiralpirError(
            f"{what}: cannot read {text!r} as an integer (examples: 66974689739603969, "
            "2^54, 268369921*249561089, 2^60-2^18+1, 0x3fff)"
        ) from None


def _value(node: ast.expr, text: str, what: str) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand, text, what)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _value(node.left, text, what), _value(node.right, text, what)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if b < 0 or b > MAX_EXPONENT:
            raise SpiralpirError(
                f"{what}: exponent {b} in {text!r} is outside 0..{MAX_EXPONENT}"
            )
        return int(a**b)
    raise ValueError("unsupported syntax")
