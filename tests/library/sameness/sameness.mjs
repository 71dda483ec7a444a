// sameness.mjs - the proof of sameness (issue 29, run by tests/library/sameness.sh):
// 1,000 chunks drawn at random (a fixed seed, so every run draws the same)
// over every built-in preset, LODs 0 to 8, every precision, both tile
// forms, heights alone and with materials, edited and unedited, near the
// origin, at the int32 corners and anywhere between, and for each the
// tile's bytes from three places that share no code path but the core:
// the real server (GET .../chunks/{lod}/{cx}/{cz}, identity body), the
// native library (libterrain.so through tests/library/sameness/lib_tiles) and
// terrain.wasm (clients/js/terrain.js). All three must be equal, and the
// edited worlds' hashes too. Environment: BASE (the server, edits
// allowed), WASM (terrain.wasm), LIB_TILES (the helper). Prints ok/FAIL
// lines; exit 0 when all passed.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { loadWasm, openWorld, seedU64, xxh3Hex } from '../../../clients/js/terrain.js';

const { BASE, WASM, LIB_TILES } = process.env;
const N = Number(process.env.SAMENESS_N || 1000);
let failed = 0;
const check = (ok, m) => { console.log(`${ok ? 'ok' : 'FAIL'}: ${m}`); if (!ok) failed++; };

// xorshift64*: the draws are the same on every run
let state = 0x9e3779b97f4a7c15n;
const rnd = () => {
	state ^= state >> 12n; state ^= (state << 25n) & 0xffffffffffffffffn; state ^= state >> 27n;
	return Number(((state * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn) >> 11n) / 2 ** 53;
};
const pick = (v) => v[Math.floor(rnd() * v.length)];
const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
const MAX = 2147483647, MIN = -2147483648;

// ---- worlds, and edits posted to the server -----------------------------------------
const PRESETS = ['default', 'alpine', 'islands', 'mesa', 'canyons'];
const worlds = [];
for (const [k, gen] of PRESETS.entries()) {
	worlds.push({ gen, seed: String(100 + k), edited: true });
	worlds.push({ gen, seed: k % 2 ? `plain-${gen}` : String(2n ** 64n - 1n - BigInt(k)), edited: false });
}
worlds.push({ gen: 'eroded', seed: '7', edited: true, rare: true });

function brush(cx, cz) {
	const op = pick(['raise', 'lower', 'flatten', 'set']);
	const e = { op, x: cx * 256 + int(0, 256) + 0.5 * int(0, 1), z: cz * 256 + int(0, 256), radius: int(3, 300) };
	if (op === 'raise' || op === 'lower') e.strength = int(1, 4000) / 100;
	if (op === 'flatten') { e.strength = int(1, 100) / 100; e.height = int(-200, 900); }
	if (op === 'set') e.height = int(-200, 900);
	if (rnd() < 0.3) e.falloff = 'linear';
	return e;
}
const near = () => [int(-3, 3), int(-3, 3)];
const corner = () => [pick([MAX - int(0, 2), MIN + int(0, 2)]), pick([MAX - int(0, 2), MIN + int(0, 2)])];

for (const w of worlds.filter((x) => x.edited)) {
	w.batches = [];
	w.chunks = new Set();
	for (let b = 0; b < 2; b++) {
		const edits = Array.from({ length: 10 }, () => brush(...(rnd() < 0.7 ? near() : corner())));
		const json = JSON.stringify({ edits });
		const res = await fetch(`${BASE}/v1/worlds/${w.seed}/edits?gen=${w.gen}`,
			{ method: 'POST', headers: { 'Content-Type': 'application/json' }, body: json });
		const a = await res.json();
		if (res.status !== 200) throw new Error(`POST edits: ${res.status} ${JSON.stringify(a)}`);
		w.batches.push({ first: a.first_seq, json, author: a.author, time: a.time });
		w.worldHash = a.world_hash;
		for (const [cx, cz] of a.chunks) w.chunks.add(`${cx},${cz}`);
	}
	w.chunks = [...w.chunks].map((s) => s.split(',').map(Number));
}

// ---- the draws ------------------------------------------------------------------------
const keys = [];
for (let k = 0; k < N; k++) {
	const w = rnd() < 0.02 ? worlds.at(-1) : pick(worlds.filter((x) => !x.rare));
	const lod = int(0, 8);
	let cx, cz;
	const where = rnd();
	if (w.edited && where < 0.45) [cx, cz] = pick(w.chunks);
	else if (where < 0.7) [cx, cz] = near();
	else if (where < 0.9) [cx, cz] = corner();
	else [cx, cz] = [int(MIN, MAX), int(MIN, MAX)];
	const material = rnd() < 0.35 && !(w.gen === 'eroded' && lod > 2);
	const precision = pick([0, 10000, 50000, 100000, 500000, 1000000]);
	keys.push({ w, lod, cx, cz, material, precision, format: rnd() < 0.15 ? 1 : 0 });
}

// ---- the server -------------------------------------------------------------------------
const um2name = { 10000: '1cm', 50000: '5cm', 100000: '10cm', 500000: '50cm', 1000000: '1m' };
const server = [];
for (const k of keys) {
	let q = `?gen=${k.w.gen}`;
	if (k.material) q += '&layers=height,material';
	if (k.precision) q += `&precision=${um2name[k.precision]}`;
	if (k.format) q += '&format=1';
	const res = await fetch(`${BASE}/v1/worlds/${k.w.seed}/chunks/${k.lod}/${k.cx}/${k.cz}${q}`,
		{ headers: { 'Accept-Encoding': 'identity' } });
	const b = new Uint8Array(await res.arrayBuffer());
	server.push(res.status === 200 ? `${b.length} ${xxh3Hex(b)}` : `HTTP ${res.status} ${new TextDecoder().decode(b)}`);
}

// ---- the native library ---------------------------------------------------------------------
const lines = [];
const byWorld = new Map(worlds.map((w) => [w, []]));
keys.forEach((k, i) => byWorld.get(k.w).push(i));
const order = [];
for (const [w, idx] of byWorld) {
	lines.push(`world ${w.gen} ${seedU64(w.seed)}`);
	order.push({ world: w });
	for (const b of w.batches ?? []) { lines.push(`edits ${b.first} ${b.author} ${b.time} ${b.json}`); order.push({ edits: w }); }
	for (const i of idx) {
		const k = keys[i];
		lines.push(`tile ${k.lod} ${k.cx} ${k.cz} ${k.material ? 1 : 0} ${k.precision} ${k.format}`);
		order.push({ tile: i });
	}
}
const child = spawn(LIB_TILES, [], { stdio: ['pipe', 'pipe', 'inherit'] });
const out = [];
const rl = createInterface({ input: child.stdout });
rl.on('line', (l) => out.push(l));
child.stdin.end(lines.join('\n') + '\n');
await new Promise((r) => child.on('close', r));
const lib = new Array(N);
const libHash = new Map();
order.forEach((o, j) => {
	if (o.tile !== undefined) lib[o.tile] = out[j];
	else if (o.edits) libHash.set(o.edits, out[j]);
	else if (!/^ok/.test(out[j] ?? '')) lib.fill(`world: ${out[j]}`);
});

// ---- terrain.wasm -----------------------------------------------------------------------------
check(await loadWasm(new URL(`file://${WASM}`)), 'terrain.wasm loaded');
const wasm = new Array(N);
const wasmHash = new Map();
for (const [w, idx] of byWorld) {
	const world = openWorld({ seed: w.seed, gen: w.gen }), log = world.edits();
	for (const b of w.batches ?? []) log.apply(b.json, b.first, { author: b.author, time: b.time });
	wasmHash.set(w, log.worldHash);
	for (const i of idx) {
		const k = keys[i];
		try {
			const t = world.tile({ lod: k.lod, cx: k.cx, cz: k.cz, layers: k.material ? 'height,material' : 'height',
				precision: k.precision || undefined, format: k.format || undefined }, { edits: log, metres: false });
			wasm[i] = `${t.bytes.length} ${xxh3Hex(t.bytes)}`;
		} catch (e) {
			wasm[i] = `error ${e.code} ${e.message}`;
		}
	}
	world.close();
}

// ---- the verdict --------------------------------------------------------------------------------
const differ = keys.map((k, i) => i).filter((i) => !(server[i] === lib[i] && lib[i] === wasm[i]));
for (const i of differ.slice(0, 10)) {
	const k = keys[i];
	console.log(`  ${k.w.gen} seed ${k.w.seed} ${k.lod}/${k.cx}/${k.cz} material ${k.material} um ${k.precision} format ${k.format}:` +
		` server ${server[i]}, library ${lib[i]}, wasm ${wasm[i]}`);
}
const ok200 = server.filter((s) => !s.startsWith('HTTP')).length;
check(ok200 === N, `the server answered 200 for all ${N} (${N - ok200} did not)`);
check(!differ.length, `${N} tiles byte for byte the same from the server, libterrain and terrain.wasm (${differ.length} differ)`);
const count = (f) => keys.filter(f).length;
console.log(`  drawn: ${count((k) => k.w.edited && k.w.chunks.some(([x, z]) => x === k.cx && z === k.cz))} on edited chunks, ` +
	`${count((k) => Math.abs(k.cx) > 2 ** 30)} near the int32 edges, ${count((k) => k.material)} with materials, ` +
	`${count((k) => k.precision > 10000)} coarser than 1 cm, ${count((k) => k.format)} in format 1, ` +
	`${new Set(keys.map((k) => k.w.gen)).size} presets, LODs ${Math.min(...keys.map((k) => k.lod))}..${Math.max(...keys.map((k) => k.lod))}`);
for (const w of worlds.filter((x) => x.edited)) {
	const l = libHash.get(w)?.split(' ')[2];
	check(l === w.worldHash && wasmHash.get(w) === w.worldHash,
		`world ${w.gen}/${w.seed}: world hash ${w.worldHash} from the server, library ${l}, wasm ${wasmHash.get(w)}`);
}
console.log(failed ? `${failed} failed` : 'all passed');
process.exit(failed ? 1 : 0);
