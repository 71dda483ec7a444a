"""example.py - libterrain from Python: a tile, a height anywhere, the
server's bytes, an edit and the hashes a client checks itself with.

    TERRAIN_LIB=build/lib/libterrain.so.1 python3 bindings/python/example.py
"""
import terrain

with terrain.World("default", 42) as w:
    t = w.tile(0, 0, 0)
    print(f"libterrain {terrain.version()}: tile default/42 LOD 0 (0, 0), {t.side} x {t.side}, "
          f"heights hash {terrain.heights_hash(t.heights):016x}")
    print(f"height at (10.5, 20.25): {w.sample([(10.5, 20.25)])[0]:.3f} m")
    body = w.tile_bytes(0, 0, 0)                 # what GET .../chunks/0/0/0 sends
    print(f"encoded: {len(body)} bytes, ETag \"{terrain.decode(body).checksum:016x}\"")
    edits = terrain.Edits(w)
    edits.apply_json('{"edits": [{"op": "raise", "x": 256, "z": 256, "radius": 10, "strength": 3}]}')
    version, chash = edits.chunk(0, 0)
    print(f"after one edit: world hash {edits.world_hash:016x}, chunk (0, 0) version {version} "
          f"hash {chash:016x}, height at (256, 256) {w.sample([(256, 256)], edits)[0]:.2f} m")
