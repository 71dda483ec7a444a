"""test_terrain.py - the Python binding against the library: every golden
tile hash, tiles encoded as the server sends them decoded back to the same
heights (every format version), edits with their hashes, heights anywhere,
errors as terrain.Error. Run by tests/library/bindings_python.sh."""

import json
import os
import sys
import threading
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden  # noqa: E402
import terrain  # noqa: E402


class GoldenTiles(unittest.TestCase):
    def test_every_golden_tile(self):
        rows = golden.rows()
        self.assertGreaterEqual(len(rows), 30)
        worlds = {}
        for preset, seed, lod, cx, cz, want in rows:
            w = worlds.setdefault((preset, seed), terrain.World(preset, seed))
            t = w.tile(lod, cx, cz)
            self.assertEqual(t.side, (256 >> lod) + 1)
            self.assertEqual(terrain.heights_hash(t.heights), want,
                             f"{preset} seed {seed} lod {lod} ({cx}, {cz})")

    def test_selfcheck(self):
        terrain.selfcheck()


class Tiles(unittest.TestCase):
    def setUp(self):
        self.w = terrain.World("alpine", "my-world")

    def test_bytes_decode_to_the_heights_in_every_version(self):
        for lod, fmt, materials, version in ((0, 7, False, 7), (2, 7, True, 8),
                                             (0, 5, False, 5), (2, 5, True, 6), (0, 3, False, 3),
                                             (2, 3, True, 4), (1, 1, False, 1), (3, 1, True, 2),
                                             (5, 5, False, 1), (5, 3, False, 1)):
            body = self.w.tile_bytes(lod, 3, -1, materials=materials, fmt=fmt)
            t = terrain.decode(body)
            g = self.w.tile(lod, 3, -1, materials=materials)
            self.assertEqual(t.version, version)
            self.assertEqual(list(t.heights), list(g.heights))
            self.assertEqual(t.materials, g.materials)
            self.assertEqual(t.encode(fmt), body)

    def test_precision_and_damage(self):
        t = self.w.tile(1, 0, 0, precision="1m")
        c = self.w.tile(1, 0, 0)
        self.assertEqual(t.quantum_um, 1000000)
        for a, b in zip(t.heights, c.heights):
            self.assertLessEqual(abs(a * 100 - b), 50)
        body = bytearray(self.w.tile_bytes(1, 0, 0))
        body[100] ^= 1
        with self.assertRaises(terrain.Error) as e:
            terrain.decode(body)
        self.assertLess(e.exception.code, 0)
        with self.assertRaises(terrain.Error):
            terrain.decode(body[:50])

    def test_blocks_and_points_are_tile_samples(self):
        t = self.w.tile(0, 0, 0)
        blk = self.w.heights(0, 10, 20, 3, 2)
        self.assertEqual(list(blk), [t.heights[20 * 257 + 10 + i] for i in range(3)] +
                         [t.heights[21 * 257 + 10 + i] for i in range(3)])
        self.assertEqual(self.w.sample([(10, 20)])[0], t.metres(10, 20))

    def test_threads_share_one_world(self):
        out = {}

        def run(k):
            with terrain.World("mesa", 5) as own:
                out[k] = terrain.heights_hash(own.tile(1, k, k).heights)
        ts = [threading.Thread(target=run, args=(k,)) for k in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        w = terrain.World("mesa", 5)
        self.assertEqual(out, {k: terrain.heights_hash(w.tile(1, k, k).heights) for k in range(4)})


class Edits(unittest.TestCase):
    def test_edits_change_tiles_and_hashes(self):
        w = terrain.World("default", 42)
        e = terrain.Edits(w)
        h0 = e.world_hash
        before = w.tile(0, 0, 0)
        rec = e.record('{"edits": [{"op": "raise", "x": 256, "z": 256, "radius": 10, '
                       '"strength": 3}]}')
        e.apply_record(rec)
        self.assertEqual(e.seq, 1)
        self.assertNotEqual(e.world_hash, h0)
        for c in ((0, 0), (1, 0), (0, 1), (1, 1)):
            self.assertEqual(e.chunk(*c)[0], 1)
        self.assertEqual(e.chunk(2, 2), (0, 0))
        after = w.tile(0, 0, 0, edits=e)
        self.assertEqual(after.edit_seq, 1)
        self.assertEqual(after.heights[256 * 257 + 256] - before.heights[256 * 257 + 256], 300)
        self.assertEqual(after.heights[0], before.heights[0])
        with self.assertRaises(terrain.Error) as err:
            e.apply_record(rec)                     # out of sequence
        self.assertEqual(err.exception.code, -16)
        with self.assertRaises(terrain.Error) as err:
            e.record('{"edits": [{"op": "raise", "x": 0, "z": 0, "radius": 0, "strength": 1}]}')
        self.assertIn("radius", str(err.exception))

    def test_a_revert_takes_edits_out_and_an_undo_puts_them_back(self):
        w = terrain.World("default", 42)
        e = terrain.Edits(w)
        before = w.tile(0, 0, 0)
        e.apply_json('{"edits": [{"op": "raise", "x": 256, "z": 256, "radius": 10, "strength": 3}]}')
        edited, chunk = list(w.tile(0, 0, 0, edits=e).heights), e.chunk(0, 0)
        self.assertNotEqual(edited, list(before.heights))
        e.apply_record(e.revert_record('{"seq_from": 1}', "mod", 1000))
        self.assertEqual(e.seq, 2)
        self.assertEqual(e.chunk(0, 0), (2, 0))     # no edit counts: chain from 0 is 0
        self.assertEqual(list(w.tile(0, 0, 0, edits=e).heights), list(before.heights))
        e.apply_record(e.revert_record('{"undo": 2}', "mod", 2000))
        self.assertEqual(e.chunk(0, 0), (3, chunk[1]))
        self.assertEqual(list(w.tile(0, 0, 0, edits=e).heights), edited)
        with self.assertRaises(terrain.Error) as err:
            e.revert_record('{"nobody": 1}', "mod", 3000)
        self.assertIn("nobody", str(err.exception))

    def test_unknown_preset(self):
        with self.assertRaises(terrain.Error) as e:
            terrain.World("no-such-preset")
        self.assertEqual(e.exception.code, -10)
        self.assertIn("default", terrain.presets())


@unittest.skipUnless(os.environ.get("TERRAIN_BASE"), "no server (tests/library/bindings_python.sh starts one)")
class Server(unittest.TestCase):
    """The library against a real server on 127.0.0.1 ($TERRAIN_BASE)."""

    def get(self, path):
        with urllib.request.urlopen(os.environ["TERRAIN_BASE"] + path) as r:
            return r.read()

    def test_the_server_agrees_on_tiles_and_hashes(self):
        name = os.environ.get("TERRAIN_TEST_WORLD", "py")  # a world no edit has touched
        batch = ('{"edits": [{"op": "lower", "x": -300, "z": 40.5, "radius": 70, "strength": 4, '
                 '"falloff": "linear"}, {"op": "set", "x": -255, "z": 0, "radius": 9, '
                 '"height": 12.5}]}')
        req = urllib.request.Request(os.environ["TERRAIN_BASE"] + f"/v1/worlds/{name}/edits?gen=mesa",
                                     batch.encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            answer = json.load(r)
        w = terrain.World("mesa", name)
        e = terrain.Edits(w)
        e.apply_json(batch, author=answer["author"], time_ms=answer["time"])
        self.assertEqual(answer["world_hash"], f"{e.world_hash:016x}")
        hashes = json.loads(self.get(f"/v1/worlds/{name}/hashes?gen=mesa&cx0=-2&cz0=-1&cx1=0&cz1=0"))
        self.assertGreaterEqual(len(hashes["chunks"]), 2)
        for c in hashes["chunks"]:
            self.assertEqual(e.chunk(c["cx"], c["cz"]), (c["version"], int(c["hash"], 16)))
        for lod, layers, fmt in ((0, "height", 5), (1, "height,material", 5), (0, "height", 3), (2, "height", 1)):
            body = self.get(f"/v1/worlds/{name}/chunks/{lod}/-2/0?gen=mesa&layers={layers}&format={fmt}")
            self.assertEqual(w.tile_bytes(lod, -2, 0, materials="material" in layers, fmt=fmt,
                                          edits=e), body)


if __name__ == "__main__":
    unittest.main(verbosity=2)
