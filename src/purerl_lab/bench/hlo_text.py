"""XLA's optimised HLO text (`compiled.as_text()`) as computations of instructions, and the sizes of its types.

Only what `hlo_count` needs: each instruction's name, result type, opcode, operands and the attributes that
name the computations it calls or configure it (`backend_config`'s JSON).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
               "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "token": 0, "s4": 0.5, "u4": 0.5,
               "f8e4m3fn": 1, "f8e5m2": 1, "f8e4m3": 1, "f8e4m3fnuz": 1, "f8e5m2fnuz": 1}
_SHAPE = re.compile(r"([a-z][a-z0-9]*)\[([0-9,]*)\]")
_LINE = re.compile(r"^\s*(ROOT\s+)?%([\w.\-]+)\s*=\s*(.*)$")
_HEADER = re.compile(r"^(ENTRY\s+)?%([\w.\-]+)\s*\(.*\{\s*$")


@dataclass
class Instruction:
    name: str
    shape: str  # the result type as written: `f32[4,64]{1,0}` or a tuple `(s32[], f32[8]{0})`
    opcode: str
    operands: list[str]
    attributes: str
    root: bool = False

    def attribute(self, key: str) -> str | None:
        match = re.search(rf"\b{re.escape(key)}=(%[\w.\-]+|\{{[^}}]*\}}|\"[^\"]*\")", self.attributes)
        return match.group(1) if match else None

    def backend_config(self) -> dict:
        start = self.attributes.find("backend_config=")
        if start < 0:
            return {}
        text = self.attributes[start + len("backend_config="):]
        try:
            return json.JSONDecoder().raw_decode(text)[0]
        except ValueError:
            return {}


@dataclass
class Computation:
    name: str
    instructions: list[Instruction]
    entry: bool = False

    def __post_init__(self):
        self.by_name = {i.name: i for i in self.instructions}


def _balanced(text: str, start: int) -> int:
    """Index just past the bracket group opening at text[start] (quoted strings skipped whole)."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack, i = [], start
    while i < len(text):
        char = text[i]
        if char == '"':
            close = text.find('"', i + 1)
            i = close if close > 0 else len(text)
        elif char in pairs:
            stack.append(pairs[char])
        elif stack and char == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return len(text)


def tuple_elements(shape: str) -> list[str]:
    """The element types of a tuple type `(f32[2]{0}, s8[64]{0})`, or [shape] for an array type."""
    if not shape.startswith("("):
        return [shape]
    inner, elements, depth, begin = shape[1:-1], [], 0, 0
    for i, char in enumerate(inner):
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            elements.append(inner[begin:i].strip())
            begin = i + 1
    return elements + [inner[begin:].strip()]


def _instruction(line: str) -> Instruction | None:
    match = _LINE.match(line)
    if not match:
        return None
    root, name, rest = match.groups()
    if rest.startswith("("):
        end = _balanced(rest, 0)
    else:
        end = rest.find(" ")
    shape, rest = rest[:end], rest[end:].lstrip()
    opcode_match = re.match(r"([\w\-]+)\(", rest)
    if not opcode_match:
        return None
    opcode = opcode_match.group(1)
    close = _balanced(rest, opcode_match.end() - 1)
    operands = re.findall(r"%([\w.\-]+)", rest[opcode_match.end():close - 1])
    return Instruction(name, shape, opcode, operands, rest[close:], bool(root))


def parse(text: str) -> dict[str, Computation]:
    """Every computation of an HLO module's text, by name."""
    computations, current, lines = {}, None, []
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header and current is None:
            current, lines = (header.group(2), bool(header.group(1))), []
        elif current is not None and line.strip() == "}":
            computations[current[0]] = Computation(current[0], lines, entry=current[1])
            current = None
        elif current is not None:
            instruction = _instruction(line)
            if instruction is not None:
                lines.append(instruction)
    return computations


def shape_bytes(shape: str) -> float:
    """Bytes of every array in a type (tuples summed)."""
    return sum(math.prod(int(d) for d in dims.split(",") if d) * DTYPE_BYTES.get(dtype, 4)
               for dtype, dims in _SHAPE.findall(shape))


def dims(shape: str) -> list[int]:
    match = _SHAPE.search(shape)
    return [int(d) for d in match.group(2).split(",") if d] if match else []


def elements(shape: str) -> int:
    return sum(math.prod(int(d) for d in dims.split(",") if d) for _, dims in _SHAPE.findall(shape))


