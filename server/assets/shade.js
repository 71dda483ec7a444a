// shade.js - colour a decoded tile, times a hillshade, in one of two ways:
// - 'materials' (a version 2 tile): each sample by its material id, with the
//   map colours of docs/tile-format.md (unknown ids grey), water darker with
//   depth, softened by a small blur of the colours between samples;
// - 'ramp' (any tile): terrain layers (sand, grass, forest, rock, snow)
//   blended by weights that are functions of height and slope, as terrain
//   texturing blends its layers, under water where the ground is below sea
//   level.
// Pure functions of the tile and the world position, so tiles match across
// their borders.
import { MATERIALS } from './terrain.js';

// Layer colours by climate; a preset picks one by name (unknown: temperate).
const TEMPERATE = {
	sand: [222, 206, 160],
	grass: [122, 158, 84],
	forest: [56, 94, 54],
	rock: [146, 138, 128],
	snow: [246, 248, 252],
	shallow: [104, 170, 196],
	deep: [24, 60, 104],
	trees: 1, snow_line: 0.66,
};
const ARID = {
	sand: [222, 194, 146],
	grass: [196, 160, 110],
	forest: [150, 112, 76],
	rock: [170, 96, 64],
	snow: [232, 206, 164],
	shallow: [96, 160, 170],
	deep: [30, 70, 96],
	trees: 0.6, snow_line: 0.72,
};
// islands: wooded to the top, no snow on 600 m hills
export const CLIMATES = { default: TEMPERATE, alpine: TEMPERATE, islands: { ...TEMPERATE, trees: 1.3, snow_line: 1.1 }, mesa: ARID };

const smooth = (a, b, x) => {
	const t = Math.min(1, Math.max(0, (x - a) / (b - a)));
	return t * t * (3 - 2 * t);
};
const band = (x, a, b, c, d) => smooth(a, b, x) * (1 - smooth(c, d, x));

// Value noise on a 2D integer lattice (a few octaves), for patches of forest:
// hashing on integers, so it is the same wherever it is evaluated.
function hash2(ix, iz) {
	let h = Math.imul(ix | 0, 0x27d4eb2d) ^ Math.imul(iz | 0, 0x165667b1);
	h = Math.imul(h ^ (h >>> 15), 0x85ebca77);
	h = Math.imul(h ^ (h >>> 13), 0xc2b2ae3d);
	return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}
function vnoise(x, z) {
	const ix = Math.floor(x), iz = Math.floor(z);
	let fx = x - ix, fz = z - iz;
	fx = fx * fx * (3 - 2 * fx);
	fz = fz * fz * (3 - 2 * fz);
	const a = hash2(ix, iz), b = hash2(ix + 1, iz), c = hash2(ix, iz + 1), d = hash2(ix + 1, iz + 1);
	return a + (b - a) * fx + (c - a) * fz + (a - b - c + d) * fx * fz;
}
function patches(x, z) {
	return 0.6 * vnoise(x / 180, z / 180) + 0.3 * vnoise(x / 61 + 17.3, z / 61 - 4.1) + 0.1 * vnoise(x / 23, z / 23);
}

/**
 * Weights of the five layers at normalised altitude a (0 at the coast or the
 * lowest ground, 1 at the preset's highest), slope (rise over run) and patch
 * noise n in 0..1, written into w[0..4] (sand, grass, forest, rock, snow).
 * The presets are steep (median slopes of 0.8 to 2.9), so rock takes over
 * only on cliffs.
 */
export function layerWeights(a, slope, n, climate, w) {
	const coast = smooth(0.006, 0.025, a);
	w[0] = (1 - coast) * (1 - smooth(0.8, 1.6, slope)) * 1.2;
	w[1] = coast * (1 - smooth(0.36, 0.56, a)) * (1 - smooth(1.0, 2.0, slope));
	w[2] = band(a, 0.02, 0.08, 0.42, 0.58) * (1 - smooth(1.1, 2.4, slope)) * smooth(0.40, 0.60, n) * 1.8 * climate.trees;
	w[3] = smooth(1.3, 3.0, slope) * 1.4 + smooth(0.42, 0.66, a) * 0.8 + 0.02;
	const line = climate.snow_line + 0.06 * (n - 0.5);
	w[4] = smooth(line, line + 0.1, a) * (1 - smooth(1.6, 3.2, slope)) * 3;
	return w;
}

const hex = (c) => [1, 3, 5].map((k) => parseInt(c.slice(k, k + 2), 16));
/** RGB of material id k (the table of docs/tile-format.md), for ids 0..255. */
export const MATERIAL_RGB = Array.from({ length: 256 }, (_, k) => (MATERIALS[k] ? hex(MATERIALS[k].colour) : [128, 128, 128]));
const WATER = 0, DEEP = [12, 34, 72];

/*
 * Base colours of a material tile into rgb (Float32Array, 3 per sample):
 * the material's map colour, water darkened with depth below sea level;
 * then softened: inner samples take a 3x3 blend of their neighbours'
 * colours (weights 4 centre, 2 side, 1 corner), edge samples a 1-2-1 blend
 * along their edge only, corners none, so the two tiles sharing an edge
 * give its samples the same colour and no seam shows.
 */
function materialColours(q, mats, W, qm, sea) {
	const N = W * W, base = new Float32Array(N * 3), rgb = new Float32Array(N * 3);
	for (let k = 0; k < N; k++) {
		const id = mats[k], c = MATERIAL_RGB[id];
		let r = c[0], g = c[1], b = c[2];
		const depth = sea - q[k] * qm;
		if (id === WATER && depth > 0) {
			const t = 1 - Math.exp(-depth / 80);
			r += (DEEP[0] - r) * t; g += (DEEP[1] - g) * t; b += (DEEP[2] - b) * t;
		}
		base[3 * k] = r; base[3 * k + 1] = g; base[3 * k + 2] = b;
	}
	const L = W - 1;
	for (let j = 0; j < W; j++) {
		for (let i = 0; i < W; i++) {
			const k = j * W + i, o = 3 * k;
			const ei = i === 0 || i === L, ej = j === 0 || j === L;
			if (ei && ej) { // a corner: shared by four tiles
				rgb[o] = base[o]; rgb[o + 1] = base[o + 1]; rgb[o + 2] = base[o + 2];
				continue;
			}
			let taps;
			if (ej) taps = [[k - 1, 1], [k, 2], [k + 1, 1]];          // north or south edge
			else if (ei) taps = [[k - W, 1], [k, 2], [k + W, 1]];     // west or east edge
			else taps = null;
			if (taps) {
				for (let c = 0; c < 3; c++) {
					let v = 0;
					for (const [t, w] of taps) v += w * base[3 * t + c];
					rgb[o + c] = v / 4;
				}
				continue;
			}
			for (let c = 0; c < 3; c++) {
				const a = base[o + c] * 4 +
					(base[o - 3 + c] + base[o + 3 + c] + base[o - 3 * W + c] + base[o + 3 * W + c]) * 2 +
					base[o - 3 * W - 3 + c] + base[o - 3 * W + 3 + c] + base[o + 3 * W - 3 + c] + base[o + 3 * W + 3 + c];
				rgb[o + c] = a / 16;
			}
		}
	}
	return rgb;
}

/**
 * Colour a tile. q: Int32Array heights in quanta, side*side (row z then x);
 * info: { side, lod, quantumUm, cx, cz, chunkSize, sea, low, high, gen,
 * colour }, where low..high is the preset's height range in metres, gen its
 * name (for the climate) and colour 'materials' (the default) or 'ramp';
 * mats: the tile's material ids (Uint8Array, side*side) or null. Colours by
 * material when asked to and mats is there, else by the height ramp.
 * Returns a Uint8ClampedArray of side^2 RGBA pixels, pixel (i, j) for
 * sample (i, j), shared edges included: drawn from the centre of pixel 0 to
 * the centre of pixel side-1, the image covers exactly one chunk and
 * interpolates smoothly into its neighbours' edges.
 */
export function shadeTile(q, info, mats = null) {
	const W = info.side, P = W, s = 2 ** info.lod, qm = info.quantumUm / 1e6;
	const out = new Uint8ClampedArray(P * P * 4);
	const mc = mats && info.colour !== 'ramp' ? materialColours(q, mats, W, qm, info.sea ?? 0) : null;
	const cl = CLIMATES[info.gen] || TEMPERATE;
	const L = [cl.sand, cl.grass, cl.forest, cl.rock, cl.snow];
	const sea = info.sea ?? 0;
	const base = Math.max(sea, info.low ?? sea);
	const range = Math.max(1, (info.high ?? base + 1000) - base);
	// hillshade: sun in the north-west (-x, -z), 45 degrees up, relief a
	// little exaggerated at coarse LODs, where samples are far apart
	const ex = 0.9 + 0.08 * info.lod;
	const el = 45 * Math.PI / 180, c = Math.cos(el) * Math.SQRT1_2, sn = Math.sin(el);
	const x0 = info.cx * info.chunkSize, z0 = info.cz * info.chunkSize;
	const w = new Float64Array(5);
	for (let j = 0; j < P; j++) {
		const jm = j > 0 ? j - 1 : j, jp = j < W - 1 ? j + 1 : j, dz = (jp - jm) * s;
		for (let i = 0; i < P; i++) {
			const h = q[j * W + i] * qm;
			const im = i > 0 ? i - 1 : i, ip = i < W - 1 ? i + 1 : i;
			const gx = (q[j * W + ip] - q[j * W + im]) * qm / ((ip - im) * s);
			const gz = (q[jp * W + i] - q[jm * W + i]) * qm / dz;
			const slope = Math.sqrt(gx * gx + gz * gz);
			// steep ground is shaded as if gentler, so cliffs keep some colour
			const k = ex / (1 + 0.3 * slope), ax = gx * k, az = gz * k;
			const light = (ax * c + az * c + sn) / Math.sqrt(1 + ax * ax + az * az) / sn; // 1 on flat ground
			let r, g, b, lit;
			if (mc) {
				const o = 3 * (j * W + i);
				r = mc[o]; g = mc[o + 1]; b = mc[o + 2];
				lit = mats[j * W + i] === WATER ? 0.86 + 0.14 * Math.min(1.3, Math.max(0, light))
					: 0.45 + 0.6 * Math.min(1.45, Math.max(0, light));
			} else if (h < sea) {
				const t = 1 - Math.exp(-(sea - h) / 80);
				r = cl.shallow[0] + (cl.deep[0] - cl.shallow[0]) * t;
				g = cl.shallow[1] + (cl.deep[1] - cl.shallow[1]) * t;
				b = cl.shallow[2] + (cl.deep[2] - cl.shallow[2]) * t;
				lit = 0.86 + 0.14 * Math.min(1.3, Math.max(0, light));
			} else {
				const n = patches(x0 + i * s, z0 + j * s);
				layerWeights((h - base) / range, slope, n, cl, w);
				const sum = w[0] + w[1] + w[2] + w[3] + w[4];
				r = g = b = 0;
				for (let k = 0; k < 5; k++) {
					r += w[k] * L[k][0];
					g += w[k] * L[k][1];
					b += w[k] * L[k][2];
				}
				r /= sum; g /= sum; b /= sum;
				lit = 0.45 + 0.6 * Math.min(1.45, Math.max(0, light));
			}
			const o = (j * P + i) * 4;
			out[o] = r * lit;
			out[o + 1] = g * lit;
			out[o + 2] = b * lit;
			out[o + 3] = 255;
		}
	}
	return out;
}
