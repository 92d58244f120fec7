#!/usr/bin/env python3
"""Writes the ICU data that the release executables link instead of the Swift toolchain's (issue 36).

    tools/icu/subset.py [OUTPUT]     (default Sources/CICUData/icudt76l-root-en.dat)

The statically linked Foundation brings ICU (`lib_FoundationICU.a`) and with it all of ICU's data,
one 34 MB symbol (`icudt76_dat`, in `icu_packaged_data.cpp.o`): every locale's names, calendars and
collations, 230 character-set converters, the CJK and Thai dictionaries. A push runs no ICU
(docs/benchmarks.md, "Where the memory goes"), and what else LivePush formats (a recording's default
file name) it formats without ICU. The C target CICUData defines `icudt76_dat` with this subset in
release builds, so the linker never takes the toolchain's from the archive. Kept, so that Foundation's
locale-dependent calls still answer as in English rather than fail: the root locale and every English
one (`en`, `en_US`, `en_GB`, ...) in each tree (names, currencies, units, zones, collation, number
spell-out), and every item that is not a locale's (time zones, likely subtags, plural rules,
normalization, break rules). Left out: other languages' locales (ICU falls back to root, as for any
locale it has no data for), the converters (UTF-8, UTF-16, UTF-32, ASCII and Latin-1 are built into
ICU's code), character names (`unames.icu`), the break dictionaries, the East Asian line-break
variants, confusables and transliterators.

The package format is ICU's common data ("CmnD", ucmndata.h): a header, a table of contents (item
count, then a name offset and a data offset per item, both from the table's start, names sorted),
the names, then each item's data 16-byte aligned. The header is copied as it is.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

SYMBOL = "icudt76_dat"
ARCHIVE_MEMBER = "icu_packaged_data.cpp.o"
LOCALE = re.compile(r"[a-z]{2,3}(_[A-Za-z0-9]+)*")
DROPPED_SUFFIXES = (".cnv", ".dict", ".cfu")
DROPPED_NAMES = {"unames.icu"}
DROPPED_TREES = {"translit"}


def toolchain_data():
    """The bytes of `icudt76_dat` in the toolchain's lib_FoundationICU.a (that swift's, on PATH)."""
    swift = shutil.which("swift")
    if swift is None:
        sys.exit("subset.py: no swift on PATH (export PATH=/opt/swift/usr/bin:$PATH)")
    archive = os.path.join(os.path.dirname(os.path.realpath(swift)), "..", "lib", "swift_static", "linux",
                           "lib_FoundationICU.a")
    with tempfile.TemporaryDirectory() as work:
        member = os.path.join(work, ARCHIVE_MEMBER)
        with open(member, "wb") as out:
            subprocess.run(["ar", "p", archive, ARCHIVE_MEMBER], stdout=out, check=True)
        symbols = subprocess.run(["nm", "-S", member], capture_output=True, text=True, check=True).stdout.split()
        if SYMBOL not in symbols:
            sys.exit(f"subset.py: {archive} has no {SYMBOL} (another ICU version: change SYMBOL here and in CICUData)")
        size = int(symbols[symbols.index(SYMBOL) - 2], 16)
        raw = os.path.join(work, "data.bin")
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.rodata", member, raw], check=True)
        with open(raw, "rb") as stream:
            data = stream.read()
    if data[12:16] != b"CmnD" or len(data) < size:
        sys.exit(f"subset.py: {SYMBOL} in {archive} is not ICU common data")
    return data[:size]


def items(data):
    """(name, bytes) of each item, in the table's order."""
    header_size = struct.unpack_from("<H", data, 0)[0]
    count = struct.unpack_from("<I", data, header_size)[0]
    entries = [struct.unpack_from("<II", data, header_size + 4 + 8 * i) for i in range(count)]
    result = []
    for index, (name_offset, data_offset) in enumerate(entries):
        start = header_size + name_offset
        name = data[start:data.index(b"\0", start)].decode()
        end = entries[index + 1][1] if index + 1 < count else len(data) - header_size
        result.append((name, data[header_size + data_offset:header_size + end]))
    return data[:header_size], result


def kept(name):
    """Whether the subset keeps the item `name` ("icudt76l/TREE/ITEM" or "icudt76l/ITEM")."""
    parts = name.split("/")[1:]
    leaf = parts[-1]
    base = leaf.rsplit(".", 1)[0]
    if len(parts) > 1 and parts[0] in DROPPED_TREES:
        return False
    if leaf in DROPPED_NAMES or leaf.endswith(DROPPED_SUFFIXES):
        return False
    if leaf.endswith(".brk") and ("_cj" in base or "phrase" in base):
        return False
    if leaf.endswith(".res") and LOCALE.fullmatch(base):
        return base == "en" or base.startswith("en_")
    return True


def package(header, chosen):
    """ICU common data holding `chosen`, whose names are already in sorted order."""
    def align(offset):
        return (offset + 15) & ~15
    names = b"".join(name.encode() + b"\0" for name, _ in chosen)
    table_size = 4 + 8 * len(chosen)
    offset = align(table_size + len(names))
    entries, blobs, name_offset = [], [], table_size
    for name, blob in chosen:
        entries.append((name_offset, offset))
        name_offset += len(name.encode()) + 1
        padded = blob + b"\0" * (align(len(blob)) - len(blob))
        blobs.append(padded)
        offset += len(padded)
    table = struct.pack("<I", len(chosen)) + b"".join(struct.pack("<II", *entry) for entry in entries)
    body = table + names
    body += b"\0" * (align(len(body)) - len(body))
    return header + body + b"".join(blobs)


def main():
    output = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "Sources", "CICUData", "icudt76l-root-en.dat")
    data = toolchain_data()
    header, all_items = items(data)
    chosen = [(name, blob) for name, blob in all_items if kept(name)]
    result = package(header, chosen)
    with open(output, "wb") as stream:
        stream.write(result)
    print(f"icu subset items={len(chosen)}/{len(all_items)} kib={len(result) // 1024} (from {len(data) // 1024})")


if __name__ == "__main__":
    main()
