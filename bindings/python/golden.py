"""golden.py - the rows of common/golden_tiles.inc (the golden tile hashes
every build and binding must reproduce), read from the C source itself."""

import os
import re

INT32 = {"INT32_MAX": 2**31 - 1, "INT32_MIN": -2**31}
ROW = re.compile(r'\{\s*"(\w+)",\s*(\d+)ULL,\s*(\d+),\s*(-?\w+),\s*(-?\w+),\s*0x([0-9a-f]+)ULL\s*\}')


def rows(path=None):
    """[(preset, seed, lod, cx, cz, hash)] of golden_tiles.inc."""
    path = path or os.environ.get("TERRAIN_GOLDEN") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "golden_tiles.inc")
    with open(path) as f:
        return [(m[0], int(m[1]), int(m[2]), INT32.get(m[3]) if m[3] in INT32 else int(m[3]),
                 INT32.get(m[4]) if m[4] in INT32 else int(m[4]), int(m[5], 16))
                for m in ROW.findall(f.read())]
