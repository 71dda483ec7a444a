// TestTerrain.cs - the C# binding against the library: every golden tile
// hash (read from common/golden_tiles.inc), tiles encoded as the server
// sends them decoded back in every format version, edits and hashes,
// errors, and, given a server's address, the server agreeing with it on an
// edited world. Run by tests/library/bindings_csharp.sh:
//     mono test.exe common/golden_tiles.inc [http://127.0.0.1:PORT]
// Prints one line per check and "N passed, N failed"; exits 1 on failure.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Net;
using System.Text.RegularExpressions;

static class TestTerrain
{
	static int passed, failed;

	static void Check(string what, bool ok)
	{
		Console.WriteLine("{0}: {1}", ok ? "ok" : "FAIL", what);
		if (ok) passed++; else failed++;
	}

	static int Int32Of(string s)
	{
		return s == "INT32_MAX" ? int.MaxValue : s == "INT32_MIN" ? int.MinValue : int.Parse(s);
	}

	static void GoldenTiles(string path)
	{
		var row = new Regex(@"\{\s*""(\w+)"",\s*(\d+)ULL,\s*(\d+),\s*(-?\w+),\s*(-?\w+),\s*0x([0-9a-f]+)ULL\s*\}");
		int n = 0, bad = 0;
		foreach (Match m in row.Matches(File.ReadAllText(path))) {
			ulong seed = ulong.Parse(m.Groups[2].Value), want = Convert.ToUInt64(m.Groups[6].Value, 16);
			int lod = int.Parse(m.Groups[3].Value), cx = Int32Of(m.Groups[4].Value), cz = Int32Of(m.Groups[5].Value);
			using (var w = new Terrain.World(m.Groups[1].Value, seed)) {
				ulong got = Terrain.Lib.HeightsHash(w.Tile(lod, cx, cz).Heights);
				if (got != want) {
					bad++;
					Console.WriteLine("  {0} seed {1} lod {2} ({3}, {4}): {5:x16}, golden {6:x16}",
							  m.Groups[1].Value, seed, lod, cx, cz, got, want);
				}
			}
			n++;
		}
		Check(string.Format("all {0} golden tiles of golden_tiles.inc", n), n >= 30 && bad == 0);
		try {
			Terrain.Lib.SelfCheck();
			Check("the self-check passes", true);
		} catch (Terrain.TerrainException e) {
			Check("the self-check passes: " + e.Message, false);
		}
	}

	static void Formats()
	{
		using (var w = new Terrain.World("alpine", "my-world")) {
			var cases = new[] { new { Lod = 0, Format = 7u, Mat = false, Version = 7u },
					    new { Lod = 2, Format = 7u, Mat = true, Version = 8u },
					    new { Lod = 0, Format = 5u, Mat = false, Version = 5u },
					    new { Lod = 2, Format = 5u, Mat = true, Version = 6u },
					    new { Lod = 0, Format = 3u, Mat = false, Version = 3u },
					    new { Lod = 2, Format = 3u, Mat = true, Version = 4u },
					    new { Lod = 1, Format = 1u, Mat = false, Version = 1u },
					    new { Lod = 3, Format = 1u, Mat = true, Version = 2u } };
			foreach (var c in cases) {
				byte[] body = w.TileBytes(c.Lod, 3, -1, null, c.Mat, c.Format);
				Terrain.Tile t = Terrain.Lib.Decode(body), g = w.Tile(c.Lod, 3, -1, null, c.Mat);
				Check(string.Format("format {0} LOD {1}{2}: version {3}, the heights, and the bytes again",
						    c.Format, c.Lod, c.Mat ? " with materials" : "", c.Version),
				      t.Info.Version == c.Version && t.Heights.SequenceEqual(g.Heights) &&
				      (!c.Mat || t.Materials.SequenceEqual(g.Materials)) &&
				      t.Encode(c.Format).SequenceEqual(body));
			}
			byte[] bad = w.TileBytes(1, 0, 0);
			bad[100] ^= 1;
			int code = 0;
			try { Terrain.Lib.Decode(bad); } catch (Terrain.TerrainException e) { code = e.Code; }
			Check("a damaged tile is refused with an error code", code < 0);
			Terrain.Tile z = w.Tile(0, 0, 0);
			int[] blk = w.Heights(0, 10, 20, 3, 1);
			Check("a block is the tile's samples", blk[0] == z.Heights[20 * 257 + 10] && blk[2] == z.Heights[20 * 257 + 12]);
			Check("a lattice point's height is its sample", w.Sample(new double[] { 10, 20 })[0] == z.Metres(10, 20));
		}
	}

	static void EditsAndErrors()
	{
		using (var w = new Terrain.World("default", 42))
		using (var e = new Terrain.Edits(w)) {
			ulong h0 = e.WorldHash, v, h;
			Terrain.Tile before = w.Tile(0, 0, 0);
			byte[] rec = e.Record("{\"edits\": [{\"op\": \"raise\", \"x\": 256, \"z\": 256, \"radius\": 10, \"strength\": 3}]}");
			e.ApplyRecord(rec);
			e.Chunk(1, 1, out v, out h);
			Terrain.Tile after = w.Tile(0, 0, 0, null, false, e);
			Check("an edit moves the sequence, the world hash and chunk (1, 1)'s version",
			      e.Seq == 1 && e.WorldHash != h0 && v == 1 && h != 0);
			Check("... and raises the tile by 3 m at its centre, nothing at its corner",
			      after.Heights[256 * 257 + 256] - before.Heights[256 * 257 + 256] == 300 &&
			      after.Heights[0] == before.Heights[0] && after.Info.EditSeq == 1);
			int code = 0;
			try { e.ApplyRecord(rec); } catch (Terrain.TerrainException x) { code = x.Code; }
			Check("the same record again is out of sequence (TERRAIN_ERR_CONFLICT)", code == -16);
			string msg = "";
			try { e.Record("{\"edits\": [{\"op\": \"raise\", \"x\": 0, \"z\": 0, \"radius\": 0, \"strength\": 1}]}"); }
			catch (Terrain.TerrainException x) { msg = x.Message; }
			Check("a bad edit names its field: " + msg, msg.Contains("radius"));
		}
		int nf = 0;
		try { new Terrain.World("no-such-preset"); } catch (Terrain.TerrainException x) { nf = x.Code; }
		Check("an unknown preset is TERRAIN_ERR_NOTFOUND", nf == -10 && Terrain.Lib.Presets().Contains("default"));
	}

	static void RevertAndUndo()
	{
		using (var w = new Terrain.World("default", 42))
		using (var e = new Terrain.Edits(w)) {
			ulong v, h, h1;
			Terrain.Tile before = w.Tile(0, 0, 0);
			e.ApplyJson("{\"edits\": [{\"op\": \"raise\", \"x\": 256, \"z\": 256, \"radius\": 10, \"strength\": 3}]}");
			Terrain.Tile edited = w.Tile(0, 0, 0, null, false, e);
			e.Chunk(0, 0, out v, out h1);
			e.ApplyRecord(e.RevertRecord("{\"seq_from\": 1}", "mod", 1000));
			e.Chunk(0, 0, out v, out h);
			Check("a revert of the edit: chunk (0, 0) at version 2, hash 0, the unedited heights",
			      v == 2 && h == 0 && w.Tile(0, 0, 0, null, false, e).Heights.SequenceEqual(before.Heights));
			e.ApplyRecord(e.RevertRecord("{\"undo\": 2}", "mod", 2000));
			e.Chunk(0, 0, out v, out h);
			Check("its undo: version 3, the edited hash and heights again",
			      v == 3 && h == h1 && w.Tile(0, 0, 0, null, false, e).Heights.SequenceEqual(edited.Heights));
			string msg = "";
			try { e.RevertRecord("{\"nobody\": 1}", "mod", 3000); }
			catch (Terrain.TerrainException x) { msg = x.Message; }
			Check("a bad filter names its field: " + msg, msg.Contains("nobody"));
		}
	}

	static void Server(string baseUrl)
	{
		string batch = "{\"edits\": [{\"op\": \"flatten\", \"x\": 512, \"z\": -3, \"radius\": 60, " +
			       "\"strength\": 0.75, \"height\": 40}]}";
		var web = new WebClient();
		web.Headers[HttpRequestHeader.ContentType] = "application/json";
		string answer = web.UploadString(baseUrl + "/v1/worlds/cs/edits?gen=islands", batch);
		using (var w = new Terrain.World("islands", "cs"))
		using (var e = new Terrain.Edits(w)) {
			var time = System.Text.RegularExpressions.Regex.Match(answer, "\"time\":([0-9]+)");
			e.ApplyJson(batch, "local", ulong.Parse(time.Groups[1].Value));
			Check("the server's world hash after the batch is the library's",
			      answer.Contains(string.Format("\"world_hash\":\"{0:x16}\"", e.WorldHash)));
			ulong v, h;
			e.Chunk(2, -1, out v, out h);
			string hashes = new WebClient().DownloadString(baseUrl + "/v1/worlds/cs/hashes?gen=islands&cx0=2&cz0=-1&cx1=2&cz1=-1");
			Check("chunk (2, -1)'s version and hash are the server's",
			      hashes.Contains(string.Format("\"cx\":2,\"cz\":-1,\"version\":{0},\"hash\":\"{1:x16}\"", v, h)));
			foreach (var q in new[] { "0/2/-1?gen=islands", "1/1/-1?gen=islands&layers=height,material",
						  "2/2/0?gen=islands&format=1&precision=10cm" }) {
				byte[] body = new WebClient().DownloadData(baseUrl + "/v1/worlds/cs/chunks/" + q);
				string[] p = q.Split('?')[0].Split('/');
				byte[] mine = w.TileBytes(int.Parse(p[0]), int.Parse(p[1]), int.Parse(p[2]),
							  q.Contains("10cm") ? "10cm" : null, q.Contains("material"),
							  q.Contains("format=1") ? Terrain.Lib.FormatLz21 : Terrain.Lib.FormatCurrent, e);
				Check("tile " + q + " is the server's, byte for byte", mine.SequenceEqual(body));
			}
		}
	}

	static int Main(string[] args)
	{
		Check("library version " + Terrain.Lib.Version, Terrain.Lib.Version.StartsWith("1."));
		GoldenTiles(args[0]);
		Formats();
		EditsAndErrors();
		RevertAndUndo();
		if (args.Length > 1)
			Server(args[1]);
		Console.WriteLine("{0} passed, {1} failed", passed, failed);
		return failed == 0 ? 0 : 1;
	}
}
