#!/usr/bin/env python3
"""Write seeds for the fscc_info, fscc_lists and fscc_wildcard targets from the Samba 4.17
captures in crates/fscc/tests/samba/captures.rs (hex constants named after what they hold), and
for fscc_fsctl: smbclient's symlink reparse point (the golden vector in
crates/fscc/src/fsctl.rs) plus one well-formed body per FSCTL structure, laid out from MS-FSCC 2.3.

    fscc_seeds.py [REPO_ROOT]
"""
import hashlib
import os
import re
import struct
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
CAPTURES = os.path.join(ROOT, "crates", "fscc", "tests", "samba", "captures.rs")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")

# Constant name → (target, prefix bytes). fscc_info takes InfoType then the class; fscc_lists
# the class (0 for the FILE_GET_EA_INFORMATION input).
FILE_CLASSES = {"BASIC": 4, "STANDARD": 5, "INTERNAL": 6, "EA": 7, "ACCESS": 8, "NAME": 9,
                "POSITION": 14, "MODE": 16, "ALIGNMENT": 17, "ALL": 18, "ALTERNATE_NAME": 21,
                "COMPRESSION": 28, "NETWORK_OPEN": 34, "ATTRIBUTE_TAG": 35, "NORMALIZED_NAME": 48,
                "END_OF_FILE": 20, "ALLOCATION": 19, "DISPOSITION": 13, "RENAME": 10,
                "LINK": 11, "SETMODE": 4}
FS_CLASSES = {"VOLUME": 1, "SIZE": 3, "DEVICE": 4, "ATTRIBUTE": 5, "FULL_SIZE": 7,
              "OBJECT_ID": 8, "SECTOR_SIZE": 11}
# A flags byte (bit 0: ignore case), then pattern NUL name.
WILDCARDS = [b"\0*\0file.txt", b"\1<.TXT\0file.txt", b"\0*.*\0noext", b"\0a?c\0abc", b"\1F*\0file",
             b'\0x"y>\0x.y', b"\0*a*a*a*a*b\0" + b"a" * 64]


def route(name):
    if name.startswith("DIR_CLASS_"):
        return "fscc_lists", bytes([int(name.split("_")[2])])
    if name in ("QUERY_FILE_FULL_EA", "QUERY_GET_EA_OUTPUT", "SET_FULL_EA"):
        return "fscc_lists", bytes([15])
    if name == "QUERY_GET_EA_INPUT":
        return "fscc_lists", bytes([0])
    if "STREAM" in name:
        return "fscc_lists", bytes([22])
    if name.startswith("QUERY_FS_"):
        return "fscc_info", bytes([2, FS_CLASSES[name[len("QUERY_FS_"):]]])
    tail = re.sub(r"^(QUERY_FILE_|QUERY_DIR_|SET_BASIC_|SET_)", "", name)
    if name == "SET_BASIC":
        tail = "BASIC"
    if tail in FILE_CLASSES:
        return "fscc_info", bytes([1, FILE_CLASSES[tail]])
    return None


def put(target, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def fsctl_seeds():
    """(selector, body) pairs; the selector is the target's first byte."""
    u = lambda t: t.encode("utf-16-le")
    src = open(os.path.join(ROOT, "crates", "fscc", "src", "fsctl.rs")).read()
    symlink = re.search(r'const SYMLINK_REPARSE: &str = "([^"]*)"', src).group(1)
    extents = struct.pack("<QQqqq", 1, 2, 0, 4096, 65536)
    return [
        (0, struct.pack("<IIII", 3, 5, 1, 5) + b"hello"),
        (1, struct.pack("<qIBB", -10000000, len(u("srvsvc")), 1, 0) + u("srvsvc")),
        (2, extents),
        (3, struct.pack("<Q", 0x30) + extents + struct.pack("<II", 1, 0)),
        (4, b"\x01"),
        (5, struct.pack("<qq", 0, 65536)),
        (6, struct.pack("<qq", 0, 1 << 20)),
        (7, bytes.fromhex(re.sub(r"\s", "", symlink))),
        (7, struct.pack("<IHH", 0x00000099, 8, 0) + bytes(16) + b"abcdefgh"),
        (8, bytes(range(64))),
        (9, struct.pack("<HHIII", 2, 0, 0, 65536, 4096)),
        (10, struct.pack("<II", 0, 2) + struct.pack("<QQQQ", 0, 4096, 8192, 4096)),
        (11, struct.pack("<H", 2)),
    ]


def main():
    text = open(CAPTURES).read()
    for name, body in re.findall(r'pub const (\w+): &str =\s*((?:"[0-9a-f]*"\s*)+);', text):
        where = route(name)
        if where is None:
            print("skipped", name, file=sys.stderr)
            continue
        target, prefix = where
        put(target, prefix + bytes.fromhex("".join(re.findall(r'"([0-9a-f]*)"', body))))
    for seed in WILDCARDS:
        put("fscc_wildcard", seed)
    for selector, body in fsctl_seeds():
        put("fscc_fsctl", bytes([selector]) + body)


main()
