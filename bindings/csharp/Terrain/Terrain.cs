// Terrain.cs - libterrain (common/terrain.h) from C# through P/Invoke.
//
// The world's heights in-process, bit for bit the server's: tiles at any
// LOD and precision, heights anywhere, the tile format, edit records with
// the server's chunk and world hashes (docs/library.md). Terrain.csproj
// builds it as the Terrain assembly with `dotnet`; tested with Debian's
// Mono (mcs, mono), as Terrain.dll beside Terrain.dll.config.
//
//     using (var w = new Terrain.World("default", 42)) {
//         Terrain.Tile t = w.Tile(0, 0, 0);
//         Console.WriteLine(t.Metres(0, 0));
//     }
//
// The native library is imported by its bare name, "terrain", which each
// runtime maps to the platform's file: Mono through Terrain.dll.config
// (libterrain.so.1 on Linux, libterrain.1.dylib on macOS; else its own
// probing: libterrain.so, terrain.dll), .NET through the resolver below
// (the same names first, then its own probing). It is looked for on the
// library path (LD_LIBRARY_PATH, ldconfig's cache after `make install`).
// Errors throw Terrain.TerrainException, whose Code is the TERRAIN_ERR_*
// value.
using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Terrain
{
	[StructLayout(LayoutKind.Sequential)]
	public struct WorldInfo
	{
		public uint Size, AlgoVersion;
		public ulong Fingerprint, Seed;
		public int ChunkLog2, MaxLod;
		public uint QuantumUm;
		public int Eroded;
		public double MinHeightM, MaxHeightM, SeaLevelM;
	}

	[StructLayout(LayoutKind.Sequential)]
	public struct TileRequest
	{
		public uint Size;
		public int Lod, Cx, Cz;
		public uint QuantumUm, Layers, Format, Reserved;
	}

	[StructLayout(LayoutKind.Sequential)]
	public struct TileInfo
	{
		public uint Size, Version;
		public ulong Fingerprint, Seed;
		public int Cx, Cz, Lod, ChunkLog2;
		public uint Side, QuantumUm;
		public ulong EditSeq, Checksum;
		public uint Layers, Filter;
	}

	internal static class Native
	{
		const string Lib = "terrain";

#if NET5_0_OR_GREATER
		// .NET: the versioned file first (a runtime-only install has no
		// unversioned libterrain.so), then the runtime's own probing.
		static Native()
		{
			NativeLibrary.SetDllImportResolver(typeof(Native).Assembly, (name, asm, path) => {
				if (name != Lib)
					return IntPtr.Zero;
				string file = OperatingSystem.IsLinux() ? "libterrain.so.1"
					: OperatingSystem.IsMacOS() ? "libterrain.1.dylib" : null;
				IntPtr h;
				return file != null && NativeLibrary.TryLoad(file, asm, path, out h) ? h : IntPtr.Zero;
			});
		}
#endif

		[DllImport(Lib)] public static extern uint terrain_version();
		[DllImport(Lib)] public static extern IntPtr terrain_version_string();
		[DllImport(Lib)] public static extern IntPtr terrain_strerror(int code);
		[DllImport(Lib)] public static extern UIntPtr terrain_preset_count();
		[DllImport(Lib)] public static extern IntPtr terrain_preset_name(UIntPtr i);
		[DllImport(Lib)] public static extern int terrain_seed_parse(byte[] text, UIntPtr len, out ulong seed);
		[DllImport(Lib)] public static extern int terrain_world_create(byte[] preset, ulong seed, out IntPtr world);
		[DllImport(Lib)] public static extern int terrain_world_create_json(byte[] json, UIntPtr len, ulong seed,
			out IntPtr world, byte[] msg, UIntPtr msglen);
		[DllImport(Lib)] public static extern void terrain_world_destroy(IntPtr w);
		[DllImport(Lib)] public static extern int terrain_world_info(IntPtr w, ref WorldInfo info);
		[DllImport(Lib)] public static extern IntPtr terrain_world_name(IntPtr w);
		[DllImport(Lib)] public static extern uint terrain_tile_side(IntPtr w, int lod);
		[DllImport(Lib)] public static extern int terrain_work_create(out IntPtr work);
		[DllImport(Lib)] public static extern void terrain_work_destroy(IntPtr work);
		[DllImport(Lib)] public static extern int terrain_edits_create(IntPtr w, out IntPtr e);
		[DllImport(Lib)] public static extern void terrain_edits_destroy(IntPtr e);
		[DllImport(Lib)] public static extern int terrain_edits_apply_record(IntPtr e, byte[] rec, UIntPtr len);
		[DllImport(Lib)] public static extern int terrain_edits_record(IntPtr w, ulong first, byte[] json,
			UIntPtr jsonLen, byte[] output, UIntPtr cap, out UIntPtr len, byte[] msg, UIntPtr msglen);
		[DllImport(Lib)] public static extern int terrain_edits_record_by(IntPtr w, ulong first, byte[] json,
			UIntPtr jsonLen, byte[] author, ulong timeMs, byte[] output, UIntPtr cap, out UIntPtr len,
			byte[] msg, UIntPtr msglen);
		[DllImport(Lib)] public static extern int terrain_edits_revert_record(IntPtr w, ulong seq, byte[] json,
			UIntPtr jsonLen, byte[] author, ulong timeMs, ulong floor, byte[] output, UIntPtr cap,
			out UIntPtr len, byte[] msg, UIntPtr msglen);
		[DllImport(Lib)] public static extern ulong terrain_edits_seq(IntPtr e);
		[DllImport(Lib)] public static extern ulong terrain_edits_world_hash(IntPtr e);
		[DllImport(Lib)] public static extern int terrain_edits_chunk(IntPtr e, int cx, int cz,
			out ulong version, out ulong hash);
		[DllImport(Lib)] public static extern uint terrain_precision_um(byte[] name, UIntPtr len);
		[DllImport(Lib)] public static extern int terrain_generate(IntPtr w, IntPtr e, IntPtr work,
			ref TileRequest rq, int[] heights, UIntPtr heightsLen, byte[] materials, UIntPtr materialsLen,
			ref TileInfo info);
		[DllImport(Lib)] public static extern UIntPtr terrain_tile_bound(IntPtr w, ref TileRequest rq);
		[DllImport(Lib)] public static extern int terrain_generate_encoded(IntPtr w, IntPtr e, IntPtr work,
			ref TileRequest rq, byte[] output, UIntPtr cap, out UIntPtr len);
		[DllImport(Lib)] public static extern UIntPtr terrain_encode_bound(uint side, uint layers);
		[DllImport(Lib)] public static extern int terrain_encode(ref TileInfo info, int[] heights,
			byte[] materials, uint format, byte[] output, UIntPtr cap, out UIntPtr len);
		[DllImport(Lib)] public static extern int terrain_decode_info(byte[] buf, UIntPtr len, ref TileInfo info);
		[DllImport(Lib)] public static extern int terrain_decode(byte[] buf, UIntPtr len, ref TileInfo info,
			int[] heights, UIntPtr heightsLen, byte[] materials, UIntPtr materialsLen);
		[DllImport(Lib)] public static extern int terrain_heights(IntPtr w, IntPtr e, IntPtr work, int lod,
			long x0, long z0, uint nx, uint nz, int[] output, UIntPtr outLen);
		[DllImport(Lib)] public static extern int terrain_sample(IntPtr w, IntPtr e, IntPtr work, double[] xz,
			UIntPtr n, double[] metres);
		[DllImport(Lib)] public static extern ulong terrain_heights_hash(int[] heights, UIntPtr n);
		[DllImport(Lib)] public static extern int terrain_selfcheck(byte[] msg, UIntPtr msglen);
	}

	public class TerrainException : Exception
	{
		public readonly int Code;

		public TerrainException(int code, string detail)
			: base(Lib.ErrorText(code) + (string.IsNullOrEmpty(detail) ? "" : ": " + detail))
		{
			Code = code;
		}
	}

	/// <summary>Functions of the library that need no world.</summary>
	public static class Lib
	{
		public const uint LayerMaterial = 1, FormatCurrent = 7, FormatCoded8 = 5, FormatCoded2 = 3,
			FormatLz21 = 1;

		public static string ErrorText(int code)
		{
			return Marshal.PtrToStringAnsi(Native.terrain_strerror(code));
		}

		internal static void Check(int rc, string detail = null)
		{
			if (rc != 0)
				throw new TerrainException(rc, detail);
		}

		internal static UIntPtr N(long n) { return new UIntPtr((ulong)n); }

		internal static byte[] Utf8(string s) { return Encoding.UTF8.GetBytes(s); }

		internal static byte[] Cstr(string s) { return Encoding.UTF8.GetBytes(s + "\0"); }

		internal static string Msg(byte[] msg)
		{
			int n = Array.IndexOf(msg, (byte)0);
			return Encoding.UTF8.GetString(msg, 0, n < 0 ? msg.Length : n);
		}

		public static string Version { get { return Marshal.PtrToStringAnsi(Native.terrain_version_string()); } }

		public static string[] Presets()
		{
			var v = new string[(int)Native.terrain_preset_count()];
			for (int i = 0; i < v.Length; i++)
				v[i] = Marshal.PtrToStringAnsi(Native.terrain_preset_name(N(i)));
			return v;
		}

		/// <summary>A seed as the HTTP API writes it ("42", "my-world").</summary>
		public static ulong SeedParse(string text)
		{
			byte[] b = Utf8(text);
			ulong seed;
			Check(Native.terrain_seed_parse(b, N(b.Length), out seed), text);
			return seed;
		}

		/// <summary>XXH3-64 of heights as little-endian int32: the golden tiles' hash.</summary>
		public static ulong HeightsHash(int[] heights)
		{
			return Native.terrain_heights_hash(heights, N(heights.Length));
		}

		/// <summary>Decode a tile of any format version the server sends.</summary>
		public static Tile Decode(byte[] data)
		{
			var info = new TileInfo { Size = (uint)Marshal.SizeOf(typeof(TileInfo)) };
			Check(Native.terrain_decode_info(data, N(data.Length), ref info));
			long n = (long)info.Side * info.Side;
			var h = new int[n];
			var m = new byte[n];
			Check(Native.terrain_decode(data, N(data.Length), ref info, h, N(n), m, N(n)));
			return new Tile(info, h, (info.Layers & LayerMaterial) != 0 ? m : null);
		}

		/// <summary>Throw unless this library makes the world it was built to make.</summary>
		public static void SelfCheck()
		{
			var msg = new byte[512];
			Check(Native.terrain_selfcheck(msg, N(msg.Length)), Msg(msg));
		}
	}

	/// <summary>A tile: its header and side * side heights (rows of z) and materials (or null).</summary>
	public class Tile
	{
		public readonly TileInfo Info;
		public readonly int[] Heights;
		public readonly byte[] Materials;

		internal Tile(TileInfo info, int[] heights, byte[] materials)
		{
			Info = info;
			Heights = heights;
			Materials = materials;
		}

		public uint Side { get { return Info.Side; } }

		public double Metres(int i, int j)
		{
			return Heights[j * (int)Info.Side + i] * (double)Info.QuantumUm / 1e6;
		}

		/// <summary>The tile's canonical bytes in format (Lib.FormatCurrent, Lib.FormatCoded8, Lib.FormatCoded2 or Lib.FormatLz21).</summary>
		public byte[] Encode(uint format = Lib.FormatCurrent)
		{
			var info = Info;
			var buf = new byte[(long)Native.terrain_encode_bound(info.Side, info.Layers)];
			UIntPtr len;
			Lib.Check(Native.terrain_encode(ref info, Heights, Materials, format, buf, Lib.N(buf.Length), out len));
			Array.Resize(ref buf, (int)len);
			return buf;
		}
	}

	/// <summary>A world: a built-in preset or a preset's JSON, and a seed. A
	/// World keeps a workspace, so it is one thread's at a time: give each
	/// thread its own World (they share nothing and give the same heights).</summary>
	public class World : IDisposable
	{
		internal IntPtr H;
		IntPtr work;
		public readonly WorldInfo Info;
		public readonly string Name;

		public World(string preset = "default", ulong seed = 0)
		{
			Lib.Check(Native.terrain_world_create(Lib.Cstr(preset), seed, out H), preset);
			Lib.Check(Native.terrain_work_create(out work));
			Info = new WorldInfo { Size = (uint)Marshal.SizeOf(typeof(WorldInfo)) };
			Lib.Check(Native.terrain_world_info(H, ref Info));
			Name = Marshal.PtrToStringAnsi(Native.terrain_world_name(H));
		}

		public World(string preset, string seed) : this(preset, Lib.SeedParse(seed)) { }

		/// <summary>A world of a preset's JSON text.</summary>
		public static World FromJson(string json, ulong seed)
		{
			return new World(json, seed, true);
		}

		World(string json, ulong seed, bool fromJson)
		{
			byte[] b = Lib.Utf8(json), msg = new byte[256];
			Lib.Check(Native.terrain_world_create_json(b, Lib.N(b.Length), seed, out H, msg, Lib.N(msg.Length)),
				  Lib.Msg(msg));
			Lib.Check(Native.terrain_work_create(out work));
			Info = new WorldInfo { Size = (uint)Marshal.SizeOf(typeof(WorldInfo)) };
			Lib.Check(Native.terrain_world_info(H, ref Info));
			Name = Marshal.PtrToStringAnsi(Native.terrain_world_name(H));
		}

		public void Dispose()
		{
			if (H == IntPtr.Zero)
				return;
			Native.terrain_work_destroy(work);
			Native.terrain_world_destroy(H);
			H = work = IntPtr.Zero;
			GC.SuppressFinalize(this);
		}

		~World() { Dispose(); }

		public uint SideOf(int lod) { return Native.terrain_tile_side(H, lod); }

		TileRequest Request(int lod, int cx, int cz, string precision, bool materials, uint format)
		{
			uint q = 0;
			if (precision != null) {
				byte[] p = Lib.Utf8(precision);
				if ((q = Native.terrain_precision_um(p, Lib.N(p.Length))) == 0)
					throw new TerrainException(-1, "precision " + precision);
			}
			return new TileRequest {
				Size = (uint)Marshal.SizeOf(typeof(TileRequest)), Lod = lod, Cx = cx, Cz = cz,
				QuantumUm = q, Layers = materials ? Lib.LayerMaterial : 0, Format = format
			};
		}

		static IntPtr Of(Edits e) { return e == null ? IntPtr.Zero : e.H; }

		/// <summary>The tile of chunk (cx, cz) at lod.</summary>
		public Tile Tile(int lod, int cx, int cz, string precision = null, bool materials = false,
				 Edits edits = null)
		{
			var rq = Request(lod, cx, cz, precision, materials, 0);
			long n = (long)SideOf(lod) * SideOf(lod);
			var h = new int[n];
			var m = materials ? new byte[n] : null;
			var info = new TileInfo { Size = (uint)Marshal.SizeOf(typeof(TileInfo)) };
			Lib.Check(Native.terrain_generate(H, Of(edits), work, ref rq, h, Lib.N(n), m,
							  Lib.N(materials ? n : 0), ref info));
			return new Tile(info, h, m);
		}

		/// <summary>The tile as the server's tile route sends it, byte for byte.</summary>
		public byte[] TileBytes(int lod, int cx, int cz, string precision = null, bool materials = false,
					uint format = Lib.FormatCurrent, Edits edits = null)
		{
			var rq = Request(lod, cx, cz, precision, materials, format);
			var buf = new byte[(long)Native.terrain_tile_bound(H, ref rq)];
			UIntPtr len;
			Lib.Check(Native.terrain_generate_encoded(H, Of(edits), work, ref rq, buf, Lib.N(buf.Length),
								  out len));
			Array.Resize(ref buf, (int)len);
			return buf;
		}

		/// <summary>The nx x nz block of the LOD-lod lattice at world (x0, z0).</summary>
		public int[] Heights(int lod, long x0, long z0, uint nx, uint nz, Edits edits = null)
		{
			var h = new int[(long)nx * nz];
			Lib.Check(Native.terrain_heights(H, Of(edits), work, lod, x0, z0, nx, nz, h, Lib.N(h.Length)));
			return h;
		}

		/// <summary>Heights in metres at (x, z) pairs: xz = { x0, z0, x1, z1, ... }.</summary>
		public double[] Sample(double[] xz, Edits edits = null)
		{
			var m = new double[xz.Length / 2];
			Lib.Check(Native.terrain_sample(H, Of(edits), work, xz, Lib.N(m.Length), m));
			return m;
		}
	}

	/// <summary>A world's edit log: batch records applied in sequence, with
	/// the world and chunk hashes the server publishes.</summary>
	public class Edits : IDisposable
	{
		internal IntPtr H;
		readonly World world;

		public Edits(World w)
		{
			world = w;
			Lib.Check(Native.terrain_edits_create(w.H, out H));
		}

		public void Dispose()
		{
			if (H != IntPtr.Zero)
				Native.terrain_edits_destroy(H);
			H = IntPtr.Zero;
			GC.SuppressFinalize(this);
		}

		~Edits() { Dispose(); }

		public ulong Seq { get { return Native.terrain_edits_seq(H); } }
		public ulong WorldHash { get { return Native.terrain_edits_world_hash(H); } }

		/// <summary>The canonical record of a batch given as POST .../edits JSON; with
		/// author and timeMs (the server's answer has them) as the server writes it, so
		/// that the world hash is the server's too.</summary>
		public byte[] Record(string json, ulong firstSeq = 0, string author = null, ulong timeMs = 0)
		{
			byte[] b = Lib.Utf8(json), rec = new byte[11103], msg = new byte[256];
			UIntPtr len;
			ulong first = firstSeq != 0 ? firstSeq : Seq + 1;
			Lib.Check(author == null ?
				  Native.terrain_edits_record(world.H, first, b, Lib.N(b.Length), rec, Lib.N(rec.Length),
							      out len, msg, Lib.N(msg.Length)) :
				  Native.terrain_edits_record_by(world.H, first, b, Lib.N(b.Length), Lib.Cstr(author),
								 timeMs, rec, Lib.N(rec.Length), out len, msg,
								 Lib.N(msg.Length)),
				  Lib.Msg(msg));
			Array.Resize(ref rec, (int)len);
			return rec;
		}

		/// <summary>The canonical record of a revert or undo given as POST .../reverts JSON
		/// (a filter, or {"undo": SEQ}), sent by author at the log's timeMs, reaching back
		/// to edit floor, at the next sequence number.</summary>
		public byte[] RevertRecord(string json, string author, ulong timeMs, ulong floor = 1)
		{
			byte[] b = Lib.Utf8(json), a = Lib.Cstr(author), rec = new byte[514], msg = new byte[256];
			UIntPtr len;
			Lib.Check(Native.terrain_edits_revert_record(world.H, Seq + 1, b, Lib.N(b.Length), a, timeMs, floor,
								     rec, Lib.N(rec.Length), out len, msg, Lib.N(msg.Length)),
				  Lib.Msg(msg));
			Array.Resize(ref rec, (int)len);
			return rec;
		}

		public void ApplyRecord(byte[] rec)
		{
			Lib.Check(Native.terrain_edits_apply_record(H, rec, Lib.N(rec.Length)));
		}

		public void ApplyJson(string json, string author = null, ulong timeMs = 0)
		{
			ApplyRecord(Record(json, 0, author, timeMs));
		}

		/// <summary>Chunk (cx, cz)'s edit version and hash; both 0 without edits.</summary>
		public void Chunk(int cx, int cz, out ulong version, out ulong hash)
		{
			Lib.Check(Native.terrain_edits_chunk(H, cx, cz, out version, out hash));
		}
	}
}
