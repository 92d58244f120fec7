#!/usr/bin/env python3
"""Writes a linker symbol-ordering file from the functions one run executed (tools/orderfile).

    order.py CALLGRIND_OUT EXECUTABLE_NAME LINK_MAP ORDER_FILE

CALLGRIND_OUT is `valgrind --tool=callgrind` output of a run of the executable; EXECUTABLE_NAME is
the file name callgrind saw for it (its "ob=" lines); LINK_MAP is lld's `-Map` of the same build.

lld places whole input sections, so naming one function moves its section, cold neighbours and all.
A section is ordered (moved to the front of .text, among the other executed code) when the functions
the run executed fill at least MIN_HOT_SHARE of it, or when it is small (at most SMALL_SECTION_BYTES:
where it lies it would keep a 64 KiB fault-around window resident anyway). The rest stay where they
are. The file lists one function per ordered section (one that no other section holds), grouped by
the archive or object it came from, so that the order is stable from one run to the next and a diff
reads by module.
"""
import re
import sys
from collections import defaultdict

MIN_HOT_SHARE = 0.25
SMALL_SECTION_BYTES = 16 * 1024
NAME = re.compile(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$")


def executed_functions(callgrind_path, executable_name):
    """The function names callgrind charged to the executable (not to its shared libraries)."""
    names = {"ob": {}, "fn": {}}
    current_object = None
    executed = set()
    with open(callgrind_path, errors="replace") as stream:
        for line in stream:
            match = NAME.match(line.rstrip("\n"))
            if not match:
                continue
            called, kind, number, name = match.groups()
            if name:
                names[kind][number] = name
            value = names[kind].get(number)
            if kind == "ob" and not called:
                current_object = value
            elif kind == "fn" and not called and current_object and current_object.endswith("/" + executable_name):
                executed.add(value)
    return executed


MAP_LINE = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+ (\s*)(.*)$")


def text_sections(map_path):
    """[input section, its size, {symbol: bytes}] for every input section of the output .text.

    lld's map indents output sections by 0, input sections by 8 and symbols by 16 after the Align
    column; a symbol's bytes run to the next symbol's address or to its section's end."""
    sections = []
    in_text = False
    with open(map_path, errors="replace") as stream:
        for line in stream:
            match = MAP_LINE.match(line.rstrip("\n"))
            if not match:
                continue
            address, size, indent, name = int(match.group(1), 16), int(match.group(2), 16), match.group(3), match.group(4)
            if len(indent) == 0:
                in_text = name == ".text"
            elif in_text and len(indent) == 8:
                sections.append([name, size, address, []])
            elif in_text and sections:
                sections[-1][3].append((address, name))
    result = []
    for name, size, start, symbols in sections:
        bytes_of = {}
        for index, (address, symbol) in enumerate(symbols):
            following = symbols[index + 1][0] if index + 1 < len(symbols) else start + size
            bytes_of[symbol] = bytes_of.get(symbol, 0) + max(0, following - address)
        result.append((name, size, bytes_of))
    return result


def main():
    callgrind_path, executable_name, map_path, order_path = sys.argv[1:5]
    executed = executed_functions(callgrind_path, executable_name)
    if not executed:
        sys.exit(f"order.py: {callgrind_path} charged nothing to {executable_name}: did the run start it?")
    sections = text_sections(map_path)
    # lld moves every section that holds a symbol of the name given, and functions the compiler
    # outlines (`...WOh`, `...Tm`) have the same local name in many objects: each section is named by a
    # symbol that only it holds, or not at all.
    holders = defaultdict(int)
    for _, _, bytes_of in sections:
        for symbol in bytes_of:
            holders[symbol] += 1
    chosen = defaultdict(list)  # the archive or object -> [(section, a symbol only it holds)]
    hot_bytes = left_bytes = unnamed_bytes = 0
    for section, size, bytes_of in sections:
        hot = sorted(symbol for symbol in bytes_of if symbol in executed)
        if not hot:
            continue
        share = sum(bytes_of[symbol] for symbol in hot) / max(1, size)
        if size > SMALL_SECTION_BYTES and share < MIN_HOT_SHARE:
            left_bytes += size
            continue
        handle = next((symbol for symbol in hot + sorted(bytes_of) if holders[symbol] == 1), None)
        if handle is None:
            unnamed_bytes += size
            continue
        chosen[section.split(":(")[0]].append((section, handle))
        hot_bytes += size
    lines = [symbol for origin in sorted(chosen) for _, symbol in sorted(chosen[origin])]
    with open(order_path, "w") as stream:
        stream.write("\n".join(lines) + "\n")
    print(f"order.py: {len(executed)} functions executed; {len(lines)} sections ordered "
          f"({hot_bytes // 1024} KiB of code together), {left_bytes // 1024} KiB of mostly cold sections "
          f"left where they are, {unnamed_bytes // 1024} KiB without a name of their own; wrote {order_path}")


if __name__ == "__main__":
    main()
