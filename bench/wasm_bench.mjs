// wasm_bench.mjs - section 16, the JavaScript side (bench/wasm.sh): in
// Node.js, on the 16 LOD-0 `default` tiles of bench_chunk() (seed 42) that
// bench/wasm_native writes to DIR (version 7, tile-K.bin): ms per tile of
// decodeTile() by the JavaScript decoder (wasm: false) and by terrain.wasm,
// the same on the chunks' version-5 tiles (tile-K.v5.bin), and of generating
// the same chunks' heights through terrain.wasm (World.tile, encode:
// false). Time is this process's CPU time, the median of 7 batches of at
// least 40 ms, the figures' batches interleaved. Checks on the way that
// both decoders and the generator give the native heights.
// With DIR/terrain-before.mjs (the module before issues 29 and 30, which
// bench/wasm.sh takes from git), also its JavaScript decoder on the same
// chunks' version-3 tiles (DIR/tile-K.v3.bin): the decoder the issue's
// "about 4.5 ms" was measured on.
//   node bench/wasm_bench.mjs TERRAIN_WASM DIR
// Output: a header row and one tab-separated row.
import { existsSync, readFileSync } from 'node:fs';
import { loadWasm, decodeTile, openWorld } from '../clients/js/terrain.js';

const [wasmPath, dir] = process.argv.slice(2);
if (!(await loadWasm(new URL(`file://${wasmPath}`)))) throw new Error(`cannot load ${wasmPath}`);
const chunks = readFileSync(`${dir}/chunks.txt`, 'utf8').trim().split('\n').map((l) => l.split(' ').map(Number));
const tiles = chunks.map((_, k) => new Uint8Array(readFileSync(`${dir}/tile-${k}.bin`)));
const v5 = chunks.map((_, k) => new Uint8Array(readFileSync(`${dir}/tile-${k}.v5.bin`)));
const world = openWorld({ seed: 42, gen: 'default' });

// the same heights three ways
for (let k = 0; k < tiles.length; k++) {
	const a = decodeTile(tiles[k], { wasm: false }).quanta, b = decodeTile(tiles[k]).quanta;
	const g = world.tile({ lod: 0, cx: chunks[k][0], cz: chunks[k][1] }, { encode: false }).quanta;
	if (a.length !== b.length || a.some((v, i) => v !== b[i] || v !== g[i])) throw new Error(`tile ${k}: heights differ`);
	const c = decodeTile(v5[k], { wasm: false }).quanta, d = decodeTile(v5[k]).quanta;
	if (c.length !== a.length || c.some((v, i) => v !== a[i] || v !== d[i])) throw new Error(`tile ${k}: version 5 heights differ`);
}

let before = null, v3 = null;
if (existsSync(`${dir}/terrain-before.mjs`)) {
	before = (await import(`file://${dir}/terrain-before.mjs`)).decodeTile;
	v3 = chunks.map((_, k) => new Uint8Array(readFileSync(`${dir}/tile-${k}.v3.bin`)));
	for (let k = 0; k < tiles.length; k++) {
		const a = before(v3[k]).quanta, b = decodeTile(tiles[k]).quanta;
		if (a.length !== b.length || a.some((v, i) => v !== b[i])) throw new Error(`tile ${k}: the decoder before differs`);
	}
}

const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };
const figs = [
	(k) => decodeTile(tiles[k % 16], { wasm: false, metres: false }),
	(k) => decodeTile(tiles[k % 16], { metres: false }),
	(k) => world.tile({ lod: 0, cx: chunks[k % 16][0], cz: chunks[k % 16][1] }, { metres: false, encode: false }),
	(k) => decodeTile(v5[k % 16], { wasm: false, metres: false }),
	(k) => decodeTile(v5[k % 16], { metres: false }),
];
if (before) figs.push((k) => before(v3[k % 16], { metres: false }));
const per = figs.map((f) => { // calls per batch: doubled until a batch lasts 40 ms
	let n = 1;
	for (f(0); ; n *= 2) {
		const t0 = cpu();
		for (let i = 0; i < n; i++) f(i);
		if (cpu() - t0 >= 40) return n;
	}
});
const times = figs.map(() => []);
for (let b = 0; b < 7; b++)
	figs.forEach((f, i) => {
		const t0 = cpu();
		for (let k = 0; k < per[i]; k++) f(k);
		times[i].push((cpu() - t0) / per[i]);
	});
const med = (v) => v.sort((a, b) => a - b)[3];
const [js, wa, gen, js5, wa5, old] = times.map(med);
console.log('JS decode ms\twasm decode ms\twasm generate ms\tnode\tJS decode before, version 3, ms\tversion 5: JS decode ms\twasm decode ms');
console.log(`${js.toFixed(3)}\t${wa.toFixed(3)}\t${gen.toFixed(3)}\t${process.version}\t${old === undefined ? '-' : old.toFixed(3)}\t${js5.toFixed(3)}\t${wa5.toFixed(3)}`);
