"""terrain - libterrain (common/terrain.h) from Python through ctypes.

Standard library only. The world's heights in-process, bit for bit the
server's: tiles at any LOD and precision, heights anywhere, the tile format,
edit records with the server's chunk and world hashes (docs/library.md).

    import terrain
    w = terrain.World("default", 42)        # or terrain.World("alpine", "my-world")
    t = w.tile(0, 0, 0)                     # LOD 0, chunk (0, 0)
    print(t.side, t.heights[0] * t.quantum_um / 1e6, "m")

Install: `pip install ./bindings/python` (offline: add --no-index
--no-build-isolation; docs/library.md). The C library is found by
$TERRAIN_LIB (a path), else on the system's library path (ldconfig,
LD_LIBRARY_PATH), else in the library directory of its install prefix as
pkg-config names it (`make install PREFIX=...`; PKG_CONFIG_PATH for a
prefix of your own), else in this Python's own prefix and /usr/local/lib;
failing all, importing raises LibraryNotFound, which says so. Errors raise
terrain.Error, whose .code is the TERRAIN_ERR_* value and whose message is
terrain_strerror()'s (plus the library's detail where it gives one).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
from typing import Optional, Sequence, Union

__all__ = ["Error", "World", "Edits", "Tile", "decode", "heights_hash", "seed_parse",
           "presets", "version", "selfcheck", "LibraryNotFound", "LAYER_MATERIAL", "FORMAT_CURRENT", "FORMAT_CODED8", "FORMAT_CODED2", "FORMAT_LZ21"]

LAYER_MATERIAL = 1
FORMAT_CURRENT = 7  # versions 7/8 (1/2 below side 33): what the server sends
FORMAT_CODED8 = 5   # versions 5/6 (?format=5)
FORMAT_CODED2 = 3   # versions 3/4 (?format=3)
FORMAT_LZ21 = 1     # versions 1/2 (?format=1)
EDIT_SIZE = 42


SONAME = "libterrain.so.1"


class LibraryNotFound(ImportError):
    """libterrain could not be loaded; the message says where it looked."""


def _pkgconfig_libdir() -> Optional[str]:
    """The libdir of an installed terrain.pc (honours PKG_CONFIG_PATH)."""
    exe = shutil.which("pkg-config")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--variable=libdir", "terrain"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _load() -> ctypes.CDLL:
    env = os.environ.get("TERRAIN_LIB")
    if env:
        try:
            return ctypes.CDLL(env)
        except OSError as e:
            raise LibraryNotFound(f"TERRAIN_LIB={env} does not load: {e}") from None
    tried = []
    found = ctypes.util.find_library("terrain")
    candidates = [found] if found else []
    candidates.append(SONAME)  # LD_LIBRARY_PATH and the loader's own paths
    for d in (_pkgconfig_libdir(), os.path.join(sys.prefix, "lib"), "/usr/local/lib"):
        if d:
            candidates.append(os.path.join(d, SONAME))
    for c in candidates:
        try:
            return ctypes.CDLL(c)
        except OSError:
            tried.append(c)
    raise LibraryNotFound(
        f"libterrain ({SONAME}) not found; tried {', '.join(tried)}. Install the C library "
        "(make install PREFIX=...; with a prefix of your own set PKG_CONFIG_PATH to its "
        "lib/pkgconfig, or run ldconfig) or set TERRAIN_LIB to the library's path, e.g. "
        "TERRAIN_LIB=build/lib/libterrain.so.1")


_lib = _load()

c_int, c_u32, c_i32, c_u64, c_i64 = ctypes.c_int, ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_int64
c_size, c_ptr, c_char_p, c_double = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_double


class WorldInfo(ctypes.Structure):
    _fields_ = [("size", c_u32), ("algo_version", c_u32), ("fingerprint", c_u64), ("seed", c_u64),
                ("chunk_log2", c_i32), ("max_lod", c_i32), ("quantum_um", c_u32), ("eroded", c_i32),
                ("min_height_m", c_double), ("max_height_m", c_double), ("sea_level_m", c_double)]


class TileRequest(ctypes.Structure):
    _fields_ = [("size", c_u32), ("lod", c_i32), ("cx", c_i32), ("cz", c_i32),
                ("quantum_um", c_u32), ("layers", c_u32), ("format", c_u32), ("reserved", c_u32)]


class TileInfo(ctypes.Structure):
    _fields_ = [("size", c_u32), ("version", c_u32), ("fingerprint", c_u64), ("seed", c_u64),
                ("cx", c_i32), ("cz", c_i32), ("lod", c_i32), ("chunk_log2", c_i32),
                ("side", c_u32), ("quantum_um", c_u32), ("edit_seq", c_u64), ("checksum", c_u64),
                ("layers", c_u32), ("filter", c_u32)]


assert ctypes.sizeof(WorldInfo) == 64 and ctypes.sizeof(TileRequest) == 32
assert ctypes.sizeof(TileInfo) == 72

P = ctypes.POINTER
_sigs = {
    "terrain_version": (c_u32, []),
    "terrain_version_string": (c_char_p, []),
    "terrain_strerror": (c_char_p, [c_int]),
    "terrain_preset_count": (c_size, []),
    "terrain_preset_name": (c_char_p, [c_size]),
    "terrain_seed_parse": (c_int, [c_char_p, c_size, P(c_u64)]),
    "terrain_world_create": (c_int, [c_char_p, c_u64, P(c_ptr)]),
    "terrain_world_create_json": (c_int, [c_char_p, c_size, c_u64, P(c_ptr), c_char_p, c_size]),
    "terrain_world_destroy": (None, [c_ptr]),
    "terrain_world_info": (c_int, [c_ptr, P(WorldInfo)]),
    "terrain_world_name": (c_char_p, [c_ptr]),
    "terrain_tile_side": (c_u32, [c_ptr, c_i32]),
    "terrain_work_create": (c_int, [P(c_ptr)]),
    "terrain_work_destroy": (None, [c_ptr]),
    "terrain_edits_create": (c_int, [c_ptr, P(c_ptr)]),
    "terrain_edits_destroy": (None, [c_ptr]),
    "terrain_edits_apply_record": (c_int, [c_ptr, c_char_p, c_size]),
    "terrain_edits_apply": (c_int, [c_ptr, c_u64, c_char_p, c_size]),
    "terrain_edits_record": (c_int, [c_ptr, c_u64, c_char_p, c_size, c_char_p, c_size, P(c_size),
                                     c_char_p, c_size]),
    "terrain_edits_record_by": (c_int, [c_ptr, c_u64, c_char_p, c_size, c_char_p, c_u64, c_char_p,
                                        c_size, P(c_size), c_char_p, c_size]),
    "terrain_edits_revert_record": (c_int, [c_ptr, c_u64, c_char_p, c_size, c_char_p, c_u64, c_u64,
                                            c_char_p, c_size, P(c_size), c_char_p, c_size]),
    "terrain_edits_seq": (c_u64, [c_ptr]),
    "terrain_edits_world_hash": (c_u64, [c_ptr]),
    "terrain_edits_chunk": (c_int, [c_ptr, c_i32, c_i32, P(c_u64), P(c_u64)]),
    "terrain_hash_start": (c_u64, [c_u64, c_u64]),
    "terrain_precision_um": (c_u32, [c_char_p, c_size]),
    "terrain_material_name": (c_char_p, [c_i32]),
    "terrain_generate": (c_int, [c_ptr, c_ptr, c_ptr, P(TileRequest), P(c_i32), c_size,
                                 P(ctypes.c_uint8), c_size, P(TileInfo)]),
    "terrain_tile_bound": (c_size, [c_ptr, P(TileRequest)]),
    "terrain_generate_encoded": (c_int, [c_ptr, c_ptr, c_ptr, P(TileRequest), c_char_p, c_size,
                                         P(c_size)]),
    "terrain_encode_bound": (c_size, [c_u32, c_u32]),
    "terrain_encode": (c_int, [P(TileInfo), P(c_i32), P(ctypes.c_uint8), c_u32, c_char_p, c_size,
                               P(c_size)]),
    "terrain_decode": (c_int, [c_char_p, c_size, P(TileInfo), P(c_i32), c_size,
                               P(ctypes.c_uint8), c_size]),
    "terrain_decode_info": (c_int, [c_char_p, c_size, P(TileInfo)]),
    "terrain_heights": (c_int, [c_ptr, c_ptr, c_ptr, c_i32, c_i64, c_i64, c_u32, c_u32, P(c_i32),
                                c_size]),
    "terrain_sample": (c_int, [c_ptr, c_ptr, c_ptr, P(c_double), c_size, P(c_double)]),
    "terrain_heights_hash": (c_u64, [P(c_i32), c_size]),
    "terrain_selfcheck": (c_int, [c_char_p, c_size]),
}
for _name, (_res, _args) in _sigs.items():
    _f = getattr(_lib, _name)
    _f.restype, _f.argtypes = _res, _args


class Error(Exception):
    """A TERRAIN_ERR_* code from the library; .code is the number."""

    def __init__(self, code: int, detail: str = "") -> None:
        self.code = code
        text = _lib.terrain_strerror(code).decode()
        super().__init__(f"{text}: {detail}" if detail else text)


def _check(rc: int, detail: str = "") -> None:
    if rc:
        raise Error(rc, detail)


def version() -> str:
    """The running library's version text, e.g. "1.0.0"."""
    return _lib.terrain_version_string().decode()


def presets() -> list[str]:
    """The built-in presets' names."""
    return [_lib.terrain_preset_name(i).decode() for i in range(_lib.terrain_preset_count())]


def seed_parse(text: str) -> int:
    """A seed as the HTTP API writes it ("42", "my-world") as an int."""
    b = text.encode()
    out = c_u64()
    _check(_lib.terrain_seed_parse(b, len(b), ctypes.byref(out)), text)
    return out.value


def heights_hash(heights: Sequence[int]) -> int:
    """XXH3-64 of heights as little-endian int32: the golden tiles' hash."""
    arr = heights if isinstance(heights, ctypes.Array) else (c_i32 * len(heights))(*heights)
    return _lib.terrain_heights_hash(arr, len(arr))


class Tile:
    """A tile's header fields (as attributes) and its heights (side * side
    ints, rows of z) and materials (bytes, or None)."""

    def __init__(self, info: TileInfo, heights: Sequence[int], materials: Optional[bytes]) -> None:
        for name, _ in TileInfo._fields_[1:]:
            setattr(self, name, getattr(info, name))
        self.heights = heights
        self.materials = materials

    def metres(self, i: int, j: int) -> float:
        """Height of sample (i, j) in metres."""
        return self.heights[j * self.side + i] * self.quantum_um / 1e6

    def encode(self, fmt: int = FORMAT_CURRENT) -> bytes:
        """The tile's canonical bytes (what terrain_encode() writes)."""
        info = TileInfo(size=ctypes.sizeof(TileInfo))
        for name, _ in TileInfo._fields_[1:]:
            setattr(info, name, getattr(self, name))
        heights = self.heights if isinstance(self.heights, ctypes.Array) else \
            (c_i32 * len(self.heights))(*self.heights)
        mats = (ctypes.c_uint8 * len(self.materials)).from_buffer_copy(bytes(self.materials)) \
            if self.materials is not None else None
        cap = _lib.terrain_encode_bound(self.side, self.layers)
        out, n = ctypes.create_string_buffer(cap), c_size()
        _check(_lib.terrain_encode(ctypes.byref(info), heights, mats, fmt, out, cap,
                                   ctypes.byref(n)))
        return out.raw[:n.value]


def decode(data: Union[bytes, bytearray, memoryview]) -> Tile:
    """Decode a tile of any format version the server sends into a Tile."""
    data = bytes(data)
    info = TileInfo(size=ctypes.sizeof(TileInfo))
    _check(_lib.terrain_decode_info(data, len(data), ctypes.byref(info)))
    n = info.side * info.side
    heights, mats = (c_i32 * n)(), (ctypes.c_uint8 * n)()
    _check(_lib.terrain_decode(data, len(data), ctypes.byref(info), heights, n, mats, n))
    return Tile(info, heights, bytes(mats) if info.layers & LAYER_MATERIAL else None)


class World:
    """A world: a built-in preset (by name) or a preset's JSON text
    (json=...), and a seed (int, or text as in URLs). A World keeps a
    workspace, so it is one thread's at a time (ctypes lets threads run
    in the library at once): give each thread its own World; they give the
    same heights. close() (or a with block) frees it."""

    def __init__(self, preset: str = "default", seed: Union[int, str] = 0,
                 json: Union[str, bytes, None] = None) -> None:
        self._h = self._work = None
        if isinstance(seed, str):
            seed = seed_parse(seed)
        h = c_ptr()
        if json is not None:
            b = json.encode() if isinstance(json, str) else bytes(json)
            msg = ctypes.create_string_buffer(256)
            _check(_lib.terrain_world_create_json(b, len(b), seed, ctypes.byref(h), msg, 256),
                   msg.value.decode())
        else:
            _check(_lib.terrain_world_create(preset.encode(), seed, ctypes.byref(h)), preset)
        self._h = h
        self._work = c_ptr()
        _check(_lib.terrain_work_create(ctypes.byref(self._work)))
        info = WorldInfo(size=ctypes.sizeof(WorldInfo))
        _check(_lib.terrain_world_info(h, ctypes.byref(info)))
        self.name = _lib.terrain_world_name(h).decode()
        for name, _ in WorldInfo._fields_[1:]:
            setattr(self, name, getattr(info, name))

    def close(self) -> None:
        if self._h:
            _lib.terrain_work_destroy(self._work)
            _lib.terrain_world_destroy(self._h)
            self._h = self._work = None

    def __enter__(self) -> "World":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def side(self, lod: int) -> int:
        return _lib.terrain_tile_side(self._h, lod)

    def _request(self, lod: int, cx: int, cz: int, precision: Optional[str], materials: bool,
                 fmt: int) -> TileRequest:
        q = 0
        if precision:
            q = _lib.terrain_precision_um(precision.encode(), len(precision))
            if not q:
                raise Error(-1, f"precision {precision}")
        return TileRequest(size=ctypes.sizeof(TileRequest), lod=lod, cx=cx, cz=cz, quantum_um=q,
                           layers=LAYER_MATERIAL if materials else 0, format=fmt)

    def tile(self, lod: int, cx: int, cz: int, precision: Optional[str] = None,
             materials: bool = False, edits: Optional["Edits"] = None) -> Tile:
        """The tile of chunk (cx, cz) at lod ("1cm", "10cm", ... precision;
        materials: the material layer; edits: an Edits of this world)."""
        rq = self._request(lod, cx, cz, precision, materials, 0)
        n = self.side(lod) ** 2
        heights, mats = (c_i32 * n)(), (ctypes.c_uint8 * n)() if materials else None
        info = TileInfo(size=ctypes.sizeof(TileInfo))
        _check(_lib.terrain_generate(self._h, edits._h if edits else None, self._work,
                                     ctypes.byref(rq), heights, n, mats, n if materials else 0,
                                     ctypes.byref(info)))
        return Tile(info, heights, bytes(mats) if materials else None)

    def tile_bytes(self, lod: int, cx: int, cz: int, precision: Optional[str] = None,
                   materials: bool = False, fmt: int = FORMAT_CURRENT,
                   edits: Optional["Edits"] = None) -> bytes:
        """The tile as the server's tile route sends it, byte for byte."""
        rq = self._request(lod, cx, cz, precision, materials, fmt)
        cap = _lib.terrain_tile_bound(self._h, ctypes.byref(rq))
        out, n = ctypes.create_string_buffer(cap), c_size()
        _check(_lib.terrain_generate_encoded(self._h, edits._h if edits else None, self._work,
                                             ctypes.byref(rq), out, cap, ctypes.byref(n)))
        return out.raw[:n.value]

    def heights(self, lod: int, x0: int, z0: int, nx: int, nz: int,
                edits: Optional["Edits"] = None) -> Sequence[int]:
        """The nx x nz block of the LOD-lod lattice at world (x0, z0)."""
        out = (c_i32 * (nx * nz))()
        _check(_lib.terrain_heights(self._h, edits._h if edits else None, self._work, lod, x0, z0,
                                    nx, nz, out, nx * nz))
        return out

    def sample(self, points: Sequence[tuple[float, float]],
               edits: Optional["Edits"] = None) -> list[float]:
        """Heights in metres at [(x, z), ...] (bilinear between LOD-0 samples)."""
        xz = (c_double * (2 * len(points)))(*[v for p in points for v in p])
        out = (c_double * len(points))()
        _check(_lib.terrain_sample(self._h, edits._h if edits else None, self._work, xz,
                                   len(points), out))
        return list(out)


class Edits:
    """A world's edit log: apply batch records in sequence; the world hash
    and chunk versions and hashes the server publishes. Reads may share it
    across threads; applies need it alone."""

    def __init__(self, world: World) -> None:
        self._h = None
        self.world = world
        self._h = c_ptr()
        _check(_lib.terrain_edits_create(world._h, ctypes.byref(self._h)))

    def close(self) -> None:
        if self._h:
            _lib.terrain_edits_destroy(self._h)
            self._h = None

    def __del__(self) -> None:
        self.close()

    def record(self, json: Union[str, bytes], first_seq: Optional[int] = None,
               author: Optional[str] = None, time_ms: int = 0) -> bytes:
        """The canonical record of a batch given as POST .../edits JSON,
        numbered from first_seq (default: the next sequence number); with
        author and time_ms (the server's answer has them) as the server
        writes it, so that the world hash is the server's too."""
        b = json.encode() if isinstance(json, str) else bytes(json)
        out, n, msg = ctypes.create_string_buffer(11103), c_size(), ctypes.create_string_buffer(256)
        seq = self.seq + 1 if first_seq is None else first_seq
        if author is None:
            rc = _lib.terrain_edits_record(self.world._h, seq, b, len(b), out, 11103,
                                           ctypes.byref(n), msg, 256)
        else:
            rc = _lib.terrain_edits_record_by(self.world._h, seq, b, len(b), author.encode(),
                                              time_ms, out, 11103, ctypes.byref(n), msg, 256)
        _check(rc, msg.value.decode())
        return out.raw[:n.value]

    def revert_record(self, json: Union[str, bytes], author: str, time_ms: int, floor: int = 1,
                      seq: Optional[int] = None) -> bytes:
        """The canonical record of a revert or undo given as POST .../reverts
        JSON (a filter, or {"undo": SEQ}), sent by author at the log's
        time_ms, reaching back to edit floor, at seq (default: the next)."""
        b = json.encode() if isinstance(json, str) else bytes(json)
        out, n, msg = ctypes.create_string_buffer(514), c_size(), ctypes.create_string_buffer(256)
        seq = self.seq + 1 if seq is None else seq
        _check(_lib.terrain_edits_revert_record(self.world._h, seq, b, len(b), author.encode(),
                                                time_ms, floor, out, 514, ctypes.byref(n),
                                                msg, 256), msg.value.decode())
        return out.raw[:n.value]

    def apply_record(self, record: bytes) -> None:
        record = bytes(record)
        _check(_lib.terrain_edits_apply_record(self._h, record, len(record)))

    def apply_json(self, json: Union[str, bytes], author: Optional[str] = None,
                   time_ms: int = 0) -> None:
        """record() then apply_record(): the batch as the next edits."""
        self.apply_record(self.record(json, author=author, time_ms=time_ms))

    @property
    def seq(self) -> int:
        return _lib.terrain_edits_seq(self._h)

    @property
    def world_hash(self) -> int:
        return _lib.terrain_edits_world_hash(self._h)

    def chunk(self, cx: int, cz: int) -> tuple[int, int]:
        """(version, hash) of chunk (cx, cz); (0, 0) when no edit touches it."""
        v, h = c_u64(), c_u64()
        _check(_lib.terrain_edits_chunk(self._h, cx, cz, ctypes.byref(v), ctypes.byref(h)))
        return v.value, h.value


def selfcheck() -> None:
    """Raise Error unless this library makes the world it was built to make."""
    msg = ctypes.create_string_buffer(512)
    _check(_lib.terrain_selfcheck(msg, 512), msg.value.decode())
