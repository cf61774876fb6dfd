"""Values of variable length inside fixed-size records: a length, then the value, then zeros.

A database of values (JSON Lines, a directory of files) stores record i as

    length (L bytes, little-endian) | value | zero padding   -- item_size bytes in all

where L = length_bytes(item_size) is the fewest of 1, 2 or 4 bytes that can count up to the
item's remaining capacity (1 byte up to 256-byte items, 2 up to 65,537). So a client gets
back exactly the value's bytes, trailing zeros and empty values included. A binary file of
fixed-size records is stored as it is (no length). The server says which in ``GET
/v1/params`` (``values``: VALUES_FRAMED or VALUES_FIXED); runtime/FORMATS.md §5.2.
"""

from __future__ import annotations

from spiralpir.optimizer.errors import SpiralpirError

VALUES_FIXED = "fixed"
VALUES_FRAMED = "length-prefixed"


def length_bytes(item_size: int) -> int:
    """Bytes of the length field in an item of item_size bytes."""
    for width in (1, 2, 4):
        if item_size - width < 1 << (8 * width):
            return width
    raise SpiralpirError(f"an item of {item_size} bytes is too large for a length-prefixed value")


def capacity(item_size: int) -> int:
    """The longest value an item of item_size bytes holds beside its length."""
    return item_size - length_bytes(item_size)


def item_size_for(longest: int) -> int:
    """The smallest item size whose capacity is at least `longest` bytes."""
    for width in (1, 2, 4):
        size = longest + width
        if length_bytes(size) == width:
            return size
    raise SpiralpirError(f"a value of {longest} bytes is too long to store")


def frame(value: bytes, item_size: int) -> bytes:
    """The item_size-byte record holding `value` (which must fit: capacity(item_size))."""
    width = length_bytes(item_size)
    if len(value) > item_size - width:
        raise SpiralpirError(f"a {len(value)}-byte value does not fit a {item_size}-byte item "
                             f"with its {width}-byte length")
    return (len(value).to_bytes(width, "little") + value
            + bytes(item_size - width - len(value)))


def unframe(record: bytes, what: str) -> bytes:
    """The value stored in `record` (a whole item); an error naming `what` if its length
    field does not fit (the record was not written by frame(), or the server lies)."""
    width = length_bytes(len(record))
    length = int.from_bytes(record[:width], "little")
    if length > len(record) - width:
        raise SpiralpirError(f"{what}: its length field says {length} bytes but the record "
                             f"holds at most {len(record) - width}; not a length-prefixed value")
    return record[width : width + length]
