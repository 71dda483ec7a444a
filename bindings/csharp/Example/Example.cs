// Example.cs - libterrain from C#: a tile, a height anywhere, the server's
// bytes, an edit and the hashes a client checks itself with.
//
//     mcs -target:library -out:Terrain.dll bindings/csharp/Terrain/Terrain.cs
//     cp bindings/csharp/Terrain/Terrain.dll.config .
//     mcs -r:Terrain.dll -out:example.exe bindings/csharp/Example/Example.cs
//     LD_LIBRARY_PATH=build/lib mono example.exe    (or: cd bindings/csharp/Example && dotnet run)
using System;

static class Example
{
	static void Main()
	{
		using (var w = new Terrain.World("default", 42))
		using (var edits = new Terrain.Edits(w)) {
			Terrain.Tile t = w.Tile(0, 0, 0);
			Console.WriteLine("libterrain {0}: tile default/42 LOD 0 (0, 0), {1} x {1}, heights hash {2:x16}",
					  Terrain.Lib.Version, t.Side, Terrain.Lib.HeightsHash(t.Heights));
			Console.WriteLine("height at (10.5, 20.25): {0:F3} m", w.Sample(new[] { 10.5, 20.25 })[0]);
			byte[] body = w.TileBytes(0, 0, 0);
			Console.WriteLine("encoded: {0} bytes, ETag \"{1:x16}\"", body.Length,
					  Terrain.Lib.Decode(body).Info.Checksum);
			edits.ApplyJson("{\"edits\": [{\"op\": \"raise\", \"x\": 256, \"z\": 256, \"radius\": 10, \"strength\": 3}]}");
			ulong version, hash;
			edits.Chunk(0, 0, out version, out hash);
			Console.WriteLine("after one edit: world hash {0:x16}, chunk (0, 0) version {1} hash {2:x16}, " +
					  "height at (256, 256) {3:F2} m", edits.WorldHash, version, hash,
					  w.Sample(new double[] { 256, 256 }, edits)[0]);
		}
	}
}
