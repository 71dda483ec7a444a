// usage.ts - every export of the npm package terrain-chunk-client, used with
// types written out, for tsc --strict --noEmit (tests/library/npm_package.sh;
// not run). A declaration that lost a type (any) or got one wrong fails
// here or in wrong/*.ts.
import {
	xxh3, xxh3Hex, HEADER_LEN, MATERIALS, TileError, decodeHeader, decodeTile, seedU64, decodeBundle,
	tileUrl, bundleUrl, worldUrl, fetchTile, fetchBundle, editsUrl, newEditKey, postEdits, revertsUrl,
	postReverts, lookupEdits, heightArray, stitch, gridMesh, ringRect, loadWasm, wasmLoaded, openWorld,
	generateTile, selfCheck, hashesUrl, openLocal,
} from 'terrain-chunk-client';
import type {
	TileHeader, TileInfo, DecodedTile, FetchedTile, GeneratedTile, Grid, Mesh, Edit, World, EditLog,
	EditAnswer, RevertAnswer, EditLookup, LocalWorld, LocalModeTile, SelfCheck, Rect, MaterialName,
	TileErrorCode, RetryEvent,
} from 'terrain-chunk-client';

const base = 'http://127.0.0.1:8080';
const bytes: Uint8Array = new Uint8Array(64);

const hash: bigint = xxh3(bytes);
const hex: string = xxh3Hex(bytes);
const len: 64 = HEADER_LEN;
const names: MaterialName[] = MATERIALS.map((m) => m.name);
const colour: string = MATERIALS[0].colour;
const seed: bigint = seedU64('hello') + seedU64(42) + seedU64(7n);

const header: TileHeader = decodeHeader(bytes);
const version: number = header.version;
const states: 2 | 8 = header.states;
const tans: boolean = header.tans;
const t: DecodedTile<Float64Array> = decodeTile(bytes);
const metres: Float64Array = decodeTile(bytes.buffer, { verify: false }).heights;
const none: null = decodeTile(bytes, { metres: false }).heights;
const maybe: Float64Array | null = decodeTile(bytes, { metres: Math.random() > 0.5 }).heights;
const quanta: Int32Array = t.quanta;
const materials: Uint8Array | null = t.materials;
for (const { cx, cz, tile } of decodeBundle(bytes, { wasm: false })) {
	const sum: number = cx + cz + tile.heights[0];
}

const urls: string[] = [
	tileUrl(base, { seed: 42, gen: 'alpine', lod: 2, cx: 0, cz: -1, layers: 'height,material' }),
	bundleUrl('', { seed: 'abc', cx0: 0, cz0: 0, cx1: 1, cz1: 1 }),
	worldUrl(base, { seed: 42n }),
	editsUrl(base, { seed: 42 }),
	revertsUrl(base, { seed: 42, gen: 'mesa' }),
	hashesUrl(base, { seed: 42, ...ringRect(0, 0, 3) }),
];

async function network(signal: AbortSignal): Promise<void> {
	const one: FetchedTile<Float64Array> = await fetchTile(base, { seed: 42, cx: 0, cz: 0 }, { init: { signal } });
	const etag: string | null = one.etag;
	const rect: Rect = ringRect(0, 0, 2);
	const tiles: Map<string, DecodedTile<Float64Array>> = await fetchBundle(base, { seed: 42, lod: 2, ...rect },
		{ fetch: (url, init) => fetch(url, init) });
	const grid: Grid = stitch(tiles, rect);
	const fromArray: Grid = stitch([...tiles.values()], rect);
	const mesh: Mesh = gridMesh(grid, { verticalScale: 2, offset: [0, -10, 0], skirt: 50 });
	const index: number = mesh.indices[0] + mesh.skirtStart + fromArray.width;
	const h32: Float32Array = heightArray(one);
	const h64: Float64Array = heightArray(one, Float64Array);

	const edits: Edit[] = [
		{ op: 'raise', x: 0, z: 0, radius: 30, strength: 5 },
		{ op: 'flatten', x: 1, z: 2, radius: 10, strength: 0.5, height: 100, falloff: 'linear' },
		{ op: 'set', x: 1, z: 2, radius: 10, height: -3 },
	];
	const a: EditAnswer = await postEdits(base, { seed: 42 }, edits, {
		token: 'secret', key: newEditKey(), attempts: 3, timeoutMs: 5000, signal,
		onRetry: (r: RetryEvent) => console.log(r.attempt, r.delayMs, r.unknown),
	});
	const chunk: [number, number] = a.chunks[0];
	const replay: boolean = a.replay;
	const r: RevertAnswer = await postReverts(base, { seed: 42 }, { author: 'bob', area: [0, 0, 512, 512] }, { token: 't' });
	const u: RevertAnswer = await postReverts(base, { seed: 42 }, { undo: r.first_seq });
	const count: number = r.count + u.count;
	const look: EditLookup = await lookupEdits(base, { seed: 42 }, 300, 200, { limit: 10, before: look0() });
	const who: string | undefined = look.edits[0].author;
	const next: number | undefined = look.next;

	const local: LocalWorld = await openLocal(base, { seed: 42 }, { maxAge: 1000 });
	const lt: LocalModeTile<Float64Array> = await local.fetchTile({ lod: 0, cx: 1, cz: 1 });
	if (lt.local) {
		const b: Uint8Array = lt.bytes;
		const e: null = lt.etag;
	} else {
		const e: string | null = lt.etag;
	}
	const lb: Map<string, LocalModeTile> = await local.fetchBundle({ lod: 2, cx0: 0, cz0: 0, cx1: 1, cz1: 1 });
	const made: number = local.stats.generated + local.stats.fetched + local.stats.hashes;
	const w: World = local.world;
	const grid2: Grid = stitch(lb, { cx0: 0, cz0: 0, cx1: 1, cz1: 1 });
}
function look0(): number { return 5; }

async function wasm(): Promise<void> {
	const ok: boolean = await loadWasm();
	const ok2: boolean = await loadWasm(new URL('./terrain.wasm', import.meta.url));
	const ok3: boolean = await loadWasm('/assets/terrain.wasm');
	const loaded: boolean = wasmLoaded();
	const sc: SelfCheck = selfCheck();
	const digest: string = sc.digest;

	const w: World = openWorld({ seed: 42, gen: 'alpine' });
	const j: World = openWorld({ seed: 'text', preset: { name: 'x' } });
	const fp: string = w.fingerprint + j.gen;
	const lods: number = w.maxLod + w.chunkLog2 + w.quantumUm;
	const g: GeneratedTile<Float64Array, true> = w.tile({ lod: 0, cx: 3, cz: -2, layers: 'height,material', precision: '10cm' });
	const body: Uint8Array = g.bytes;
	const full: TileHeader = g.header;
	const plain = w.tile({ lod: 1, cx: 0, cz: 0, format: 1 }, { encode: false, metres: false });
	const noBytes: null = plain.bytes;
	const noHeights: null = plain.heights;
	const info: TileInfo = plain.header;
	const log: EditLog = w.edits();
	log.apply({ edits: [{ op: 'raise', x: 800, z: -500, radius: 20, strength: 2 }] })
		.apply('{"edits": []}', log.seq + 1, { author: 'alice', time: 1796550000123 })
		.apply(new Uint8Array(42));
	log.revert({ seq_from: 1 }, { author: 'mod', time: 1000 });
	log.revert({ seq: 3, undo: 2, author: 'mod', time: 2000 });
	log.revert({ seq: 4, revert: { area: [700, 1000, 900, 1100], floor: 1 }, count: 1, author: 'mod', time: 3000 });
	const edited: GeneratedTile<Float64Array, true> = w.tile({ cx: 3, cz: -2 }, { edits: log });
	const c: { version: number; hash: string } = log.chunk(3, -2);
	const wh: string = log.worldHash;
	log.close();
	w.close();
	const gt: DecodedTile<null> = generateTile({ seed: 42, lod: 2, cx: 0, cz: 0 }, { metres: false });
	const gb: Uint8Array = generateTile({ seed: 42, gen: 'mesa', cx: 0, cz: 0, precision: 50000 }).bytes;
}

try {
	decodeTile(bytes);
} catch (e) {
	if (e instanceof TileError) {
		const code: TileErrorCode = e.code;
		const status: number | undefined = e.status;
		const unknown: boolean | undefined = e.unknown;
		const detail: string | undefined = e.body?.detail;
		const name: 'TileError' = e.name;
	}
}
const mine: TileError = new TileError('ERR_MISMATCH', 'made here');
