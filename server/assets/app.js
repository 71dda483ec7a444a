// app.js - the map viewer: a 2D hillshaded, coloured map of one world of
// the terrain server, with pan and zoom, a LOD per zoom, seed and preset
// pickers, world info, a click-to-edit brush and live updates from the event
// stream, a "who edited here" lookup of a clicked point and a moderator's
// revert (and undo) of an author's edits in view (moderation.js). Tiles are
// requested with their material layer (layers=height,material), decoded from the binary format by terrain.js
// (the JavaScript client module, clients/js/terrain.js) and coloured
// (shade.js) in workers - by material, or by the height ramp (a toggle;
// also for tiles without the layer) - requested nearest-first with a
// bounded number in flight, drawn as each arrives, and cancelled when they
// leave the view.
import { decodeTile, xxh3Hex, MATERIALS, tileUrl as apiTileUrl, postEdits } from './terrain.js';
import { shadeTile } from './shade.js';
import { setupModeration } from './moderation.js';

// ---- tuning ----------------------------------------------------------------
const MAX_IN_FLIGHT = 6;          // tile requests at once (a browser's HTTP/1.1 connections per host)
const MAX_VISIBLE = 1100;         // chunks on screen: bounds how far one can zoom out
const MAX_PPM = 24;               // CSS pixels per metre when zoomed all the way in
const CACHE_BYTES = 160 << 20;    // decoded tiles kept (bitmaps and heights)
const PREFETCH_RING = 1;          // chunks beyond the view fetched once the view is complete
const RETRIES = 4;
const LAYERS = 'height,material'; // what tiles are requested with
const COLOURS = ['materials', 'ramp']; // colour by material id, or by the height ramp

const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;
const clamp = (v, a, b) => Math.min(b, Math.max(a, v));
const SEED_RE = /^(?:[0-9]{1,20}|[A-Za-z0-9_-]{1,64})$/;
const I32_MIN = -(2 ** 31), I32_MAX = 2 ** 31 - 1;

// ---- state -----------------------------------------------------------------
const st = {
	seed: '42', gen: 'default', presets: [], world: null, epoch: 0,
	chunkSize: 256, chunkLog2: 8, maxLod: 8, style: { sea: 0, low: -250, high: 1350 },
	x: 0, z: 0, ppm: 1, dpr: 1, cw: 0, ch: 0,
	editSeq: 0, worldHash: '',
	tilesDrawn: 0, eventsReceived: 0, errors: 0, bytes: 0, edits: 0, aborted: 0,
	brush: false, op: 'raise', cursor: null, lastEdit: null, colour: 'materials',
	lookup: null, lastRevert: null, lastModeration: null, reverting: false,
};

const canvas = $('tiles'), overlay = $('overlay'), mapEl = $('map');
const ctx = canvas.getContext('2d', { alpha: false });
const octx = overlay.getContext('2d');

// ---- geometry ----------------------------------------------------------------
const devicePpm = () => st.ppm * st.dpr;
/** LOD with one sample per device pixel: 2^lod metres per sample, 0..max_lod. */
const currentLod = () => clamp(Math.round(Math.log2(1 / devicePpm())), 0, st.maxLod);
const minPpm = () => Math.sqrt((st.cw * st.ch) / MAX_VISIBLE) / st.chunkSize;
const toScreenX = (wx) => (wx - st.x) * st.ppm + st.cw / 2;   // CSS px
const toScreenZ = (wz) => (wz - st.z) * st.ppm + st.ch / 2;
const toWorld = (sx, sy) => ({ x: st.x + (sx - st.cw / 2) / st.ppm, z: st.z + (sy - st.ch / 2) / st.ppm });

function visibleChunks(margin = 0) {
	const cs = st.chunkSize, a = toWorld(0, 0), b = toWorld(st.cw, st.ch);
	const cx0 = Math.max(I32_MIN, Math.floor(a.x / cs) - margin);
	const cx1 = Math.min(I32_MAX, Math.floor(b.x / cs) + margin);
	const cz0 = Math.max(I32_MIN, Math.floor(a.z / cs) - margin);
	const cz1 = Math.min(I32_MAX, Math.floor(b.z / cs) + margin);
	const fx = st.x / cs - 0.5, fz = st.z / cs - 0.5, out = [];
	for (let cz = cz0; cz <= cz1; cz++)
		for (let cx = cx0; cx <= cx1; cx++)
			out.push({ cx, cz, d: (cx - fx) ** 2 + (cz - fz) ** 2 });
	out.sort((p, q) => p.d - q.d);
	return out;
}

// ---- tile cache: (colouring, seed, gen, lod, cx, cz) -> decoded tile with its edit version ----
const cache = new Map();   // insertion order is the LRU order
let cacheBytes = 0;
const touched = new Map(); // "seed|gen|cx|cz" -> first edit seq known to touch the chunk

const worldKey = () => `${st.seed}|${st.gen}`;
const tileKey = (lod, cx, cz, colour = st.colour) => `${colour}|${st.seed}|${st.gen}|${lod}|${cx}|${cz}`;
const chunkKey = (cx, cz) => `${st.seed}|${st.gen}|${cx}|${cz}`;
const fresh = (e) => e.editSeq >= (touched.get(chunkKey(e.cx, e.cz)) || 0);

function cacheGet(key) {
	const e = cache.get(key);
	if (e) { cache.delete(key); cache.set(key, e); }
	return e;
}
function cachePut(key, e) {
	const old = cache.get(key);
	if (old) { cacheBytes -= old.bytes; old.bitmap.close?.(); cache.delete(key); }
	cache.set(key, e);
	cacheBytes += e.bytes;
	for (const [k, v] of cache) {
		if (cacheBytes <= CACHE_BYTES) break;
		cache.delete(k);
		cacheBytes -= v.bytes;
		v.bitmap.close?.();
	}
}
/** The tile to show for a chunk: this LOD, else the same LOD in the other
 * colouring (just after the toggle), else the nearest LOD cached. */
function bestTile(cx, cz, lod) {
	const e = cache.get(tileKey(lod, cx, cz));
	if (e) return e;
	for (const c of COLOURS) {
		const other = c !== st.colour && cache.get(tileKey(lod, cx, cz, c));
		if (other) return other;
	}
	for (let d = 1; d <= st.maxLod; d++) {
		const up = lod + d <= st.maxLod && cache.get(tileKey(lod + d, cx, cz));
		if (up) return up;
		const down = lod - d >= 0 && cache.get(tileKey(lod - d, cx, cz));
		if (down) return down;
	}
	return null;
}

// ---- decoding and colouring in workers ----------------------------------------
class Pool {
	constructor(n) {
		this.jobs = new Map();
		this.seq = 0;
		this.workers = [];
		try {
			for (let i = 0; i < n; i++) {
				const w = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: `tiles-${i}` });
				w.busy = 0;
				w.onmessage = (ev) => {
					const job = this.jobs.get(ev.data.id);
					this.jobs.delete(ev.data.id);
					w.busy--;
					job?.(ev.data);
				};
				this.workers.push(w);
			}
		} catch (e) {
			console.warn('terrain viewer: no workers, decoding on the main thread', e);
			this.workers = [];
		}
	}
	run(buf, style) {
		if (!this.workers.length) return Promise.resolve(this.inline(buf, style));
		const w = this.workers.reduce((a, b) => (b.busy < a.busy ? b : a));
		const id = ++this.seq;
		w.busy++;
		return new Promise((resolve) => {
			this.jobs.set(id, resolve);
			w.postMessage({ id, buf, style }, [buf]);
		});
	}
	inline(buf, style) {
		try {
			const { header, quanta, materials } = decodeTile(buf, { metres: false });
			const rgba = shadeTile(quanta, { side: header.side, lod: header.lod, quantumUm: header.quantumUm,
				cx: header.cx, cz: header.cz, chunkSize: 2 ** header.chunkLog2, ...style }, materials);
			return { ok: true, header, quanta, materials, rgba, size: header.side };
		} catch (e) {
			return { ok: false, error: String(e.message || e), code: e.code };
		}
	}
}
const pool = new Pool(clamp((navigator.hardwareConcurrency || 2) - 1, 1, 4));

// ---- fetching: nearest first, bounded, cancelled when out of view -------------
const inflight = new Map();  // tile key -> { ctrl, lod, cx, cz }
const failures = new Map();  // tile key -> { n, until }

// Both colourings use the same URL: toggling finds the tiles in the HTTP cache.
const tileUrl = (lod, cx, cz, seed = st.seed, gen = st.gen, layers = LAYERS) =>
	apiTileUrl('', { seed, gen, lod, cx, cz, layers });

async function loadTile(lod, cx, cz, key) {
	const ctrl = new AbortController();
	const req = { ctrl, lod, cx, cz, epoch: st.epoch, colour: st.colour };
	inflight.set(key, req);
	const t0 = performance.now();
	try {
		// A chunk an edit touched may sit in the HTTP cache (max-age): revalidate it.
		const cacheMode = touched.has(chunkKey(cx, cz)) ? 'no-cache' : 'default';
		const res = await fetch(tileUrl(lod, cx, cz), { signal: ctrl.signal, cache: cacheMode });
		if (!res.ok) {
			const err = new Error(`HTTP ${res.status}`);
			err.retryAfter = Number(res.headers.get('Retry-After')) || 0;
			err.permanent = res.status >= 400 && res.status < 500;
			throw err;
		}
		const buf = await res.arrayBuffer();
		st.bytes += buf.byteLength;
		const r = await pool.run(buf, { ...st.style, colour: req.colour });
		if (!r.ok) throw Object.assign(new Error(`tile ${lod}/${cx}/${cz}: ${r.error}`), { permanent: true });
		if (req.epoch !== st.epoch) return;
		const h = r.header;
		if (h.lod !== lod || h.cx !== cx || h.cz !== cz)
			throw Object.assign(new Error(`tile ${lod}/${cx}/${cz}: header names ${h.lod}/${h.cx}/${h.cz}`), { permanent: true });
		const bitmap = await createImageBitmap(new ImageData(r.rgba, r.size, r.size));
		if (req.epoch !== st.epoch) { bitmap.close?.(); return; }
		cachePut(key, {
			bitmap, quanta: r.quanta, materials: r.materials, side: h.side, lod, cx, cz, editSeq: h.editSeq,
			quantumUm: h.quantumUm, colour: req.colour,
			bytes: r.size * r.size * 4 + r.quanta.byteLength + (r.materials ? r.materials.byteLength : 0) + 200,
			drawn: false, ms: performance.now() - t0,
		});
		failures.delete(key);
		requestDraw();
	} catch (e) {
		if (e.name === 'AbortError') st.aborted++;
		if (e.name === 'AbortError' || req.epoch !== st.epoch) return;
		const f = failures.get(key) || { n: 0, until: 0 };
		f.n++;
		f.until = performance.now() + (e.retryAfter ? e.retryAfter * 1000 : 500 * 2 ** f.n);
		if (e.permanent) f.n = RETRIES;
		failures.set(key, f);
		if (f.n >= RETRIES) { st.errors++; console.warn('terrain viewer:', e.message); }
		setTimeout(schedule, Math.max(0, f.until - performance.now()) + 10);
	} finally {
		if (inflight.get(key) === req) inflight.delete(key);
		schedule();
	}
}

let scheduled = false;
function schedule() {
	if (scheduled) return;
	scheduled = true;
	queueMicrotask(() => { scheduled = false; plan(); });
}

/** Decide what to fetch: visible tiles nearest the centre first, then a ring. */
function plan() {
	if (!st.world || !st.cw) return;
	const lod = currentLod(), now = performance.now();
	const vis = visibleChunks(0), ring = visibleChunks(PREFETCH_RING);
	const wanted = new Set();
	let missing = 0;
	const todo = [];
	for (const list of [vis, ring]) {
		for (const c of list) {
			const key = tileKey(lod, c.cx, c.cz);
			if (wanted.has(key)) continue;
			wanted.add(key);
			const e = cache.get(key);
			if (e && fresh(e)) continue;
			const f = failures.get(key);
			if (f && (f.n >= RETRIES || f.until > now)) continue;
			if (list === vis) missing++;
			if (!inflight.has(key)) todo.push({ key, c, vis: list === vis });
		}
	}
	// cancel what left the view (or belongs to another LOD or world)
	for (const [key, r] of inflight)
		if (!wanted.has(key)) { r.ctrl.abort(); inflight.delete(key); }
	// the ring only once the view is complete
	for (const t of todo) {
		if (inflight.size >= MAX_IN_FLIGHT) break;
		if (!t.vis && missing > 0) break;
		loadTile(lod, t.c.cx, t.c.cz, t.key);
	}
	const pendingVisible = vis.filter((c) => {
		const e = cache.get(tileKey(lod, c.cx, c.cz));
		const f = failures.get(tileKey(lod, c.cx, c.cz));
		return !(e && fresh(e)) && !(f && f.n >= RETRIES);
	}).length;
	st.visible = vis.length;
	st.pending = pendingVisible;
	updateStatus();
	if (pendingVisible === 0 && inflight.size === 0) resolveIdle();
}

// ---- drawing -------------------------------------------------------------------
let drawRequested = false;
function requestDraw() {
	if (drawRequested) return;
	drawRequested = true;
	requestAnimationFrame(() => { drawRequested = false; draw(); });
}

function draw() {
	const W = canvas.width, H = canvas.height, dpr = st.dpr;
	ctx.setTransform(1, 0, 0, 1, 0, 0);
	ctx.fillStyle = '#1a2027';
	ctx.fillRect(0, 0, W, H);
	if (!st.world) return;
	ctx.imageSmoothingEnabled = true;
	ctx.imageSmoothingQuality = 'medium';
	const lod = currentLod(), cs = st.chunkSize;
	for (const c of visibleChunks(0)) {
		const e = bestTile(c.cx, c.cz, lod);
		if (!e) continue;
		// pixel (i, j) is sample (i, j), at its world position: the chunk
		// spans from the centre of the first pixel to the centre of the last
		// (the shared edge), so neighbours meet exactly and interpolate
		// smoothly when zoomed in; edges are rounded to device pixels
		// identically on both sides, so there are no gaps
		const x0 = Math.round(toScreenX(c.cx * cs) * dpr), x1 = Math.round(toScreenX(c.cx * cs + cs) * dpr);
		const z0 = Math.round(toScreenZ(c.cz * cs) * dpr), z1 = Math.round(toScreenZ(c.cz * cs + cs) * dpr);
		const n = e.side - 1;
		ctx.drawImage(e.bitmap, 0.5, 0.5, n, n, x0, z0, Math.max(1, x1 - x0), Math.max(1, z1 - z0));
		if (!e.drawn && e.lod === lod) { e.drawn = true; st.tilesDrawn++; }
	}
	drawOverlay();
}

function drawOverlay() {
	const dpr = st.dpr;
	octx.setTransform(1, 0, 0, 1, 0, 0);
	octx.clearRect(0, 0, overlay.width, overlay.height);
	octx.setTransform(dpr, 0, 0, dpr, 0, 0);
	if (st.brush && st.cursor) {
		const r = Math.max(2, num($('radius').value, 48) * st.ppm);
		octx.lineWidth = 1.5;
		octx.strokeStyle = 'rgba(255,255,255,0.9)';
		octx.setLineDash([6, 4]);
		octx.beginPath();
		octx.arc(st.cursor.sx, st.cursor.sy, r, 0, 2 * Math.PI);
		octx.stroke();
		octx.setLineDash([]);
		octx.strokeStyle = 'rgba(0,0,0,0.5)';
		octx.beginPath();
		octx.arc(st.cursor.sx, st.cursor.sy, r + 1.5, 0, 2 * Math.PI);
		octx.stroke();
		octx.fillStyle = st.op === 'lower' ? '#ffb27a' : st.op === 'raise' ? '#8fe3a0' : '#9cc8ff';
		octx.beginPath();
		octx.arc(st.cursor.sx, st.cursor.sy, 3, 0, 2 * Math.PI);
		octx.fill();
	}
	if (st.lookup) {
		const sx = toScreenX(st.lookup.x), sy = toScreenZ(st.lookup.z);
		octx.lineWidth = 2;
		octx.strokeStyle = 'rgba(255,255,255,0.95)';
		octx.beginPath();
		octx.moveTo(sx - 8, sy); octx.lineTo(sx + 8, sy);
		octx.moveTo(sx, sy - 8); octx.lineTo(sx, sy + 8);
		octx.stroke();
	}
	for (const p of pulses) {
		const t = (performance.now() - p.t0) / 900;
		if (t >= 1) continue;
		octx.strokeStyle = `rgba(255, 220, 120, ${1 - t})`;
		octx.lineWidth = 2;
		octx.beginPath();
		octx.arc(toScreenX(p.x), toScreenZ(p.z), Math.max(4, p.r * st.ppm) * (0.6 + 0.4 * t), 0, 2 * Math.PI);
		octx.stroke();
	}
	if (pulses.some((p) => performance.now() - p.t0 < 900)) requestAnimationFrame(drawOverlay);
	else pulses.length = 0;
}
const pulses = [];

// ---- status ----------------------------------------------------------------------
function fmtBytes(n) {
	return n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`;
}
function fmtMetres(m) {
	return m >= 1000 ? `${+(m / 1000).toFixed(m >= 10000 ? 0 : 1)} km` : `${+m.toFixed(m < 10 ? 1 : 0)} m`;
}
let statusQueued = false;
function updateStatus() {
	if (statusQueued) return;
	statusQueued = true;
	requestAnimationFrame(() => {
		statusQueued = false;
		const lod = currentLod();
		$('v-lod').textContent = `${lod} (${2 ** lod} m per sample, ${st.chunkSize / 2 ** lod + 1}² per tile)`;
		$('v-scale').textContent = `1 px = ${fmtMetres(1 / st.ppm)}`;
		const done = (st.visible || 0) - (st.pending || 0);
		$('v-tiles').textContent = `${done}/${st.visible || 0} in view · ${inflight.size} loading${st.errors ? ` · ${st.errors} failed` : ''}`;
		$('v-bytes').textContent = `${fmtBytes(st.bytes)}, ${cache.size} cached`;
		const frac = st.visible ? done / st.visible : 1;
		$('progress').classList.toggle('busy', frac < 1);
		$('progress-bar').style.width = `${(frac * 100).toFixed(1)}%`;
		updateScale();
	});
}

function updateScale() {
	const target = 110 / st.ppm; // metres in ~110 px
	const p = 10 ** Math.floor(Math.log10(target));
	const m = [1, 2, 5, 10].map((k) => k * p).filter((v) => v <= target).pop() || p;
	$('scale-bar').style.width = `${Math.round(m * st.ppm)}px`;
	$('scale-text').textContent = fmtMetres(m);
}

function heightAt(wx, wz) {
	const cs = st.chunkSize, lod = currentLod();
	const cx = Math.floor(wx / cs), cz = Math.floor(wz / cs);
	const e = bestTile(cx, cz, lod);
	if (!e) return null;
	const s = 2 ** e.lod;
	const i = clamp(Math.round((wx - cx * cs) / s), 0, e.side - 1), j = clamp(Math.round((wz - cz * cs) / s), 0, e.side - 1);
	const m = e.materials ? e.materials[j * e.side + i] : -1;
	return { h: e.quanta[j * e.side + i] * e.quantumUm / 1e6, lod: e.lod, editSeq: e.editSeq, material: m };
}

function updateReadout() {
	const c = st.cursor;
	if (!c) { $('readout').textContent = `x ${st.x.toFixed(0)}  z ${st.z.toFixed(0)}`; return; }
	const w = toWorld(c.sx, c.sy), h = heightAt(w.x, w.z);
	const cs = st.chunkSize;
	$('readout').textContent = `x ${w.x.toFixed(1)}  z ${w.z.toFixed(1)}  ` +
		(h ? `h ${h.h.toFixed(2)} m` : 'h –') +
		(h && h.material >= 0 ? `  ${MATERIALS[h.material]?.name ?? `material ${h.material}`}` : '') +
		`  chunk ${Math.floor(w.x / cs)},${Math.floor(w.z / cs)}` + (h && h.editSeq ? `  edit ${h.editSeq}` : '');
}

function showInfo() {
	const w = st.world;
	$('i-fp').textContent = w ? w.fingerprint : '–';
	$('i-seq').textContent = w ? String(st.editSeq) : '–';
	$('i-hash').textContent = w ? st.worldHash : '–';
	$('i-seed').textContent = w ? w.seed : '–';
	$('i-heights').textContent = w ? `${w.height.min} to ${w.height.max} m, sea ${w.sea_level} m, chunks ${w.chunk_size} m` : '–';
	const p = st.presets.find((x) => x.name === st.gen);
	$('gen-desc').textContent = p ? p.description : (w ? w.description : '');
}

// ---- view changes ----------------------------------------------------------------
function viewChanged() {
	st.ppm = clamp(st.ppm, minPpm(), MAX_PPM);
	const lim = 2 ** 31 * st.chunkSize;
	st.x = clamp(st.x, -lim, lim);
	st.z = clamp(st.z, -lim, lim);
	requestDraw();
	schedule();
	updateStatus();
	updateReadout();
	saveHash();
	syncVersions();
}

function zoomAt(sx, sy, factor) {
	const w = toWorld(sx, sy);
	st.ppm = clamp(st.ppm * factor, minPpm(), MAX_PPM);
	st.x = w.x - (sx - st.cw / 2) / st.ppm;
	st.z = w.z - (sy - st.ch / 2) / st.ppm;
	viewChanged();
}

function resize() {
	const r = mapEl.getBoundingClientRect();
	st.dpr = window.devicePixelRatio || 1;
	st.cw = Math.max(1, r.width);
	st.ch = Math.max(1, r.height);
	for (const c of [canvas, overlay]) {
		c.width = Math.round(st.cw * st.dpr);
		c.height = Math.round(st.ch * st.dpr);
	}
	viewChanged();
}

let hashTimer = 0;
function saveHash() {
	clearTimeout(hashTimer);
	hashTimer = setTimeout(() => {
		const h = `#seed=${enc(st.seed)}&gen=${enc(st.gen)}&x=${st.x.toFixed(1)}&z=${st.z.toFixed(1)}&zoom=${+st.ppm.toPrecision(4)}` +
			(st.colour !== 'materials' ? `&colour=${st.colour}` : '');
		if (location.hash !== h) history.replaceState(null, '', h);
	}, 250);
}
function readHash() {
	const p = new URLSearchParams(location.hash.slice(1) || location.search.slice(1));
	const n = (k, d) => (p.has(k) && Number.isFinite(+p.get(k)) ? +p.get(k) : d);
	return { seed: p.get('seed') || '42', gen: p.get('gen') || 'default', x: n('x', 0), z: n('z', 0), ppm: n('zoom', 0),
		colour: COLOURS.includes(p.get('colour')) ? p.get('colour') : 'materials' };
}

// ---- input ----------------------------------------------------------------------
function setupInput() {
	let drag = null;
	mapEl.addEventListener('pointerdown', (ev) => {
		if (ev.button !== 0) return;
		mapEl.focus({ preventScroll: true });
		mapEl.setPointerCapture(ev.pointerId);
		drag = { id: ev.pointerId, sx: ev.clientX, sy: ev.clientY, x: st.x, z: st.z, moved: false };
	});
	mapEl.addEventListener('pointermove', (ev) => {
		const r = mapEl.getBoundingClientRect();
		st.cursor = { sx: ev.clientX - r.left, sy: ev.clientY - r.top };
		if (drag && drag.id === ev.pointerId) {
			const dx = ev.clientX - drag.sx, dy = ev.clientY - drag.sy;
			if (Math.abs(dx) + Math.abs(dy) > 4) drag.moved = true;
			if (drag.moved) {
				st.x = drag.x - dx / st.ppm;
				st.z = drag.z - dy / st.ppm;
				mapEl.classList.add('dragging');
				viewChanged();
			}
		}
		updateReadout();
		if (st.brush) drawOverlay();
	});
	const end = (ev) => {
		if (!drag || drag.id !== ev.pointerId) return;
		const click = !drag.moved && ev.type === 'pointerup';
		drag = null;
		mapEl.classList.remove('dragging');
		if (click) {
			// a click edits with the brush on; otherwise (or with Alt) it
			// asks who edited the point
			const r = mapEl.getBoundingClientRect();
			const w = toWorld(ev.clientX - r.left, ev.clientY - r.top);
			if (st.brush && !ev.altKey) applyBrush(w.x, w.z);
			else moderation.lookupAt(w.x, w.z);
		}
	};
	mapEl.addEventListener('pointerup', end);
	mapEl.addEventListener('pointercancel', end);
	mapEl.addEventListener('pointerleave', () => { st.cursor = null; updateReadout(); drawOverlay(); });
	mapEl.addEventListener('wheel', (ev) => {
		ev.preventDefault();
		const r = mapEl.getBoundingClientRect();
		const k = ev.deltaMode === 1 ? 0.05 : ev.deltaMode === 2 ? 1 : 0.0015;
		zoomAt(ev.clientX - r.left, ev.clientY - r.top, Math.exp(-ev.deltaY * k));
	}, { passive: false });
	mapEl.addEventListener('dblclick', (ev) => {
		if (st.brush) return;
		const r = mapEl.getBoundingClientRect();
		zoomAt(ev.clientX - r.left, ev.clientY - r.top, ev.shiftKey ? 0.5 : 2);
	});
	$('zoom-in').addEventListener('click', () => zoomAt(st.cw / 2, st.ch / 2, 2));
	$('zoom-out').addEventListener('click', () => zoomAt(st.cw / 2, st.ch / 2, 0.5));
	$('home').addEventListener('click', () => { st.x = 0; st.z = 0; viewChanged(); });
	for (const b of [$('zoom-in'), $('zoom-out'), $('home')])
		b.addEventListener('pointerdown', (ev) => ev.stopPropagation());
	window.addEventListener('keydown', (ev) => {
		if (ev.target.closest?.('input, select, textarea') || ev.ctrlKey || ev.metaKey || ev.altKey) return;
		const step = Math.min(st.cw, st.ch) / 4 / st.ppm;
		const keys = {
			ArrowLeft: () => { st.x -= step; viewChanged(); }, ArrowRight: () => { st.x += step; viewChanged(); },
			ArrowUp: () => { st.z -= step; viewChanged(); }, ArrowDown: () => { st.z += step; viewChanged(); },
			'+': () => zoomAt(st.cw / 2, st.ch / 2, 2), '=': () => zoomAt(st.cw / 2, st.ch / 2, 2),
			'-': () => zoomAt(st.cw / 2, st.ch / 2, 0.5), '0': () => { st.x = 0; st.z = 0; viewChanged(); },
			b: () => setBrush(!st.brush), B: () => setBrush(!st.brush),
			c: () => setColour(st.colour === 'materials' ? 'ramp' : 'materials'),
			C: () => setColour(st.colour === 'materials' ? 'ramp' : 'materials'),
		};
		if (keys[ev.key]) { ev.preventDefault(); keys[ev.key](); }
	});
	new ResizeObserver(resize).observe(mapEl);
	window.addEventListener('hashchange', () => {
		const h = readHash();
		if (h.colour !== st.colour) setColour(h.colour);
		if (h.seed !== st.seed || h.gen !== st.gen) {
			$('seed').value = h.seed;
			$('gen').value = h.gen;
			Object.assign(st, { x: h.x, z: h.z }, h.ppm ? { ppm: h.ppm } : {});
			loadWorld(h.seed, h.gen);
		} else if (h.x !== +st.x.toFixed(1) || h.z !== +st.z.toFixed(1)) {
			Object.assign(st, { x: h.x, z: h.z }, h.ppm ? { ppm: h.ppm } : {});
			viewChanged();
		}
	});

	// world pickers
	$('world-form').addEventListener('submit', (ev) => { ev.preventDefault(); pickWorld(); });
	$('seed').addEventListener('change', pickWorld);
	$('gen').addEventListener('change', pickWorld);

	// colouring
	for (const b of document.querySelectorAll('#colour button'))
		b.addEventListener('click', () => setColour(b.dataset.colour));
	const legend = $('legend');
	for (const m of MATERIALS) {
		const li = document.createElement('li'), sw = document.createElement('span');
		sw.className = 'swatch';
		sw.style.background = m.colour;
		li.append(sw, m.name);
		legend.append(li);
	}

	// brush
	$('brush-on').addEventListener('click', () => setBrush(!st.brush));
	for (const b of document.querySelectorAll('#ops button'))
		b.addEventListener('click', () => setOp(b.dataset.op));
	link('radius', 'radius-range');
	link('strength', 'strength-range');
	$('radius').addEventListener('input', drawOverlay);
	$('token').value = sessionStorage.getItem('terrain-token') || '';
	$('token').addEventListener('change', () => sessionStorage.setItem('terrain-token', $('token').value));

}

function link(numId, rangeId) {
	const n = $(numId), r = $(rangeId);
	r.addEventListener('input', () => { n.value = r.value; drawOverlay(); });
	n.addEventListener('input', () => { r.value = n.value; });
}

function pickWorld() {
	const seed = $('seed').value.trim(), gen = $('gen').value;
	if (!SEED_RE.test(seed)) {
		$('seed').setCustomValidity('a decimal u64 or a text seed of [A-Za-z0-9_-]{1,64}');
		$('seed').reportValidity();
		return;
	}
	$('seed').setCustomValidity('');
	if (seed !== st.seed || gen !== st.gen) loadWorld(seed, gen);
}

/** Colour the map by material id ('materials') or by the height ramp ('ramp'). */
function setColour(colour) {
	if (!COLOURS.includes(colour)) return;
	st.colour = colour;
	for (const b of document.querySelectorAll('#colour button')) b.setAttribute('aria-checked', String(b.dataset.colour === colour));
	$('legend').hidden = colour !== 'materials';
	viewChanged();
}

// ---- brush and edits ---------------------------------------------------------------
function setBrush(on) {
	st.brush = on;
	const b = $('brush-on');
	b.setAttribute('aria-pressed', String(on));
	b.textContent = on ? 'Edit on' : 'Edit off';
	mapEl.classList.toggle('brush', on);
	$('edit-status').textContent = on ? `Click the map to ${st.op}.` : 'Turn editing on, then click the map.';
	drawOverlay();
}

function setOp(op) {
	st.op = op;
	for (const b of document.querySelectorAll('#ops button')) b.setAttribute('aria-checked', String(b.dataset.op === op));
	const s = $('strength'), r = $('strength-range');
	const strengthUsed = op !== 'set', heightUsed = op === 'flatten' || op === 'set';
	s.disabled = r.disabled = !strengthUsed;
	$('height').disabled = !heightUsed;
	if (op === 'flatten') {
		$('strength-label').textContent = 'Strength (0–1)';
		r.max = 1; r.step = 0.01; s.max = 1;
		if (+s.value > 1) { s.value = 0.8; r.value = 0.8; }
	} else {
		$('strength-label').textContent = 'Strength (m)';
		r.max = 100; r.step = 0.5; s.max = 10000;
		if (+s.value <= 1 && op !== 'set') { s.value = 12; r.value = 12; }
	}
	if (st.brush) $('edit-status').textContent = `Click the map to ${op}.`;
	drawOverlay();
}

function num(v, d) {
	const x = parseFloat(v);
	return Number.isFinite(x) ? x : d;
}

/** Post one brush edit at world (x, z) with the panel's settings. */
async function applyBrush(x, z) {
	const op = st.op;
	const edit = { op, x: Math.round(x * 100) / 100, z: Math.round(z * 100) / 100,
		radius: num($('radius').value, 48), falloff: $('falloff').value };
	if (op !== 'set') edit.strength = num($('strength').value, op === 'flatten' ? 0.8 : 12);
	if (op === 'flatten' || op === 'set') {
		let h = num($('height').value, NaN);
		if (!Number.isFinite(h)) {
			const g = heightAt(x, z);
			h = g ? Math.round(g.h * 100) / 100 : 0;
		}
		edit.height = h;
	}
	const token = $('token').value.trim();
	const status = $('edit-status');
	const doing = `${op} at ${edit.x}, ${edit.z}`;
	status.className = 'muted';
	status.textContent = `${doing}…`;
	pulses.push({ x: edit.x, z: edit.z, r: edit.radius, t0: performance.now() });
	drawOverlay();
	const world = worldKey();
	try {
		// one Idempotency-Key for this click, kept across its retries, so
		// that the server applies it once (postEdits, terrain.js)
		const body = await postEdits('', { seed: st.seed, gen: st.gen }, [edit], {
			token: token || undefined,
			onRetry: ({ attempt }) => { status.textContent = `${doing}: retrying (${attempt - 1})…`; },
		});
		st.edits++;
		st.lastEdit = body;
		if (world === worldKey()) applyChange(body, 'edit');
		status.textContent = `Edit ${body.first_seq ?? body.seq}${body.last_seq && body.last_seq !== body.first_seq ? `–${body.last_seq}` : ''} applied: ${(body.chunks || []).length} chunk(s) changed${body.attempts > 1 ? ` (after ${body.attempts} attempts)` : ''}.`;
	} catch (e) {
		const b = e.body, last = e.status ? `HTTP ${e.status}${b?.error ? `: ${b.error}: ${b.detail}` : ''}` : e.message;
		const why = e.status === 404 && (!b || b.detail === 'no such route') ? 'this server has no edit endpoint yet' :
			e.status === 401 ? 'a valid token is needed (401)' :
			e.status === 403 ? 'edits are allowed from loopback or with a token (403)' :
			e.attempts > 1 ? `no success in ${e.attempts} attempts, the last ${last}` : last;
		status.className = 'error';
		status.textContent = e.unknown ? `Edit failed: ${why}. It may have been applied: the map shows it if it was.` :
			`Edit failed: ${why}.${e.attempts > 1 || e.status === 503 ? ' It was not applied.' : ''}`;
	}
}

/** An accepted batch, from our own edit's answer or the event stream. */
function applyChange(d, source) {
	if (!d || typeof d !== 'object') return;
	const first = Number(d.first_seq ?? d.seq ?? d.last_seq ?? 0);
	const last = Number(d.last_seq ?? d.seq ?? first);
	for (const c of d.chunks || []) {
		const cx = Array.isArray(c) ? c[0] : c.cx, cz = Array.isArray(c) ? c[1] : c.cz;
		if (!Number.isInteger(cx) || !Number.isInteger(cz)) continue;
		const k = chunkKey(cx, cz);
		touched.set(k, Math.max(touched.get(k) || 0, first || 1));
		failures.forEach((_, key) => { if (key.endsWith(`|${cx}|${cz}`)) failures.delete(key); });
	}
	if (last >= st.editSeq) {
		st.editSeq = last;
		if (d.world_hash) st.worldHash = d.world_hash;
	}
	if (source === 'event') st.eventsReceived++;
	showInfo();
	schedule();
}

// ---- live updates ----------------------------------------------------------------
let events = null, eventsRetry = 0, eventsTimer = 0;
function setLive(state, text) {
	const el = $('live');
	el.className = `live ${state}`;
	el.textContent = text || state;
}
function openEvents() {
	clearTimeout(eventsTimer);
	events?.close();
	const world = worldKey();
	// replay every batch after the edit_seq the world info showed, so none
	// falls between that answer and this stream (EventSource itself sends
	// Last-Event-ID when it reconnects)
	const es = new EventSource(`/v1/worlds/${enc(st.seed)}/events?gen=${enc(st.gen)}&last_event_id=${st.editSeq}`);
	events = es;
	setLive('connecting');
	es.onopen = () => { eventsRetry = 0; setLive('on', 'live'); };
	es.onerror = () => {
		if (events !== es) return;
		if (es.readyState === EventSource.CLOSED) {
			// not an event stream (no such endpoint yet, or an error): retry slowly
			setLive('off', 'no live updates');
			eventsRetry = Math.min(eventsRetry + 1, 6);
			eventsTimer = setTimeout(() => { if (world === worldKey()) openEvents(); }, 5000 * 2 ** eventsRetry);
		} else {
			setLive('connecting', 'reconnecting');
		}
	};
	const onEvent = (ev) => {
		if (events !== es) return;
		let d;
		try { d = JSON.parse(ev.data); } catch { return; }
		applyChange(d, 'event');
	};
	es.onmessage = onEvent;
	es.addEventListener('edits', onEvent);
}

// A tile in the browser's HTTP cache (max-age) may predate edits made while
// this page was away: ask the server for the edit versions of the chunks in
// view (GET /hashes, at most 64 x 64 chunks around the centre) and treat
// older tiles as stale. Once per world and area, after the view settles.
let versionsTimer = 0;
const versionsAsked = new Set();
function syncVersions() {
	clearTimeout(versionsTimer);
	versionsTimer = setTimeout(async () => {
		if (!st.world) return;
		const vis = visibleChunks(0);
		if (!vis.length) return;
		const c = vis[0], xs = vis.map((v) => v.cx), zs = vis.map((v) => v.cz);
		const cx0 = Math.max(Math.min(...xs), c.cx - 31), cx1 = Math.min(Math.max(...xs), c.cx + 32);
		const cz0 = Math.max(Math.min(...zs), c.cz - 31), cz1 = Math.min(Math.max(...zs), c.cz + 32);
		const area = `${worldKey()}|${cx0 >> 4},${cz0 >> 4},${cx1 >> 4},${cz1 >> 4}`;
		if (versionsAsked.has(area)) return;
		versionsAsked.add(area);
		const world = worldKey();
		try {
			const r = await fetch(`/v1/worlds/${enc(st.seed)}/hashes?gen=${enc(st.gen)}&cx0=${cx0}&cz0=${cz0}&cx1=${cx1}&cz1=${cz1}`, { cache: 'no-store' });
			if (!r.ok) return; // an older server without /hashes
			const d = await r.json();
			if (world !== worldKey()) return;
			let stale = 0;
			for (const ch of d.chunks || []) {
				const k = chunkKey(ch.cx, ch.cz);
				if ((touched.get(k) || 0) < ch.version) { touched.set(k, ch.version); stale++; }
			}
			if (stale) schedule();
		} catch { /* not important: edits then show after max-age */ }
	}, 400);
}

// ---- worlds ------------------------------------------------------------------------
let idleWaiters = [];
function resolveIdle() {
	const w = idleWaiters;
	idleWaiters = [];
	for (const f of w) f();
}
/** Resolves once every visible tile is drawn and nothing is loading. */
function idle() {
	return new Promise((resolve) => {
		idleWaiters.push(resolve);
		schedule();
	});
}

async function getJSON(url) {
	const res = await fetch(url, { cache: 'no-cache' });
	let body = null;
	try { body = await res.json(); } catch { /* not JSON */ }
	if (!res.ok) throw new Error(body ? `${body.error}: ${body.detail}` : `HTTP ${res.status}`);
	return body;
}

async function loadWorld(seed, gen) {
	st.epoch++;
	for (const r of inflight.values()) r.ctrl.abort();
	inflight.clear();
	failures.clear();
	st.seed = seed;
	st.gen = gen;
	st.world = null;
	moderation.reset(); // a lookup and a revert belong to the world they were made in
	const epoch = st.epoch;
	$('world-error').hidden = true;
	try {
		const w = await getJSON(`/v1/worlds/${enc(seed)}?gen=${enc(gen)}`);
		if (epoch !== st.epoch) return;
		st.world = w;
		st.chunkSize = w.chunk_size;
		st.chunkLog2 = Math.log2(w.chunk_size);
		st.maxLod = w.max_lod ?? st.chunkLog2;
		st.style = { sea: w.sea_level ?? 0, low: w.height?.min ?? -250, high: w.height?.max ?? 1350, gen: w.generator };
		st.editSeq = Number(w.edit_seq) || 0;
		st.worldHash = w.world_hash;
		showInfo();
		openEvents();
		viewChanged();
	} catch (e) {
		if (epoch !== st.epoch) return;
		$('world-error').hidden = false;
		$('world-error').textContent = `Cannot load world ${seed} (${gen}): ${e.message}`;
		showInfo();
		requestDraw();
	}
}

async function start() {
	setupInput();
	setOp('raise');
	const h = readHash();
	st.x = h.x;
	st.z = h.z;
	setColour(h.colour);
	$('seed').value = h.seed;
	try {
		st.presets = (await getJSON('/v1/presets')).presets || [];
	} catch (e) {
		st.presets = [];
	}
	const sel = $('gen');
	for (const p of st.presets.length ? st.presets : [{ name: 'default', description: '' }]) {
		const o = document.createElement('option');
		o.value = p.name;
		o.textContent = p.name;
		o.title = p.description || '';
		sel.append(o);
	}
	sel.value = h.gen;
	if (sel.value !== h.gen) sel.value = 'default';
	resize();
	st.ppm = h.ppm || 1 / st.dpr; // default: one sample per device pixel at LOD 0
	await loadWorld(h.seed, sel.value);
	await idle();
}

// who edited here, and a moderator's reverts (moderation.js)
const moderation = setupModeration({ st, worldKey, applyChange, drawOverlay, toWorld });

// ---- test hook ------------------------------------------------------------------------
const ready = start();
window.terrainViewer = {
	ready,
	/** Decode a tile (ArrayBuffer): { header, heights: Float64Array in metres, quanta: Int32Array }. */
	decodeTile: (buf) => decodeTile(buf),
	/** XXH3-64 (seed 0) of a Uint8Array or array of bytes, as 16 hex digits. */
	xxh3: (bytes) => xxh3Hex(bytes instanceof Uint8Array ? bytes : Uint8Array.from(bytes)),
	idle,
	get tilesDrawn() { return st.tilesDrawn; },
	get eventsReceived() { return st.eventsReceived; },
	get lastEdit() { return st.lastEdit; },
	/** The answer (or { error, status, detail }) of the last revert or undo. */
	get lastModeration() { return st.lastModeration; },
	/** The point last looked up and the entries shown: { x, z, entries, next, loading }. */
	get lookup() { return st.lookup && { ...st.lookup }; },
	viewArea: () => moderation.viewArea(),
	get state() {
		return { seed: st.seed, gen: st.gen, x: st.x, z: st.z, ppm: st.ppm, lod: currentLod(), chunkSize: st.chunkSize,
			editSeq: st.editSeq, worldHash: st.worldHash, cached: cache.size, inflight: inflight.size,
			errors: st.errors, bytes: st.bytes, aborted: st.aborted, brush: st.brush, op: st.op, colour: st.colour };
	},
	setView(x, z, ppm) { st.x = x; st.z = z; if (ppm) st.ppm = ppm; viewChanged(); return idle(); },
	/** Client (CSS px, page) coordinates of a world point, for clicking it. */
	clientPoint(x, z) {
		const r = mapEl.getBoundingClientRect();
		return { x: r.left + toScreenX(x), y: r.top + toScreenZ(z) };
	},
	tileUrl,
	heightAt,
	/** Colour by 'materials' or 'ramp'; resolves once the view is drawn. */
	setColour(colour) { setColour(colour); return idle(); },
	/** The material ids the page holds (and coloured with) for a tile, or null. */
	tileMaterials(lod, cx, cz) {
		const e = cache.get(tileKey(lod, cx, cz));
		return e && e.materials ? Array.from(e.materials) : null;
	},
	/** The cached tile of (lod, cx, cz) in this world, if any. */
	tile(lod, cx, cz) {
		const e = cache.get(tileKey(lod, cx, cz));
		return e && { editSeq: e.editSeq, side: e.side, fresh: fresh(e) };
	},
};
