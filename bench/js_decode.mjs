// js_decode.mjs DIR - section 4's JavaScript rows (bench/run.sh): decodeTile()
// of clients/js/terrain.js in Node.js on the 16 LOD-0 `default` tiles that
// decode_bench wrote to DIR (tile-K.v7, the current form, tANS; tile-K.v5
// and .v3, rANS with 8 and 2 states). Per format version: ms
// per tile once warm (this process's CPU time, the median of 7 batches of
// at least 40 ms, the versions' batches interleaved), with the checksum
// verified and heights in quanta (metres: false), and the first call of a
// fresh process (the JIT's warm-up included). Checks that the versions
// decode to the same heights. Output: TSV in bench.h's form.
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const dir = process.argv[2];
const here = fileURLToPath(new URL('.', import.meta.url));
const mod = `${here}../clients/js/terrain.js`;

if (process.argv[3] === '--first') {   // one decode in a fresh process
	const t = new Uint8Array(readFileSync(`${dir}/tile-0.${process.argv[4]}`));
	const { decodeTile } = await import(mod);
	const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };
	const t0 = cpu();
	decodeTile(t, { metres: false });
	console.log((cpu() - t0).toFixed(2));
	process.exit(0);
}

const { decodeTile } = await import(mod);
const versions = ['v7', 'v5', 'v3'];
const tiles = versions.map((v) => Array.from({ length: 16 }, (_, k) => new Uint8Array(readFileSync(`${dir}/tile-${k}.${v}`))));
for (let k = 0; k < 16; k++) {
	const [a, ...rest] = tiles.map((ts) => decodeTile(ts[k], { metres: false }));
	rest.forEach((b, i) => {
		if (b.header.version !== Number(versions[i + 1].slice(1))) throw new Error(`tile ${k}: tile-${k}.${versions[i + 1]} is version ${b.header.version}`);
		if (a.quanta.length !== b.quanta.length || a.quanta.some((x, n) => x !== b.quanta[n]))
			throw new Error(`tile ${k}: versions ${a.header.version} and ${b.header.version} decode differently`);
	});
	if (a.header.version !== 7) throw new Error(`tile ${k}: tile-${k}.v7 is version ${a.header.version}`);
}
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };
const per = tiles.map((ts) => {  // calls per batch: doubled until a batch lasts 40 ms
	for (let n = 16; ; n *= 2) {
		const t0 = cpu();
		for (let i = 0; i < n; i++) decodeTile(ts[i % 16], { metres: false });
		if (cpu() - t0 >= 40) return n;
	}
});
const times = tiles.map(() => []);
for (let b = 0; b < 7; b++)
	tiles.forEach((ts, v) => {
		const t0 = cpu();
		for (let i = 0; i < per[v]; i++) decodeTile(ts[i % 16], { metres: false });
		times[v].push((cpu() - t0) / per[v]);
	});
const med = (x) => x.sort((a, b) => a - b)[3];
const first = versions.map((v) => execFileSync(process.execPath, [fileURLToPath(import.meta.url), dir, '--first', v]).toString().trim());
console.log('JavaScript decodeTile, default LOD 0\tms per tile, warm\tMB/s of heights\tfirst call in a fresh process, ms');
versions.forEach((v, i) => {
	const ms = med(times[i]);
	console.log(`format version ${v.slice(1)}\t${ms.toFixed(3)}\t${(257 * 257 * 4 / ms / 1e3).toFixed(0)}\t${first[i]}`);
});
console.log(`note: Node.js ${process.version}; checksum verified, heights as quanta (metres: false); CPU time, median of 7 interleaved batches of >= 40 ms; target (issue 30): <= 1 ms warm, or the WebAssembly decoder of issue 29`);
