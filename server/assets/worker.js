// worker.js - decode and colour tiles off the main thread.
// In: { id, buf: ArrayBuffer (transferred), style: { sea, low, high, gen, colour } }.
// Out: { id, ok: true, header, quanta: Int32Array, materials: Uint8Array or
// null (a tile without the material layer), rgba: Uint8ClampedArray, size
// (pixels per side = samples per side), ms } (buffers transferred) or
// { id, ok: false, error, code }.
import { decodeTile } from './terrain.js';
import { shadeTile } from './shade.js';

self.onmessage = (ev) => {
	const { id, buf, style } = ev.data;
	const t0 = performance.now();
	try {
		const { header, quanta, materials } = decodeTile(buf, { verify: true, metres: false });
		const rgba = shadeTile(quanta, {
			side: header.side, lod: header.lod, quantumUm: header.quantumUm,
			cx: header.cx, cz: header.cz, chunkSize: 2 ** header.chunkLog2, ...style,
		}, materials);
		const transfer = [quanta.buffer, rgba.buffer];
		if (materials) transfer.push(materials.buffer);
		self.postMessage({ id, ok: true, header, quanta, materials, rgba, size: header.side, ms: performance.now() - t0 },
			transfer);
	} catch (e) {
		self.postMessage({ id, ok: false, error: String(e.message || e), code: e.code || 'ERR' });
	}
};
