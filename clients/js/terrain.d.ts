// terrain.d.ts - TypeScript declarations of terrain.js, the JavaScript
// client of the terrain chunk server (docs/js-client.md). Written by hand:
// every export of terrain.js, with its comment; the shapes in between
// (tiles, headers, worlds, edits) are the objects terrain.js makes and
// takes. tests/library/npm_package.sh checks that these names are
// terrain.js's exports, one for one, and that tsc --strict takes a use of
// each of them and refuses wrong uses.
//
// The fetches take and give the fetch API's types (RequestInit, Response,
// AbortSignal): TypeScript's DOM library (the default "lib") or @types/node
// declare them.

// ---- shapes ----

/**
 * A world's seed: a number or BigInt (0 .. 2^64-1), a decimal string, or a
 * text seed of [A-Za-z0-9_-]{1,64} (not all digits), which is XXH3-64 of its
 * bytes (seedU64).
 */
export type Seed = number | bigint | string;

/** Layer lists of ?layers=: heights alone (the default) or with the material layer. */
export type Layers = 'height' | 'material' | 'height,material' | 'material,height';

/** ?precision= names (the header's quantum_um: 10000 .. 1000000 micrometres). */
export type Precision = '1cm' | '5cm' | '10cm' | '50cm' | '1m';

/** Material names of the version 2 material layer, by id 0..5. */
export type MaterialName = 'water' | 'sand' | 'grass' | 'forest' | 'rock' | 'snow';

/** One entry of MATERIALS. */
export interface Material {
	readonly id: number;
	readonly name: MaterialName;
	/** '#rrggbb', the map's colour. */
	readonly colour: string;
}

/** A world of a server: seed, and gen (a generator or preset name; default 'default'). */
export interface WorldRef {
	seed: Seed;
	gen?: string;
}

/** An inclusive rectangle of chunks cx0..cx1 x cz0..cz1. */
export interface Rect {
	cx0: number;
	cz0: number;
	cx1: number;
	cz1: number;
}

/** One tile of a server's world: GET /v1/worlds/{seed}/chunks/{lod}/{cx}/{cz}. */
export interface TileKey extends WorldRef {
	/** Default 0. */
	lod?: number;
	cx: number;
	cz: number;
	/** Default 'height'. */
	layers?: Layers;
}

/** The tiles of a rectangle (at most 64) of one LOD: the bundle route. */
export interface BundleKey extends WorldRef, Rect {
	/** Default 0. */
	lod?: number;
	/** Default 'height'. */
	layers?: Layers;
}

/**
 * The fields of a tile every kind of tile has: those of a decoded header,
 * and those terrain_generate() gives without encoding (World.tile with
 * encode: false).
 */
export interface TileInfo {
	/** The generator's fingerprint, 16 hex digits. */
	fingerprint: string;
	/** The seed as a decimal string (u64). */
	seed: string;
	cx: number;
	cz: number;
	lod: number;
	chunkLog2: number;
	/** Samples per row and column: 2^(chunkLog2 - lod) + 1. */
	side: number;
	/** Micrometres per quantum: height in metres = quanta * quantumUm / 1e6. */
	quantumUm: number;
	/** The chunk's edit version (0: no edit). */
	editSeq: number;
	/** Whether the tile has the material layer. */
	layers: boolean;
}

/** A tile's 64-byte header, checked (decodeHeader): docs/tile-format.md. */
export interface TileHeader extends TileInfo {
	magic: 'TRRN';
	/** Format version, 1 to 8. */
	version: number;
	/** 64. */
	headerLen: number;
	/** 1 (lz21 byte planes, versions 1 and 2), 2 or 3 (coded). */
	filter: number;
	/** Byte planes (versions 1 and 2: 1 to 4), 0 when coded. */
	planes: number;
	/** The quanta's offset (byte planes). */
	offset: number;
	/** The XXH3-64 checksum field, 16 hex digits. */
	checksum: string;
	/** Versions 3 and later: coded heights. */
	coded: boolean;
	/** Interleaved states of the coded form: 8 from version 5 on, else 2. */
	states: 2 | 8;
	/** Versions 7 and 8: the coded form's tokens are coded by tANS (else rANS). */
	tans: boolean;
	/** The coded payload's length in bytes (coded tiles, once decoded; not from decodeHeader). */
	codedLen?: number;
}

/**
 * heights as the metres option asks: Float64Array by default and with
 * metres: true, null with metres: false, either for a boolean not known
 * until run time.
 */
export type HeightsFor<M extends boolean | undefined> = M extends false ? null : Float64Array;

/** What decodeTile() returns; Heights is Float64Array, or null with metres: false. */
export interface DecodedTile<Heights extends Float64Array | null = Float64Array | null> {
	header: TileHeader;
	/** side * side heights in quanta, rows of z then x. */
	quanta: Int32Array;
	/** The same in metres (null with metres: false). */
	heights: Heights;
	/** side * side material ids (tiles with the material layer), else null. */
	materials: Uint8Array | null;
}

/** A tile fetched from a server: decodeTile()'s result plus the response's ETag and the URL. */
export interface FetchedTile<Heights extends Float64Array | null = Float64Array | null> extends DecodedTile<Heights> {
	etag: string | null;
	url: string;
}

/** A tile with a header and quanta: what heightArray() and stitch() read. */
export interface TileLike {
	header: TileInfo;
	quanta: Int32Array;
}

/** The decoder's options. */
export interface DecodeOptions<M extends boolean | undefined = boolean | undefined> {
	/** Check the XXH3 checksum (default true). */
	verify?: boolean;
	/** Heights in metres too (default true; false: heights null). */
	metres?: M;
	/** Use terrain.wasm's decoder once loaded (default true; it needs verify). */
	wasm?: boolean;
}

/** A fetch function: globalThis.fetch, or one with auth headers, a cache, a test's script. */
export type FetchFunction = (url: string, init?: RequestInit) => Promise<Response>;

/** The options of fetchTile() and fetchBundle(): the decoder's plus fetch and init. */
export interface FetchOptions<M extends boolean | undefined = boolean | undefined> extends DecodeOptions<M> {
	/** Default globalThis.fetch. */
	fetch?: FetchFunction;
	/** fetch's RequestInit: signal, cache, headers... */
	init?: RequestInit;
}

/** What stitch() returns. */
export interface Grid {
	/** Samples along x. */
	width: number;
	/** Samples along z. */
	height: number;
	/** Metres between samples: 2^lod. */
	spacing: number;
	/** World x of sample 0. */
	x0: number;
	/** World z of sample 0. */
	z0: number;
	lod: number;
	/** width * height metres, rows of z. */
	heights: Float32Array;
}

/** gridMesh()'s options. */
export interface MeshOptions {
	/** Default 1. */
	verticalScale?: number;
	/** Added to every vertex, default [0, 0, 0]. */
	offset?: readonly [number, number, number];
	/** > 0: walls at the four edges down to skirt metres below the lowest sample (default 0). */
	skirt?: number;
}

/** What gridMesh() returns. */
export interface Mesh {
	/** x, y, z per vertex. */
	positions: Float32Array;
	/** Unit normals, x, y, z per vertex. */
	normals: Float32Array;
	/** Three per triangle, counter-clockwise seen from above (from outside for the skirt). */
	indices: Uint32Array;
	/** The first skirt vertex: the grid's width * height. */
	skirtStart: number;
}

/** How far a brush's edit reaches: 1 - t, or 1 - (3t^2 - 2t^3) (default 'smooth'). */
export type Falloff = 'linear' | 'smooth';

interface Brush {
	/** Centre, metres. */
	x: number;
	z: number;
	/** (0, 4096] m. */
	radius: number;
	falloff?: Falloff;
}

/** One edit (docs/edits.md): a brush. Fields an op does not use are errors. */
export type Edit =
	| (Brush & {
			op: 'raise' | 'lower';
			/** Height added or removed at the centre, [0, 10000] m. */
			strength: number;
	  })
	| (Brush & {
			op: 'flatten';
			/** Fraction of the way to height at the centre, [0, 1]. */
			strength: number;
			/** Target height, [-100000, 100000] m. */
			height: number;
	  })
	| (Brush & {
			op: 'set';
			/** Target height, [-100000, 100000] m. */
			height: number;
	  });

/** A revert's filter (docs/edits.md, "Reverts"): any of these, at least one. */
export interface RevertFilter {
	author?: string;
	/** The log's time of the edit's batch, ms since 1970, inclusive. */
	since_time?: number;
	until_time?: number;
	/** [x0, z0, x1, z1] metres: the brush's centre inside, edges included. */
	area?: readonly [number, number, number, number];
	/** Sequence numbers, inclusive. */
	seq_from?: number;
	seq_to?: number;
}

/** An undo: cancels revert SEQ. */
export interface Undo {
	undo: number;
}

/** postEdits()' and postReverts()' options. */
export interface PostOptions {
	/** Sent as Authorization: Bearer. */
	token?: string;
	/** The batch's Idempotency-Key (default newEditKey()); give an earlier error's key to learn that batch's outcome. */
	key?: string;
	/** Tries at most (default 8). */
	attempts?: number;
	/** Each attempt's bound (default 10000). */
	timeoutMs?: number;
	/** Default globalThis.fetch. */
	fetch?: FetchFunction;
	/** Aborts the attempt and the waits: rejects with its reason. */
	signal?: AbortSignal;
	/** Called before each wait. */
	onRetry?: (retry: RetryEvent) => void;
}

/** What onRetry is told before each wait. */
export interface RetryEvent {
	/** The attempt about to be made (2 for the first retry). */
	attempt: number;
	attempts: number;
	delayMs: number;
	/** The last answer's status, 0 without one. */
	status: number;
	/** Whether that attempt may have applied the batch. */
	unknown: boolean;
}

/** The answer to a batch of edits, plus what postEdits() adds. */
export interface EditAnswer {
	first_seq: number;
	last_seq: number;
	/** The world's last sequence number. */
	seq: number;
	/** The world hash after the batch, 16 hex digits. */
	world_hash: string;
	/** [cx, cz] of every chunk the batch touched, once each. */
	chunks: [number, number][];
	/** Attempts made (1 when nothing failed). */
	attempts: number;
	/** The batch's Idempotency-Key. */
	key: string;
	/** Whether the answer was a replay of an earlier attempt's. */
	replay: boolean;
}

/** The answer to a revert or an undo: an edit's plus count. */
export interface RevertAnswer extends EditAnswer {
	/** The edits the filter matched. */
	count: number;
}

/** An edit as GET .../edits lists it. */
export type LoggedEdit = Edit & {
	seq: number;
	/** Absent for edits logged before version 3 of the record. */
	author?: string;
	/** ms since 1970, the log's clock. */
	time?: number;
	/** While a revert takes it out. */
	reverted?: boolean;
};

/** lookupEdits()' answer: GET .../edits?x=&z=. */
export interface EditLookup {
	seq: number;
	world_hash: string;
	/** Newest first. */
	edits: LoggedEdit[];
	/** There when the page was cut: pass it as before for the next page. */
	next?: number;
}

/** lookupEdits()' options. */
export interface LookupOptions {
	before?: number;
	limit?: number;
	author?: string;
	/** Default globalThis.fetch. */
	fetch?: FetchFunction;
	init?: RequestInit;
}

/** A tile of a world made here (World.tile, generateTile). */
export interface TileRequest {
	/** Default 0. */
	lod?: number;
	/** int32. */
	cx: number;
	cz: number;
	/** Default 'height'. */
	layers?: Layers;
	/** A ?precision= name or micrometres (default: the generator's own quantum). */
	precision?: Precision | number;
	/** ?format=: 1 (versions 1/2), 3 (versions 3/4), 5 (versions 5/6), 7 or 0 (the current: 7/8, the default). */
	format?: 0 | 1 | 3 | 5 | 7;
}

/** World.tile()'s and generateTile()'s options. */
export interface WorldTileOptions<M extends boolean | undefined = boolean | undefined,
	E extends boolean | undefined = boolean | undefined> {
	/** An EditLog of this world: its edits applied. */
	edits?: EditLog;
	/** Heights in metres too (default true). */
	metres?: M;
	/** Default true; false: heights only, bytes null, header from terrain_generate's fields. */
	encode?: E;
}

/** A tile made by terrain.wasm: bytes is the server's identity body for the same request. */
export interface GeneratedTile<Heights extends Float64Array | null = Float64Array | null,
	Encoded extends boolean = boolean> {
	header: Encoded extends true ? TileHeader : TileInfo;
	quanta: Int32Array;
	heights: Heights;
	materials: Uint8Array | null;
	bytes: Encoded extends true ? Uint8Array : null;
}

/** Whether a tile is encoded as encode asks: true by default and with true. */
type EncodedFor<E extends boolean | undefined> = E extends false ? false : true;

/** A world of the core in this process (openWorld). */
export interface World {
	readonly seed: bigint;
	/** The generator's name. */
	readonly gen: string;
	/** The generator's fingerprint, 16 hex digits. */
	readonly fingerprint: string;
	readonly chunkLog2: number;
	readonly maxLod: number;
	readonly quantumUm: number;
	/**
	 * The tile { lod, cx, cz, layers, precision, format } of this world as
	 * the server makes it (terrain_generate_encoded): { header, quanta,
	 * heights, materials, bytes }, bytes the server's identity body for the
	 * same edits. precision: a ?precision= name ('10cm') or micrometres;
	 * format: the ?format= (7 or 0: versions 7 and 8, the current form and the default;
	 * 5, 3 or 1: versions 5 and 6, 3 and 4, or 1 and 2). options: edits (an EditLog of this world,
	 * world.edits(): its edits applied), metres (heights in metres too,
	 * default true), encode (default true; false: heights only, bytes null,
	 * header from terrain_generate's fields).
	 */
	tile<M extends boolean | undefined = undefined, E extends boolean | undefined = undefined>(
		key: TileRequest, options?: WorldTileOptions<M, E>): GeneratedTile<HeightsFor<M>, EncodedFor<E>>;
	/** A new, empty edit log of this world (terrain_edits_create). */
	edits(): EditLog;
	/** Frees the world and its edit logs. */
	close(): void;
}

/** A revert or an undo as GET .../edits lists it. */
export type LoggedRevert =
	| { seq: number; revert: RevertFilter & { floor?: number; history_ms?: number }; count?: number; undone?: boolean;
		author?: string; time?: number }
	| { seq: number; undo: number; floor?: number; history_ms?: number; author?: string; time?: number };

/**
 * A world's edit log in terrain.wasm (terrain_edits): batches applied in
 * sequence order, the world hash and each chunk's version and hash as the
 * server publishes them (docs/edits.md), and what World.tile() applies.
 */
export interface EditLog {
	readonly world: World;
	/**
	 * Apply a batch, as the JSON of POST .../edits ({"edits": [...]}, text
	 * or object) numbered from firstSeq (the log's next: seq + 1), or as
	 * canonical records (a Uint8Array of 42-byte edits). All or nothing.
	 * With { author, time } (the server's answer or GET .../edits gives
	 * them, record version 3) the world hash is the server's too.
	 */
	apply(batch: { edits: readonly Edit[] } | string | Uint8Array, firstSeq?: number,
		options?: { author?: string; time?: number }): this;
	/**
	 * Apply a revert or an undo (docs/edits.md, "Reverts"): r is the JSON of
	 * POST .../reverts (a filter { author, since_time, until_time, area,
	 * seq_from, seq_to } or { undo: SEQ }, text or object), sent by author
	 * at the log's time (ms), reaching back to edit floor, at seq (the
	 * log's next); or r is an entry of GET .../edits ({ seq, revert:
	 * { ...filter, floor }, author, time } or { seq, undo, author, time }),
	 * which says all of those. From then on the edits the filter matches
	 * no longer count (an undo makes its revert's count again), in the
	 * chunk hashes and tiles as on the server. All or nothing.
	 *
	 *   for (const e of page.edits) 'revert' in e || 'undo' in e ? log.revert(e) : ...
	 */
	revert(r: RevertFilter | (Undo & { history_ms?: number }) | LoggedRevert | string,
		options?: { author?: string; time?: number; floor?: number; seq?: number }): this;
	/** The last applied sequence number (0: none). */
	readonly seq: number;
	/** The world hash after it, 16 hex digits (GET /v1/worlds/{seed}'s world_hash). */
	readonly worldHash: string;
	/** Chunk (cx, cz)'s { version, hash } (GET .../hashes; 0 and '0000000000000000' when no edit touches it). */
	chunk(cx: number, cz: number): { version: number; hash: string };
	/** Frees the log. */
	close(): void;
}

/** openWorld()'s argument: a built-in preset's name (gen), or a preset's JSON. */
export interface WorldOptions {
	seed: Seed;
	/** A built-in preset's name (default 'default'); with preset, only its name in messages. */
	gen?: string;
	/** A preset's JSON text or object. */
	preset?: string | { readonly [field: string]: unknown };
}

/** generateTile()'s key: the world and the tile. */
export interface GenerateKey extends WorldOptions, TileRequest {}

/** selfCheck()'s answer. */
export interface SelfCheck {
	ok: boolean;
	message: string;
	/** 16 hex digits: the "selfcheck" a server publishes in its world info. */
	digest: string;
}

/** A tile local mode made here: etag and url null. */
export interface LocalTile<Heights extends Float64Array | null = Float64Array | null> extends GeneratedTile<Heights, true> {
	etag: null;
	url: null;
	local: true;
}

/** A tile of local mode: made here (local: true), or fetched from the server. */
export type LocalModeTile<Heights extends Float64Array | null = Float64Array | null> =
	| LocalTile<Heights>
	| (FetchedTile<Heights> & { local?: undefined });

/** openLocal()'s options. */
export interface LocalOptions {
	/** Default globalThis.fetch. */
	fetch?: FetchFunction;
	init?: RequestInit;
	/** How long the edit versions of GET .../hashes are kept, ms (default 60000). */
	maxAge?: number;
}

/** The tiles' options in local mode: the decoder's (fetched tiles) and metres. */
export type LocalTileOptions<M extends boolean | undefined = boolean | undefined> = FetchOptions<M>;

/** What openLocal() resolves to. */
export interface LocalWorld {
	/** The world made here. */
	world: World;
	/** Tiles made here, tiles fetched, GET .../hashes requests. */
	stats: { generated: number; fetched: number; hashes: number };
	fetchTile<M extends boolean | undefined = undefined>(tile: Omit<TileKey, 'seed' | 'gen'>,
		options?: LocalTileOptions<M>): Promise<LocalModeTile<HeightsFor<M>>>;
	fetchBundle<M extends boolean | undefined = undefined>(rect: Omit<BundleKey, 'seed' | 'gen'>,
		options?: LocalTileOptions<M>): Promise<Map<string, LocalModeTile<HeightsFor<M>>>>;
}

/** Codes of TileError: the reference decoder's names, the client's own, and HTTP_<status>. */
export type TileErrorCode =
	| 'ERR_INVAL' | 'ERR_NOMEM' | 'ERR_RANGE' | 'ERR_TRUNC' | 'ERR_MAGIC' | 'ERR_VERSION' | 'ERR_CORRUPT'
	| 'ERR_CHECKSUM' | 'ERR_TOOBIG' | 'ERR_NOTFOUND' | 'ERR_PARSE' | 'ERR_ZSTD' | 'ERR_IO' | 'ERR_BUSY'
	| 'ERR_AGAIN' | 'ERR_CONFLICT' | 'ERR_ZLIB' | 'ERR_MISMATCH' | 'ERR_SEAM' | 'ERR_TIMEOUT'
	| `HTTP_${number}` | `ERR_${number}`;

// ---- the exports ----

/** XXH3-64 with seed 0 of bytes (Uint8Array), as a BigInt. */
export function xxh3(bytes: Uint8Array): bigint;

/** The same as 16 lowercase hex digits. */
export const xxh3Hex: (bytes: Uint8Array) => string;

/** The tile header's length: 64 bytes. */
export const HEADER_LEN: 64;

/** Material ids of the version 2 material layer, with their map colours. */
export const MATERIALS: readonly Material[];

/** A decoding error; code is the reference decoder's name (ERR_TRUNC...). */
export class TileError extends Error {
	constructor(code: TileErrorCode, message: string);
	name: 'TileError';
	code: TileErrorCode;
	/** HTTP errors: the status (0: no answer). */
	status?: number;
	/** A 503's Retry-After, seconds (fetchTile, fetchBundle). */
	retryAfter?: number;
	/** The server's parsed JSON error, or null (postEdits, postReverts, lookupEdits). */
	body?: { error?: string; detail?: string; [field: string]: unknown } | null;
	/** Attempts made (postEdits, postReverts). */
	attempts?: number;
	/** The batch's Idempotency-Key (postEdits, postReverts). */
	key?: string;
	/** Whether some attempt may have applied the batch (postEdits, postReverts). */
	unknown?: boolean;
}

/**
 * Check a tile's header (the checks of docs/tile-format.md, "Validation",
 * in its order, that need only the 64 header bytes) and return its fields.
 */
export function decodeHeader(u8: Uint8Array): TileHeader;

/**
 * Decode a whole tile (ArrayBuffer or Uint8Array). Returns { header,
 * quanta: Int32Array of side*side heights in quanta (row z, then x),
 * heights: Float64Array of the same in metres (null with metres: false),
 * materials: Uint8Array of side*side material ids (version 2) or null }.
 * Throws TileError with the reference decoder's code, checks in its order.
 * verify: check the XXH3 checksum (default true).
 */
export function decodeTile<M extends boolean | undefined = undefined>(input: ArrayBufferLike | Uint8Array,
	options?: DecodeOptions<M>): DecodedTile<HeightsFor<M>>;

/**
 * The 64-bit seed (BigInt) the server uses for seed: a number, a BigInt,
 * a decimal string (0 .. 2^64-1), or a text seed of [A-Za-z0-9_-]{1,64}
 * (not all digits), which is XXH3-64 of its bytes (common/seed.h).
 */
export function seedU64(seed: Seed): bigint;

/**
 * Decode a bundle (the batch answer; docs/tile-format.md, "Bundles"):
 * every member decoded and verified as decodeTile() does (options passed
 * on), in index order: [{ cx, cz, tile }]. Throws TileError for a bundle
 * whose magic or version is unknown, that is truncated, whose count is 0
 * or above 4096, whose bodies leave it or overlap the index, or whose
 * member's header names another chunk than its index entry.
 */
export function decodeBundle<M extends boolean | undefined = undefined>(input: ArrayBufferLike | Uint8Array,
	options?: DecodeOptions<M>): { cx: number; cz: number; tile: DecodedTile<HeightsFor<M>> }[];

/** The URL of one tile: base ('' for the page's own server) + /v1/worlds/... */
export const tileUrl: (base: string, tile: TileKey) => string;

/** The URL of the bundle of the inclusive rectangle cx0..cx1 x cz0..cz1 (at most 64 tiles). */
export const bundleUrl: (base: string, rect: BundleKey) => string;

/** The URL of the world's info (fingerprint, LOD range, edit_seq, world_hash). */
export const worldUrl: (base: string, world: WorldRef) => string;

/**
 * Fetch, decode and verify one tile: what decodeTile() returns, plus etag
 * (the response's ETag) and url. Checks the checksum and that the header
 * names the seed, LOD and chunk asked for (ERR_MISMATCH otherwise); HTTP
 * errors throw TileError with code HTTP_<status> and the server's detail.
 * options: { fetch (default globalThis.fetch), init (fetch's RequestInit:
 * signal, cache, headers...), verify, metres }.
 */
export function fetchTile<M extends boolean | undefined = undefined>(base: string, tile: TileKey,
	options?: FetchOptions<M>): Promise<FetchedTile<HeightsFor<M>>>;

/**
 * Fetch, decode and verify the tiles of a rectangle (at most 64) as one
 * bundle: a Map from "cx,cz" to what decodeTile() returns. Every chunk of
 * the rectangle must be there once, with the seed and LOD asked for.
 * options as fetchTile().
 */
export function fetchBundle<M extends boolean | undefined = undefined>(base: string, rect: BundleKey,
	options?: FetchOptions<M>): Promise<Map<string, DecodedTile<HeightsFor<M>>>>;

/** The URL that takes edits: POST {"edits": [...]}. */
export const editsUrl: (base: string, world: WorldRef) => string;

/** A fresh Idempotency-Key: 128 random bits (crypto.getRandomValues) as 32 lowercase hex digits. */
export function newEditKey(): string;

/**
 * POST a batch of edits ({op, x, z, radius, ...} objects, docs/edits.md) to
 * the world { seed, gen } so that it is applied once: every attempt carries
 * the same Idempotency-Key, and the server answers a retry of an applied
 * batch with its first answer ("replay": true). Retries, up to attempts,
 * on 503 and 429 (not applied), on 409 (the key still in flight), and on
 * 502, 504, a timeout (timeoutMs per attempt) or a lost connection
 * (outcome unknown); each waits the answer's Retry-After (at most 300 s), else 100 ms
 * doubling to 2 s, jittered to 50..100 %. Resolves to the answer
 * ({ first_seq, last_seq, world_hash, chunks }) plus attempts, key and
 * replay (a boolean). Rejects, on another answer (400, 401, 422: the key
 * came with another body...) or once attempts are spent, with a TileError
 * (code HTTP_<status>, or ERR_IO without an answer) carrying status (0
 * without one), body (the parsed error, or null), attempts, key and
 * unknown: true when some attempt may have applied the batch - call again
 * with { key } to apply it once and learn its outcome. signal aborts it
 * all (rejects with its reason); onRetry({ attempt, attempts, delayMs,
 * status, unknown }) is called before each wait.
 *
 *   const a = await postEdits('', { seed: 42 }, [{ op: 'raise', x: 0, z: 0, radius: 30, strength: 5 }]);
 *   // a.last_seq, a.world_hash, a.attempts (1 when nothing failed), a.replay
 */
export function postEdits(base: string, world: WorldRef, edits: readonly Edit[], options?: PostOptions): Promise<EditAnswer>;

/** The URL that takes reverts and undos: POST a filter or {"undo": SEQ}. */
export const revertsUrl: (base: string, world: WorldRef) => string;

/**
 * POST a revert (a filter: any of author, since_time, until_time, area
 * [x0, z0, x1, z1] in metres, seq_from, seq_to) or an undo ({ undo: SEQ })
 * to the world { seed, gen } (docs/edits.md, "Reverts"), applied once, with
 * the retries, options, answer and errors of postEdits(). Moderators and
 * admins only: pass their token. The answer is that of an edit plus count
 * (the edits the filter matched). A 409 that is not about the key (an undo
 * of a revert already undone) is not retried.
 *
 *   const r = await postReverts('', { seed: 42 }, { author: 'bob', area: [0, 0, 512, 512] }, { token });
 *   await postReverts('', { seed: 42 }, { undo: r.first_seq }, { token });
 */
export function postReverts(base: string, world: WorldRef, filter: RevertFilter | Undo,
	options?: PostOptions): Promise<RevertAnswer>;

/**
 * The edits whose brush covers the point (x, z) metres of the world
 * { seed, gen }, newest first (docs/edits.md, "Lookups"): the answer of
 * GET .../edits?x=&z= ({ seq, world_hash, edits: [{ seq, op, ..., author,
 * time, reverted? }], next? }); pass next as before for the page after.
 * options: { before, limit, author, fetch, init }.
 */
export function lookupEdits(base: string, world: WorldRef, x: number, z: number,
	options?: LookupOptions): Promise<EditLookup>;

/** The heights of a decoded tile in metres as a Float32Array (or type), side x side, rows of z. */
export function heightArray(tile: TileLike): Float32Array;
export function heightArray<T extends Float32Array | Float64Array>(tile: TileLike, type: new (length: number) => T): T;

/**
 * One grid of the tiles of the inclusive rectangle cx0..cx1 x cz0..cz1
 * (a Map from "cx,cz", as fetchBundle() returns, or an array of decoded
 * tiles), all at one LOD: neighbours share their edge samples, so each
 * shared row and column is kept once. Returns { width, height (samples),
 * spacing (metres between samples), x0, z0 (world position of sample 0),
 * lod, heights: Float32Array of width * height metres, rows of z }.
 * Throws TileError when a tile is missing or at another LOD, or when two
 * neighbours disagree on their shared edge.
 */
export function stitch(tiles: ReadonlyMap<string, TileLike> | readonly TileLike[], rect: Rect): Grid;

/**
 * A triangle mesh of a grid (stitch()): positions (x, y, z per sample:
 * world x and z in metres relative to the grid's sample 0, plus offset,
 * y the height times verticalScale), normals (unit, from central
 * differences) and indices (two triangles per cell, counter-clockwise
 * seen from above: three.js's front faces; docs/js-client.md for Babylon.js), as
 * typed arrays for a BufferGeometry or a VertexData.
 * options: { verticalScale = 1, offset: [x, y, z] = [0, 0, 0], skirt = 0 }.
 * skirt > 0 closes the sheet at its four edges with walls down to skirt
 * metres below the grid's lowest sample (vertices from skirtStart on, 2
 * per edge sample and side, normals level and outward, faces
 * counter-clockwise seen from outside): a grid seen from beyond its edge
 * then shows a wall where the ground is cut, not the back of the ground
 * through an open edge (back faces are culled, so that is a hole).
 * Returns { positions, normals, indices, skirtStart } (skirtStart = the
 * grid's width * height: the first skirt vertex).
 */
export function gridMesh(grid: Pick<Grid, 'width' | 'height' | 'spacing'> & { heights: ArrayLike<number> },
	options?: MeshOptions): Mesh;

/** The chunks of the square ring of radius r around (cx, cz): (2r + 1)^2 of them, as a rectangle. */
export const ringRect: (cx: number, cz: number, r: number) => Rect;

/**
 * Load terrain.wasm (default: the file beside this module) and use it from
 * now on. Resolves to true, or to false when it cannot be had (no file,
 * no WebAssembly): the module then works as before, without generation.
 */
export function loadWasm(url?: string | URL): Promise<boolean>;

/** Whether terrain.wasm is loaded (loadWasm). */
export const wasmLoaded: () => boolean;

/**
 * A world of the core in this process (terrain_world_create): (gen, seed)
 * with gen a built-in preset's name, or preset (a preset's JSON text or
 * object). Needs loadWasm(). Returns a World: { fingerprint (16 hex
 * digits), chunkLog2, maxLod, quantumUm, tile(key, options), edits(),
 * close() }.
 */
export function openWorld(options: WorldOptions): World;

/**
 * One tile generated here, as the server would send it for a chunk with
 * no edits: generateTile({ seed, gen, preset, lod, cx, cz, layers,
 * precision, format }, options as World.tile()). Keeps the few worlds it
 * opens; needs loadWasm().
 */
export function generateTile<M extends boolean | undefined = undefined, E extends boolean | undefined = undefined>(
	key: GenerateKey, options?: WorldTileOptions<M, E>): GeneratedTile<HeightsFor<M>, EncodedFor<E>>;

/**
 * Does this terrain.wasm make the world it was built to make? Runs
 * libterrain's self-check (the server's start-up golden tiles, about 10
 * ms): { ok, message, digest } with digest (16 hex digits) the one a
 * server publishes as "selfcheck" in its world info.
 */
export function selfCheck(): SelfCheck;

/** The URL of the edit versions and hashes of a rectangle (at most 64 x 64 chunks). */
export const hashesUrl: (base: string, rect: WorldRef & Rect) => string;

/**
 * Open world { seed, gen } of the server at base in local mode: tiles of
 * chunks that no edit reaches are generated here by terrain.wasm (needs
 * loadWasm()), and the server is asked only for what this process cannot
 * know: its world info (the generator's fingerprint and the digest of the
 * golden tiles it checked at start, which must be this module's: else
 * TileError ERR_MISMATCH, and nothing is generated), the edit versions of
 * the chunks asked for (GET .../hashes, kept maxAge ms, default 60000)
 * and the tiles of edited chunks, whose edit_seq must be that version.
 * Returns { world, fetchTile(tile, options), fetchBundle(rect, options),
 * stats: { generated, fetched, hashes } }, the fetches answering as
 * fetchTile() and fetchBundle() do (etag and url null for tiles made
 * here, which carry local: true). options: { fetch, init, maxAge }.
 */
export function openLocal(base: string, world: WorldRef, options?: LocalOptions): Promise<LocalWorld>;
export {};
