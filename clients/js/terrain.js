// terrain.js - the JavaScript client of the terrain chunk server, as one ES
// module with no dependencies: fetch a tile or a bundle, decode it (the
// tile format, versions 1 to 6: heights, coded or as byte planes, and
// the material layer;
// docs/tile-format.md), verify it (XXH3-64 checksum, and that the header
// names what was asked for), and build height arrays and meshes that
// three.js, Babylon.js or a physics engine take as they are.
//
// The server's map viewer imports this very file (served as
// /assets/terrain.js); a web game can import it from there, or copy it.
// Runs in pages, workers and Node.js 18+ (fetch). docs/js-client.md.
//
//   import { fetchBundle, stitch, gridMesh } from 'http://127.0.0.1:8080/assets/terrain.js';
//   const tiles = await fetchBundle('http://127.0.0.1:8080', { seed: 42, lod: 2, cx0: -1, cz0: -1, cx1: 1, cz1: 1 });
//   const grid = stitch(tiles, { cx0: -1, cz0: -1, cx1: 1, cz1: 1 });   // 193 x 193 heights, edges shared
//   const { positions, indices } = gridMesh(grid);

const KSECRET = new Uint8Array([
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
	0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
	0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
	0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
	0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
	0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
	0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
	0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
	0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
]);
const SECRET = new DataView(KSECRET.buffer);
const SECRET_SIZE = 192;

const M64 = (1n << 64n) - 1n;
const P32_1 = 0x9E3779B1, P32_2 = 0x85EBCA77, P32_3 = 0xC2B2AE3D;
const P64_1 = 0x9E3779B185EBCA87n, P64_2 = 0xC2B2AE3D27D4EB4Fn, P64_3 = 0x165667B19E3779F9n;
const P64_4 = 0x85EBCA77C2B2AE63n, P64_5 = 0x27D4EB2F165667C5n;

// ---- 64-bit helpers on BigInt (the short paths and the final mixing) ----

const s64 = (dv, off) => dv.getBigUint64(off, true);
const s32 = (dv, off) => BigInt(dv.getUint32(off, true));
const mul = (a, b) => (a * b) & M64;
const add = (a, b) => (a + b) & M64;
const rotl = (v, r) => ((v << BigInt(r)) | (v >> BigInt(64 - r))) & M64;
const xorshift = (v, s) => v ^ (v >> BigInt(s));

function fold(a, b) { // low 64 bits of a*b xor high 64 bits
	const p = a * b;
	return (p & M64) ^ (p >> 64n);
}

function avalanche(h) {
	h = xorshift(h, 37);
	h = mul(h, 0x165667919E3779F9n);
	return xorshift(h, 32);
}

function avalanche64(h) {
	h = mul(h ^ (h >> 33n), P64_2);
	h = mul(h ^ (h >> 29n), P64_3);
	return h ^ (h >> 32n);
}

function rrmxmx(h, len) {
	h ^= rotl(h, 49) ^ rotl(h, 24);
	h = mul(h, 0x9FB21C651E98DF25n);
	h ^= add(h >> 35n, BigInt(len));
	h = mul(h, 0x9FB21C651E98DF25n);
	return xorshift(h, 28);
}

function bswap64(v) {
	let r = 0n;
	for (let i = 0; i < 8; i++) {
		r = (r << 8n) | (v & 0xFFn);
		v >>= 8n;
	}
	return r;
}

function mix16(dv, p, s) {
	return fold(s64(dv, p) ^ s64(SECRET, s), s64(dv, p + 8) ^ s64(SECRET, s + 8));
}

function hash0to16(dv, len) {
	if (len > 8) {
		const lo = s64(dv, 0) ^ (s64(SECRET, 24) ^ s64(SECRET, 32));
		const hi = s64(dv, len - 8) ^ (s64(SECRET, 40) ^ s64(SECRET, 48));
		const acc = (BigInt(len) + bswap64(lo) + hi + fold(lo, hi)) & M64;
		return avalanche(acc);
	}
	if (len >= 4) {
		const in1 = s32(dv, 0), in2 = s32(dv, len - 4);
		const bitflip = s64(SECRET, 8) ^ s64(SECRET, 16);
		return rrmxmx((in2 + (in1 << 32n)) ^ bitflip, len);
	}
	if (len > 0) {
		const c1 = dv.getUint8(0), c2 = dv.getUint8(len >> 1), c3 = dv.getUint8(len - 1);
		const combined = BigInt(((c1 << 16) | (c2 << 24) | c3 | (len << 8)) >>> 0);
		const bitflip = s32(SECRET, 0) ^ s32(SECRET, 4);
		return avalanche64(combined ^ bitflip);
	}
	return avalanche64(s64(SECRET, 56) ^ s64(SECRET, 64));
}

function hash17to128(dv, len) {
	let acc = mul(BigInt(len), P64_1);
	if (len > 32) {
		if (len > 64) {
			if (len > 96) {
				acc += mix16(dv, 48, 96);
				acc += mix16(dv, len - 64, 112);
			}
			acc += mix16(dv, 32, 64);
			acc += mix16(dv, len - 48, 80);
		}
		acc += mix16(dv, 16, 32);
		acc += mix16(dv, len - 32, 48);
	}
	acc += mix16(dv, 0, 0);
	acc += mix16(dv, len - 16, 16);
	return avalanche(acc & M64);
}

function hash129to240(dv, len) {
	let acc = mul(BigInt(len), P64_1);
	const rounds = len >> 4;
	for (let i = 0; i < 8; i++)
		acc += mix16(dv, 16 * i, 16 * i);
	acc = avalanche(acc & M64);
	for (let i = 8; i < rounds; i++)
		acc += mix16(dv, 16 * i, 16 * (i - 8) + 3);
	acc += mix16(dv, len - 16, 136 - 17);
	return avalanche(acc & M64);
}

// ---- the long path on 32-bit halves (the hot loop: no BigInt) ----

// acc: Uint32Array(16), lane i is lo = acc[2i], hi = acc[2i+1].
function accumulate512(acc, dv, p, s) {
	for (let i = 0; i < 8; i++) {
		const dlo = dv.getUint32(p + 8 * i, true), dhi = dv.getUint32(p + 8 * i + 4, true);
		const klo = (dlo ^ SECRET.getUint32(s + 8 * i, true)) >>> 0;
		const khi = (dhi ^ SECRET.getUint32(s + 8 * i + 4, true)) >>> 0;
		// acc[i ^ 1] += data
		const j = 2 * (i ^ 1);
		let t = acc[j] + dlo;
		acc[j] = t;
		acc[j + 1] += dhi + (t > 0xFFFFFFFF ? 1 : 0);
		// acc[i] += klo * khi (32 x 32 -> 64, exact in doubles by 16-bit parts)
		const a0 = klo & 0xFFFF, a1 = klo >>> 16, b0 = khi & 0xFFFF, b1 = khi >>> 16;
		const mid = a0 * b1 + a1 * b0;
		const lo = a0 * b0 + (mid % 65536) * 65536;
		const hi = a1 * b1 + Math.floor(mid / 65536) + Math.floor(lo / 4294967296);
		t = acc[2 * i] + (lo % 4294967296);
		acc[2 * i] = t;
		acc[2 * i + 1] += hi + (t > 0xFFFFFFFF ? 1 : 0);
	}
}

function scramble(acc, s) {
	for (let i = 0; i < 8; i++) {
		let lo = acc[2 * i], hi = acc[2 * i + 1];
		lo = (lo ^ (hi >>> 15) ^ SECRET.getUint32(s + 8 * i, true)) >>> 0;
		hi = (hi ^ SECRET.getUint32(s + 8 * i + 4, true)) >>> 0;
		// (hi:lo) * P32_1 mod 2^64
		const a0 = lo & 0xFFFF, a1 = lo >>> 16, b0 = P32_1 & 0xFFFF, b1 = P32_1 >>> 16;
		const mid = a0 * b1 + a1 * b0;
		const plo = a0 * b0 + (mid % 65536) * 65536;
		const phi = a1 * b1 + Math.floor(mid / 65536) + Math.floor(plo / 4294967296);
		acc[2 * i] = plo % 4294967296;
		acc[2 * i + 1] = phi + Math.imul(hi, P32_1);
	}
}

function hashLong(dv, len) {
	const acc = new Uint32Array(16);
	const init = [BigInt(P32_3), P64_1, P64_2, P64_3, P64_4, BigInt(P32_2), P64_5, BigInt(P32_1)];
	for (let i = 0; i < 8; i++) {
		acc[2 * i] = Number(init[i] & 0xFFFFFFFFn);
		acc[2 * i + 1] = Number(init[i] >> 32n);
	}
	const stripesPerBlock = (SECRET_SIZE - 64) / 8; // 16
	const blockLen = 64 * stripesPerBlock;
	const blocks = Math.floor((len - 1) / blockLen);
	for (let n = 0; n < blocks; n++) {
		for (let k = 0; k < stripesPerBlock; k++)
			accumulate512(acc, dv, n * blockLen + 64 * k, 8 * k);
		scramble(acc, SECRET_SIZE - 64);
	}
	const stripes = Math.floor((len - 1 - blockLen * blocks) / 64);
	for (let k = 0; k < stripes; k++)
		accumulate512(acc, dv, blocks * blockLen + 64 * k, 8 * k);
	accumulate512(acc, dv, len - 64, SECRET_SIZE - 64 - 7);
	// merge
	let result = mul(BigInt(len), P64_1);
	const lane = (i) => (BigInt(acc[2 * i + 1]) << 32n) | BigInt(acc[2 * i]);
	for (let i = 0; i < 4; i++)
		result += fold(lane(2 * i) ^ s64(SECRET, 11 + 16 * i), lane(2 * i + 1) ^ s64(SECRET, 11 + 16 * i + 8));
	return avalanche(result & M64);
}

/** XXH3-64 with seed 0 of bytes (Uint8Array), as a BigInt. */
export function xxh3(bytes) {
	const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
	const len = bytes.byteLength;
	if (len <= 16) return hash0to16(dv, len);
	if (len <= 128) return hash17to128(dv, len);
	if (len <= 240) return hash129to240(dv, len);
	return hashLong(dv, len);
}

/** The same as 16 lowercase hex digits. */
export const xxh3Hex = (bytes) => xxh3(bytes).toString(16).padStart(16, '0');

// ---- the tile format ----

export const HEADER_LEN = 64;
const LAYERS_HEAD = 4, LAYER_HEAD = 8, LAYER_MATERIAL = 1;

/** Material ids of the version 2 material layer, with their map colours. */
export const MATERIALS = [
	{ id: 0, name: 'water', colour: '#2a5d8f' },
	{ id: 1, name: 'sand', colour: '#d8c78e' },
	{ id: 2, name: 'grass', colour: '#6f9e4a' },
	{ id: 3, name: 'forest', colour: '#3b6a35' },
	{ id: 4, name: 'rock', colour: '#8a8580' },
	{ id: 5, name: 'snow', colour: '#f2f4f7' },
];

/** A decoding error; code is the reference decoder's name (ERR_TRUNC...). */
export class TileError extends Error {
	constructor(code, message) {
		super(`${code}: ${message}`);
		this.name = 'TileError';
		this.code = code;
	}
}

/**
 * Check a tile's header (the checks of docs/tile-format.md, "Validation",
 * in its order, that need only the 64 header bytes) and return its fields.
 */
export function decodeHeader(u8) {
	if (u8.byteLength < HEADER_LEN) throw new TileError('ERR_TRUNC', `${u8.byteLength} bytes, a header is 64`);
	const dv = new DataView(u8.buffer, u8.byteOffset, HEADER_LEN);
	if (u8[0] !== 0x54 || u8[1] !== 0x52 || u8[2] !== 0x52 || u8[3] !== 0x4E)
		throw new TileError('ERR_MAGIC', 'not a terrain tile (magic is not TRRN)');
	const h = {
		magic: 'TRRN',
		version: dv.getUint16(4, true),
		headerLen: dv.getUint16(6, true),
		fingerprint: dv.getBigUint64(8, true).toString(16).padStart(16, '0'),
		seed: dv.getBigUint64(16, true).toString(),
		cx: dv.getInt32(24, true),
		cz: dv.getInt32(28, true),
		lod: dv.getUint8(32),
		chunkLog2: dv.getUint8(33),
		filter: dv.getUint8(34),
		planes: dv.getUint8(35),
		side: dv.getUint32(36, true),
		quantumUm: dv.getUint32(40, true),
		offset: dv.getInt32(44, true),
		editSeq: Number(dv.getBigUint64(48, true)),
		checksum: dv.getBigUint64(56, true).toString(16).padStart(16, '0'),
	};
	if (h.version < 1 || h.version > 6) throw new TileError('ERR_VERSION', `version ${h.version}, this decoder reads 1 to 6`);
	h.coded = h.version >= 3;
	h.states = h.version >= 5 ? 8 : 2;   // rANS states of the coded form
	h.layers = h.version % 2 === 0;
	if (h.headerLen !== HEADER_LEN) throw new TileError('ERR_CORRUPT', `header_len ${h.headerLen}`);
	if (h.coded ? h.filter !== 2 && h.filter !== 3 : h.filter !== 1) throw new TileError('ERR_CORRUPT', `filter ${h.filter} in version ${h.version}`);
	if (h.coded ? h.planes !== 0 : h.planes < 1 || h.planes > 4) throw new TileError('ERR_CORRUPT', `planes ${h.planes}`);
	if (h.chunkLog2 < 4) throw new TileError('ERR_CORRUPT', `chunk_log2 ${h.chunkLog2}`);
	if (h.chunkLog2 > 12) throw new TileError('ERR_TOOBIG', `chunk_log2 ${h.chunkLog2}`);
	if (h.lod > h.chunkLog2) throw new TileError('ERR_CORRUPT', `lod ${h.lod} > chunk_log2 ${h.chunkLog2}`);
	if (h.side !== 2 ** (h.chunkLog2 - h.lod) + 1) throw new TileError('ERR_CORRUPT', `side ${h.side}`);
	if (h.quantumUm === 0) throw new TileError('ERR_CORRUPT', 'quantum_um is 0');
	return h;
}

/* The tile's expected length; with layers after checking the layer
 * section's head (exactly one raw material layer of side*side bytes). */
function expectedLength(u8, h) {
	const n = h.side * h.side;
	let need;
	if (h.coded) {
		if (u8.byteLength < HEADER_LEN + 4) throw new TileError('ERR_TRUNC', 'the coded length is cut short');
		const coded = new DataView(u8.buffer, u8.byteOffset + HEADER_LEN, 4).getUint32(0, true);
		if (coded > 6 * n + 4096) throw new TileError('ERR_CORRUPT', `coded length ${coded}`);
		need = HEADER_LEN + 4 + coded;
		h.codedLen = coded;
	} else {
		need = HEADER_LEN + h.planes * n;
	}
	if (h.layers) {
		const at = need, len = u8.byteLength;
		if (len < at + LAYERS_HEAD + LAYER_HEAD) throw new TileError('ERR_TRUNC', 'the layer section is cut short');
		if (u8[at] !== 1 || u8[at + 1] || u8[at + 2] || u8[at + 3]) throw new TileError('ERR_CORRUPT', 'layer count is not 1');
		const l = at + LAYERS_HEAD;
		if (u8[l] !== LAYER_MATERIAL || u8[l + 1] !== 0) throw new TileError('ERR_VERSION', `layer ${u8[l]} encoding ${u8[l + 1]}`);
		const dv = new DataView(u8.buffer, u8.byteOffset + l, LAYER_HEAD);
		if (u8[l + 2] || u8[l + 3] || dv.getUint32(4, true) !== n) throw new TileError('ERR_CORRUPT', 'bad material layer head');
		need += LAYERS_HEAD + LAYER_HEAD + n;
	}
	return need;
}

/**
 * Decode a whole tile (ArrayBuffer or Uint8Array). Returns { header,
 * quanta: Int32Array of side*side heights in quanta (row z, then x),
 * heights: Float64Array of the same in metres (null with metres: false),
 * materials: Uint8Array of side*side material ids (version 2) or null }.
 * Throws TileError with the reference decoder's code, checks in its order.
 * verify: check the XXH3 checksum (default true).
 */
export function decodeTile(input, { verify = true, metres = true } = {}) {
	const u8 = input instanceof Uint8Array ? input : new Uint8Array(input);
	const h = decodeHeader(u8);
	const want = expectedLength(u8, h), length = u8.byteLength;
	if (length < want) throw new TileError('ERR_TRUNC', `${length} bytes, the header says ${want}`);
	if (length > want) throw new TileError('ERR_TOOBIG', `${length} bytes, the header says ${want}`);
	if (verify) {
		const rest = new Uint8Array(u8.byteLength - 8);
		rest.set(u8.subarray(0, 56), 0);
		rest.set(u8.subarray(HEADER_LEN), 56);
		const sum = xxh3Hex(rest);
		if (sum !== h.checksum) throw new TileError('ERR_CHECKSUM', `checksum ${sum}, the header says ${h.checksum}`);
	}
	const W = h.side, N = W * W, P = h.planes, pay = u8.subarray(HEADER_LEN);
	const q = h.coded ? decodeCoded(pay.subarray(0, 4 + h.codedLen), W, h.filter, h.offset, h.states) : decodePlanes(pay, W, P, h.offset);
	let heights = null;
	if (metres) {
		heights = new Float64Array(N);
		const s = h.quantumUm / 1e6;
		for (let k = 0; k < N; k++) heights[k] = q[k] * s;
	}
	const materials = h.layers ? u8.slice(want - N, want) : null;
	return { header: h, quanta: q, heights, materials };
}

/* Versions 1 and 2: filter 1 (lz21) byte planes. */
function decodePlanes(pay, W, P, offset) {
	const N = W * W;
	for (let p = 0; p < P; p++)
		if (pay[p * N] !== 0) throw new TileError('ERR_CORRUPT', 'r[0][0] is not 0');
	if (P > 1) {
		let any = 0;
		for (let k = 0; k < N && !any; k++) any = pay[k];
		if (!any) throw new TileError('ERR_CORRUPT', 'planes not minimal');
	}
	// 1-2: gather the planes, unzigzag (int32 arithmetic wraps like u32)
	const q = new Int32Array(N);
	for (let k = 0; k < N; k++) {
		let z = 0;
		for (let p = 0; p < P; p++) z = (z << 8) | pay[p * N + k];
		q[k] = (z >>> 1) ^ -(z & 1);
	}
	// 3: inverse row pass as two running sums; 5: offset on row 0 only,
	// then 4: inverse column pass carries it down
	for (let j = 0; j < W; j++) {
		const b = j * W;
		let e = q[b], f = 0;
		for (let i = 1; i < W; i++) {
			f = (f + q[b + i]) | 0;
			e = (e + f) | 0;
			q[b + i] = e;
		}
	}
	for (let i = 0; i < W; i++) q[i] = (q[i] + offset) | 0;
	for (let k = W; k < N; k++) q[k] = (q[k] + q[k - W]) | 0;
	return q;
}

// ---- versions 3 to 6: coded heights (filters 2 and 3) ----
// The arithmetic follows docs/tile-format.md, "Coded payload": predictions
// are exact integers below 2^37 in doubles, heights wrap through | 0.
// Speed: typed-array tables indexed by (context, token), filter 2 a whole
// line at a time (predictions and contexts, then its samples), no closure
// or allocation per sample.

const NTOK = 72, NCTX = 16, NIX = NCTX * NTOK, PROB_BITS = 10, PROB_M = 1 << PROB_BITS, RANS_L = 65536, ZSAT = 1 << 24, CTX_CORNER = 15, NARROW = 1 << 25;
const LINE_CUBIC = 0, LINE_LINEAR = 1, LINE_EDGES = 2;
const TOK_NB = new Uint8Array(NTOK);
for (let t = 16; t < NTOK; t++) TOK_NB[t] = ((t - 16) >> 1) + 3;
const corrupt = (why) => new TileError('ERR_CORRUPT', why);
const zigzag = (r) => ((r << 1) ^ (r >> 31)) >>> 0;
const blen = (v) => (v < 4294967296 ? 32 - Math.clz32(v) : 64 - Math.clz32(Math.floor(v / 4294967296)));
const blen32 = (v) => 32 - Math.clz32(v);

const hierCtx = (b, d) => (d === 1 ? (b < 10 ? b : 10) : d === 2 ? 11 + Math.min(b >> 2, 2) : 14);

/* Filter 2's prediction (mod 2^32, as int32) and context of one sample
 * between p1 and p2, from p0 and p3 when cubic: exact in doubles. */
function hierOne(q, k, off, cubic, d, pred, ctx, m) {
	const p1 = q[k - off], p2 = q[k + off];
	if (cubic) {
		const p0 = q[k - 3 * off], p3 = q[k + 3 * off];
		pred[m] = Math.floor((9 * (p1 + p2) - p0 - p3 + 8) / 16);
		ctx[m] = hierCtx(blen(Math.abs(p0 + p3 - p1 - p2)), d);
	} else {
		pred[m] = Math.floor((p1 + p2) / 2);
		ctx[m] = hierCtx(blen(Math.abs(p1 - p2)), d);
	}
}

/* Filter 2's predictions and contexts of a line: n samples at q[o + m * st],
 * each between q[k - off] and q[k + off] (and q[k -+ 3 off] when cubic);
 * LINE_EDGES: the first and last linear, the rest cubic. narrow: every
 * height within 2^25 of base (NARROW), so the cubic sums, taken relative
 * to base, are exact in int32 (tilecode.c does the same). */
function hierLine(q, o, st, off, n, kind, d, pred, ctx, narrow, base) {
	let m0 = 0, m1 = n;
	if (kind === LINE_LINEAR) {
		for (let m = 0; m < n; m++) hierOne(q, o + m * st, off, false, d, pred, ctx, m);
		return;
	}
	if (kind === LINE_EDGES) {
		hierOne(q, o, off, false, d, pred, ctx, 0);
		if (n === 1) return;
		hierOne(q, o + (n - 1) * st, off, false, d, pred, ctx, n - 1);
		m0 = 1;
		m1 = n - 1;
	}
	if (!narrow) {
		for (let m = m0; m < m1; m++) hierOne(q, o + m * st, off, true, d, pred, ctx, m);
		return;
	}
	const o3 = 3 * off;
	for (let m = m0, k = o + m0 * st; m < m1; m++, k += st) {
		const a0 = (q[k - o3] - base) | 0, a1 = (q[k - off] - base) | 0, a2 = (q[k + off] - base) | 0, a3 = (q[k + o3] - base) | 0;
		pred[m] = (base + ((9 * (a1 + a2) - a0 - a3 + 8) >> 4)) | 0;
		const cv = a0 + a3 - a1 - a2, b = 32 - Math.clz32(cv < 0 ? -cv : cv);
		ctx[m] = d === 1 ? (b < 10 ? b : 10) : d === 2 ? 11 + Math.min(b >> 2, 2) : 14;
	}
}

/* Filter 3: the causal prediction of sample (i, j). */
function causalPred(q, W, i, j) {
	const k = j * W + i;
	if (j === 0) return i === 1 ? q[k - 1] : 2 * q[k - 1] - q[k - 2];
	if (i === 0) return q[k - W];
	if (i === 1 || j === 1) return q[k - W] + q[k - 1] - q[k - W - 1];
	return Math.floor((3 * (q[k - W] + q[k - 1]) - 4 * q[k - W - 1] - q[k - 2] + q[k - W - 2] - q[k - 2 * W] + q[k - 2 * W - 1]) / 2);
}

/* The frequencies counts c[o .. o + NTOK) (total t) normalise to, into f. */
function normalize(c, o, t, f) {
	let sum = 0, big = 0;
	for (let k = 0; k < NTOK; k++) {
		f[k] = c[o + k] ? Math.max(1, Math.floor((c[o + k] * PROB_M + Math.floor(t / 2)) / t)) : 0;
		sum += f[k];
		if (f[k] > f[big]) big = k;
	}
	if (sum < PROB_M) f[big] += PROB_M - sum;
	while (sum > PROB_M) {
		big = 0;
		for (let k = 1; k < NTOK; k++) if (f[k] > f[big]) big = k;
		f[big]--;
		sum--;
	}
}

/* Sum of blen(zigzag(q[o + m * st] - pred[m])) over n samples. */
function lineBits(q, o, st, n, pred) {
	let bits = 0;
	for (let m = 0; m < n; m++) bits += blen32(zigzag((q[o + m * st] - pred[m]) | 0));
	return bits;
}

/* Filter 2's bits over row j, as the passes that visit it (tilecode.c,
 * hier_row_bits()). */
function hierRowBits(q, W, j, pred, ctx, narrow) {
	const s = W - 1;
	let bits = 0, dr;
	if (j === 0 || j === s) {
		if (j === 0) bits += blen32(zigzag((q[s] - q[0]) | 0));
		else bits += blen32(zigzag((q[s * W] - q[0]) | 0)) + blen32(zigzag((q[s * W + s] - (q[s] + q[s * W] - q[0])) | 0));
		dr = s >> 1;
	} else {
		dr = j & -j;
		const n = s / (2 * dr) + 1;
		hierLine(q, j * W, 2 * dr, dr * W, n, j >= 3 * dr && j + 3 * dr < W ? LINE_CUBIC : LINE_LINEAR, dr, pred, ctx, narrow, q[0]);
		bits += lineBits(q, j * W, 2 * dr, n, pred);
	}
	for (let d = 1; d <= dr; d *= 2) {
		const n = s / (2 * d);
		hierLine(q, j * W + d, 2 * d, d, n, LINE_EDGES, d, pred, ctx, narrow, q[0]);
		bits += lineBits(q, j * W + d, 2 * d, n, pred);
	}
	return bits;
}

/* The filter the rule picks for heights q. */
function chooseFilter(q, W, pred, ctx, narrow) {
	let jh = 0, jc = 0;
	for (let j = 0; j < W; j += (j & 31) === 3 ? 29 : 1) {
		jh += hierRowBits(q, W, j, pred, ctx, narrow);
		for (let i = j ? 0 : 1; i < W; i++) jc += blen32(zigzag((q[j * W + i] - causalPred(q, W, i, j)) | 0));
	}
	return jh <= jc ? 2 : 3;
}

/* The moving parts of the decoder, copied into locals by each loop. */
class CodedReader {
	constructor(pay, bitsLen, S, offset) {
		this.pay = pay;
		// the bit stream as 32-bit little-endian words, zero-padded
		const nw = ((bitsLen + 3) >> 2) + 2;
		this.words = new Uint32Array(nw);
		for (let b = 0; b < bitsLen; b++) this.words[b >> 2] |= pay[8 + b] << (8 * (b & 3));
		this.bitsLen = bitsLen;
		this.pos = 0;
		this.x = new Int32Array(8);         // the rANS states, as int32 bits
		this.j = 0;
		this.smask = S - 1;
		this.rp = 8 + bitsLen + 4 * S;
		this.rEnd = pay.byteLength;
		this.rover = false;
		// NARROW - offset, and the OR of every decoded height plus it: below
		// 2 NARROW while all are within NARROW of the offset
		const b = (offset ^ 0x80000000) >>> 0;
		this.narrowBase = b >= NARROW && b <= 2 ** 32 - NARROW;
		this.add = (NARROW - offset) | 0;
		this.acc = 0;
		// tables, indexed by context * NTOK + token
		this.sym = new Uint8Array(NCTX * PROB_M);
		this.fq = new Int32Array(NIX);       // freq | cum << 16
		this.base = new Int32Array(NIX);     // token base values, as int32 bits
		this.nb = new Uint8Array(NIX);
		this.cnt = new Uint32Array(NIX);
		this.freq = new Uint16Array(NIX);
		this.used = new Uint8Array(NCTX);
	}

	/* Whether every height decoded so far is within NARROW of the offset. */
	narrow() {
		return this.narrowBase && (this.acc >>> 0) < 2 * NARROW;
	}

	/* n <= 32 bits at the bit position, least significant first. */
	get(n) {
		if (!n) return 0;
		const p = this.pos, w = p >>> 5, sh = p & 31;
		const lo = this.words[Math.min(w, this.words.length - 2)], hi = this.words[Math.min(w + 1, this.words.length - 1)];
		const v = sh ? ((lo >>> sh) | (hi << (32 - sh))) >>> 0 : lo;
		this.pos = p + n;
		return n === 32 ? v : (v & ((1 << n) - 1)) >>> 0;
	}

	tables() {
		for (let c = 0; c < NCTX; c++) {
			const o = c * NTOK, f = this.freq;
			this.used[c] = this.get(1);
			if (!this.used[c]) f[o] = PROB_M;
			else {
				const last = this.get(7);
				if (last >= NTOK) throw corrupt('table length');
				let sum = 0;
				for (let t = 0; t <= last; t++) {
					let m = 0;
					while (!this.get(1)) if (++m > PROB_BITS) throw corrupt('frequency code');
					f[o + t] = ((1 << m) | this.get(m)) - 1;
					if (f[o + t] > PROB_M) throw corrupt('frequency');
					sum += f[o + t];
				}
				if (sum !== PROB_M || !f[o + last]) throw corrupt('table sum');
			}
			for (let t = 0, s = 0; t < NTOK; s += f[o + t], t++) {
				this.fq[o + t] = f[o + t] | s << 16;
				this.base[o + t] = t < 16 ? t : (2 | (t & 1)) << TOK_NB[t];
				this.nb[o + t] = TOK_NB[t];
				this.sym.fill(t, c * PROB_M + s, c * PROB_M + s + f[o + t]);
			}
		}
		if (this.get((8 - (this.pos & 7)) & 7)) throw corrupt('table padding');
		if (this.pos > 8 * this.bitsLen) throw corrupt('bit stream length');
	}

	/* Decode n samples: sample m in context ctx[m] becomes pred[m] +
	 * unzigzag(z) at q[o + m * st]. Returns the z of the last one. */
	run(q, o, st, n, pred, ctx) {
		const x = this.x, sym = this.sym, fq = this.fq, base = this.base, nbt = this.nb, cnt = this.cnt;
		const words = this.words, pay = this.pay, rEnd = this.rEnd, smask = this.smask, wmax = words.length - 2;
		let j = this.j, rp = this.rp, pos = this.pos, z = 0, acc = this.acc;
		const add = this.add;
		for (let m = 0, k = o; m < n; m++, k += st) {
			const c = ctx[m];
			let xs = x[j];
			const slot = xs & (PROB_M - 1), ix = c * NTOK + sym[(c << PROB_BITS) | slot], f = fq[ix];
			xs = (Math.imul(f & 0xffff, xs >>> PROB_BITS) + slot - (f >> 16)) | 0;
			if ((xs >>> 16) === 0) {
				if (rp + 2 <= rEnd) xs = (xs << 16) | pay[rp] | (pay[rp + 1] << 8);
				else { this.rover = true; xs <<= 16; }
				rp += 2;
			}
			x[j] = xs;
			j = (j + 1) & smask;
			cnt[ix]++;
			z = base[ix];
			const nb = nbt[ix];
			if (nb) {
				const w = pos >>> 5 < wmax ? pos >>> 5 : wmax, sh = pos & 31;
				const v = sh ? (words[w] >>> sh) | (words[w + 1] << (32 - sh)) : words[w];
				z |= v & ((1 << nb) - 1);
				pos += nb;
			}
			const v = (pred[m] + ((z >>> 1) ^ -(z & 1))) | 0;
			q[k] = v;
			acc |= (v + add) | 0;
		}
		this.j = j;
		this.rp = rp;
		this.pos = pos;
		this.acc = acc;
		return z;   // as int32 bits
	}
}

/* Filter 2, backwards: the corners, then each level's column and row
 * steps, a line at a time. */
function hierInverse(r, q, W, pred, ctx) {
	let s = W - 1;
	ctx.fill(CTX_CORNER, 0, 3);
	pred[0] = q[0];
	r.run(q, s, 1, 1, pred, ctx);
	r.run(q, s * W, 1, 1, pred, ctx);
	pred[0] = q[s] + q[s * W] - q[0];
	r.run(q, s * W + s, 1, 1, pred, ctx);
	for (; s >= 2; s >>= 1) {
		const d = s >> 1;
		let n = (W - 1) / s + 1;
		for (let j = d; j < W; j += s) {
			hierLine(q, j * W, s, d * W, n, j >= 3 * d && j + 3 * d < W ? LINE_CUBIC : LINE_LINEAR, d, pred, ctx, r.narrow(), q[0]);
			r.run(q, j * W, s, n, pred, ctx);
		}
		n = (W - 1) / s;
		for (let j = 0; j < W; j += d) {
			hierLine(q, j * W + d, s, d, n, LINE_EDGES, d, pred, ctx, r.narrow(), q[0]);
			r.run(q, j * W + d, s, n, pred, ctx);
		}
	}
}

/* Filter 3, backwards: raster order, each sample's context from the
 * saturated z of its neighbours (rows padded with zeros: two before, one
 * after). */
function causalInverse(r, q, W, pred, ctx) {
	let up = new Uint32Array(W + 3), cur = new Uint32Array(W + 3);
	for (let j = 0; j < W; j++) {
		for (let i = j ? 0 : 1; i < W; i++) {
			const a = 4 * cur[i + 1] + cur[i] + 2 * up[i + 2] + up[i + 1] + up[i + 3];
			const b = blen32(a >>> 2);
			ctx[0] = b < 15 ? b : 15;
			pred[0] = causalPred(q, W, i, j);
			cur[i + 2] = Math.min(r.run(q, j * W + i, 1, 1, pred, ctx) >>> 0, ZSAT);
		}
		const t = up; up = cur; cur = t;
		cur.fill(0);
	}
}

function decodeCoded(pay, W, filter, offset, S) {
	const N = W * W, len = pay.byteLength - 4;
	const dv = new DataView(pay.buffer, pay.byteOffset, pay.byteLength);
	const bitsLen = dv.getUint32(4, true), at = 8;
	if (bitsLen > len - 4 || len - 4 - bitsLen < 4 * S || (len - 4 - bitsLen) % 2) throw corrupt('coded lengths');
	const r = new CodedReader(pay, bitsLen, S, offset);
	for (let k = 0; k < S; k++) {
		const x = dv.getUint32(at + bitsLen + 4 * k, true);
		if (x < RANS_L) throw corrupt('rANS state');
		r.x[k] = x;
	}
	r.tables();
	const q = new Int32Array(N), pred = new Int32Array(W), ctx = new Uint8Array(W);
	q[0] = offset;
	if (filter === 2) hierInverse(r, q, W, pred, ctx);
	else causalInverse(r, q, W, pred, ctx);
	// canonical: both streams used up exactly, states back at RANS_L,
	// tables from the counts, and the filter the rule picks
	if (r.rover || r.rp !== r.rEnd) throw corrupt('rANS stream length');
	if (r.pos > 8 * bitsLen || 8 * bitsLen - r.pos >= 8) throw corrupt('bit stream length');
	if ((r.pos & 7) && pay[at + bitsLen - 1] >> (r.pos & 7)) throw corrupt('bit stream padding');
	for (let k = 0; k < S; k++) if (r.x[k] !== RANS_L) throw corrupt('final rANS states');
	const f = new Uint32Array(NTOK);
	for (let c = 0; c < NCTX; c++) {
		let tot = 0;
		for (let t = 0; t < NTOK; t++) tot += r.cnt[c * NTOK + t];
		if (!tot || !r.used[c]) { if (tot || r.used[c]) throw corrupt('table of an unused context'); continue; }
		normalize(r.cnt, c * NTOK, tot, f);
		for (let t = 0; t < NTOK; t++) if (f[t] !== r.freq[c * NTOK + t]) throw corrupt('tables are not the counts\' ');
	}
	if (chooseFilter(q, W, pred, ctx, r.narrow()) !== filter) throw corrupt('not the filter the rule picks');
	return q;
}

// ---- seeds ----

const TEXT_SEED = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The 64-bit seed (BigInt) the server uses for seed: a number, a BigInt,
 * a decimal string (0 .. 2^64-1), or a text seed of [A-Za-z0-9_-]{1,64}
 * (not all digits), which is XXH3-64 of its bytes (common/seed.h).
 */
export function seedU64(seed) {
	if (typeof seed === 'bigint' || typeof seed === 'number') {
		const v = BigInt(seed);
		if (v < 0n || v > M64) throw new TileError('ERR_RANGE', `seed ${seed} is not a u64`);
		return v;
	}
	const s = String(seed);
	if (/^[0-9]{1,20}$/.test(s)) {
		const v = BigInt(s);
		if (v > M64) throw new TileError('ERR_RANGE', `seed ${s} is above 2^64-1`);
		return v;
	}
	if (!TEXT_SEED.test(s)) throw new TileError('ERR_INVAL', `seed "${s}" is not a decimal or [A-Za-z0-9_-]{1,64} text seed`);
	return xxh3(new TextEncoder().encode(s));
}

// ---- bundles ----

const BUNDLE_MAGIC = [0x54, 0x52, 0x42, 0x4e]; // "TRBN"
const BUNDLE_HEADER = 16, BUNDLE_ENTRY = 16, BUNDLE_MAX = 4096;

/**
 * Decode a bundle (the batch answer; docs/tile-format.md, "Bundles"):
 * every member decoded and verified as decodeTile() does (options passed
 * on), in index order: [{ cx, cz, tile }]. Throws TileError for a bundle
 * whose magic or version is unknown, that is truncated, whose count is 0
 * or above 4096, whose bodies leave it or overlap the index, or whose
 * member's header names another chunk than its index entry.
 */
export function decodeBundle(input, options = {}) {
	const u8 = input instanceof Uint8Array ? input : new Uint8Array(input);
	if (u8.byteLength < BUNDLE_HEADER) throw new TileError('ERR_TRUNC', `${u8.byteLength} bytes, a bundle header is 16`);
	if (BUNDLE_MAGIC.some((b, i) => u8[i] !== b)) throw new TileError('ERR_MAGIC', 'not a bundle (magic is not TRBN)');
	const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
	const version = dv.getUint16(4, true), count = dv.getUint32(8, true);
	if (version !== 1) throw new TileError('ERR_VERSION', `bundle version ${version}, this decoder reads 1`);
	if (count === 0) throw new TileError('ERR_CORRUPT', 'an empty bundle');
	if (count > BUNDLE_MAX) throw new TileError('ERR_TOOBIG', `${count} tiles, at most ${BUNDLE_MAX}`);
	const indexEnd = BUNDLE_HEADER + BUNDLE_ENTRY * count;
	if (u8.byteLength < indexEnd) throw new TileError('ERR_TRUNC', `the index of ${count} tiles is cut short`);
	const out = [];
	for (let k = 0; k < count; k++) {
		const at = BUNDLE_HEADER + BUNDLE_ENTRY * k;
		const cx = dv.getInt32(at, true), cz = dv.getInt32(at + 4, true);
		const offset = dv.getUint32(at + 8, true), length = dv.getUint32(at + 12, true);
		if (offset < indexEnd || offset + length > u8.byteLength)
			throw new TileError(offset + length > u8.byteLength ? 'ERR_TRUNC' : 'ERR_CORRUPT',
				`tile ${k} (${cx}, ${cz}) at ${offset}+${length} is outside the bundle's bodies`);
		const tile = decodeTile(u8.subarray(offset, offset + length), options);
		if (tile.header.cx !== cx || tile.header.cz !== cz)
			throw new TileError('ERR_MISMATCH', `entry ${k} is (${cx}, ${cz}), its tile (${tile.header.cx}, ${tile.header.cz})`);
		out.push({ cx, cz, tile });
	}
	return out;
}

// ---- the HTTP API ----

const enc = encodeURIComponent;
// layers is a comma-separated list of names (height, material): sent as it is
const query = (gen, layers) => `?gen=${enc(gen ?? 'default')}${layers ? `&layers=${layers}` : ''}`;

/** The URL of one tile: base ('' for the page's own server) + /v1/worlds/... */
export const tileUrl = (base, { seed, gen, lod = 0, cx, cz, layers }) =>
	`${base}/v1/worlds/${enc(String(seed))}/chunks/${lod}/${cx}/${cz}${query(gen, layers)}`;

/** The URL of the bundle of the inclusive rectangle cx0..cx1 x cz0..cz1 (at most 64 tiles). */
export const bundleUrl = (base, { seed, gen, lod = 0, cx0, cz0, cx1, cz1, layers }) =>
	`${base}/v1/worlds/${enc(String(seed))}/chunks/${lod}${query(gen, layers)}&cx0=${cx0}&cz0=${cz0}&cx1=${cx1}&cz1=${cz1}`;

/** The URL of the world's info (fingerprint, LOD range, edit_seq, world_hash). */
export const worldUrl = (base, { seed, gen }) => `${base}/v1/worlds/${enc(String(seed))}${query(gen)}`;

// The body of a response, or a TileError with the server's JSON error.
async function body(res, what) {
	if (!res.ok) {
		let detail = '';
		try {
			const e = await res.json();
			detail = `${e.error}: ${e.detail}`;
		} catch { /* not JSON */ }
		throw Object.assign(new TileError(`HTTP_${res.status}`, `${what}: ${detail || res.statusText}`),
			{ status: res.status, retryAfter: Number(res.headers.get('Retry-After')) || 0 });
	}
	return new Uint8Array(await res.arrayBuffer());
}

// Throw unless header h is the tile (seed, lod, cx, cz) that was asked for.
function expectTile(h, seed, lod, cx, cz) {
	const want = seedU64(seed).toString();
	if (h.seed !== want || h.lod !== lod || h.cx !== cx || h.cz !== cz)
		throw new TileError('ERR_MISMATCH',
			`asked for seed ${want} LOD ${lod} (${cx}, ${cz}), the tile is seed ${h.seed} LOD ${h.lod} (${h.cx}, ${h.cz})`);
}

/**
 * Fetch, decode and verify one tile: what decodeTile() returns, plus etag
 * (the response's ETag) and url. Checks the checksum and that the header
 * names the seed, LOD and chunk asked for (ERR_MISMATCH otherwise); HTTP
 * errors throw TileError with code HTTP_<status> and the server's detail.
 * options: { fetch (default globalThis.fetch), init (fetch's RequestInit:
 * signal, cache, headers...), verify, metres }.
 */
export async function fetchTile(base, tile, options = {}) {
	const f = options.fetch ?? globalThis.fetch, url = tileUrl(base, tile);
	const res = await f(url, options.init);
	const u8 = await body(res, `tile ${tile.lod ?? 0}/${tile.cx}/${tile.cz}`);
	const t = decodeTile(u8, options);
	expectTile(t.header, tile.seed, tile.lod ?? 0, tile.cx, tile.cz);
	return { ...t, etag: res.headers.get('ETag'), url };
}

/**
 * Fetch, decode and verify the tiles of a rectangle (at most 64) as one
 * bundle: a Map from "cx,cz" to what decodeTile() returns. Every chunk of
 * the rectangle must be there once, with the seed and LOD asked for.
 * options as fetchTile().
 */
export async function fetchBundle(base, rect, options = {}) {
	const f = options.fetch ?? globalThis.fetch, lod = rect.lod ?? 0;
	const res = await f(bundleUrl(base, rect), options.init);
	const u8 = await body(res, `bundle ${lod}/${rect.cx0},${rect.cz0}..${rect.cx1},${rect.cz1}`);
	const tiles = new Map();
	for (const { cx, cz, tile } of decodeBundle(u8, options)) {
		if (cx < rect.cx0 || cx > rect.cx1 || cz < rect.cz0 || cz > rect.cz1 || tiles.has(`${cx},${cz}`))
			throw new TileError('ERR_MISMATCH', `the bundle holds (${cx}, ${cz}) twice or outside the rectangle`);
		expectTile(tile.header, rect.seed, lod, cx, cz);
		tiles.set(`${cx},${cz}`, tile);
	}
	const want = (rect.cx1 - rect.cx0 + 1) * (rect.cz1 - rect.cz0 + 1);
	if (tiles.size !== want) throw new TileError('ERR_MISMATCH', `the bundle holds ${tiles.size} tiles, the rectangle ${want}`);
	return tiles;
}

// ---- height arrays and meshes ----

/** The heights of a decoded tile in metres as a Float32Array (or type), side x side, rows of z. */
export function heightArray(tile, type = Float32Array) {
	const { side, quantumUm } = tile.header, q = tile.quanta, out = new type(side * side), s = quantumUm / 1e6;
	for (let k = 0; k < q.length; k++) out[k] = q[k] * s;
	return out;
}

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
export function stitch(tiles, { cx0, cz0, cx1, cz1 }) {
	const byKey = tiles instanceof Map ? tiles : new Map(tiles.map((t) => [`${t.header.cx},${t.header.cz}`, t]));
	const first = byKey.get(`${cx0},${cz0}`);
	if (!first) throw new TileError('ERR_MISMATCH', `no tile (${cx0}, ${cz0})`);
	const { side, lod, chunkLog2 } = first.header, n = side - 1;
	const width = (cx1 - cx0 + 1) * n + 1, height = (cz1 - cz0 + 1) * n + 1;
	const heights = new Float32Array(width * height);
	for (let cz = cz0; cz <= cz1; cz++) {
		for (let cx = cx0; cx <= cx1; cx++) {
			const t = byKey.get(`${cx},${cz}`);
			if (!t) throw new TileError('ERR_MISMATCH', `no tile (${cx}, ${cz})`);
			if (t.header.lod !== lod || t.header.side !== side) throw new TileError('ERR_MISMATCH', `tile (${cx}, ${cz}) is LOD ${t.header.lod}, not ${lod}`);
			const h = heightArray(t), ox = (cx - cx0) * n, oz = (cz - cz0) * n;
			for (let j = 0; j < side; j++) {
				for (let i = 0; i < side; i++) {
					const at = (oz + j) * width + ox + i, v = h[j * side + i];
					// a shared edge sample written by the west or north neighbour
					if ((i === 0 && cx > cx0) || (j === 0 && cz > cz0)) {
						if (heights[at] !== v) throw new TileError('ERR_SEAM', `tiles disagree at (${cx}, ${cz}) sample (${i}, ${j})`);
						continue;
					}
					heights[at] = v;
				}
			}
		}
	}
	const spacing = 2 ** lod, chunk = 2 ** chunkLog2;
	return { width, height, spacing, x0: cx0 * chunk, z0: cz0 * chunk, lod, heights };
}

/**
 * A triangle mesh of a grid (stitch()): positions (x, y, z per sample:
 * world x and z in metres relative to the grid's sample 0, plus offset,
 * y the height times verticalScale), normals (unit, from central
 * differences) and indices (two triangles per cell, counter-clockwise
 * seen from above: three.js's front faces; docs/js-client.md for Babylon.js), as
 * typed arrays for a BufferGeometry or a VertexData.
 * options: { verticalScale = 1, offset: [x, y, z] = [0, 0, 0] }.
 */
export function gridMesh(grid, { verticalScale = 1, offset = [0, 0, 0] } = {}) {
	const { width: W, height: H, spacing: s, heights } = grid;
	const positions = new Float32Array(W * H * 3), normals = new Float32Array(W * H * 3);
	const indices = new Uint32Array((W - 1) * (H - 1) * 6);
	for (let j = 0; j < H; j++) {
		for (let i = 0; i < W; i++) {
			const k = j * W + i, y = heights[k] * verticalScale;
			positions[3 * k] = i * s + offset[0];
			positions[3 * k + 1] = y + offset[1];
			positions[3 * k + 2] = j * s + offset[2];
			const hx = (heights[j * W + Math.min(W - 1, i + 1)] - heights[j * W + Math.max(0, i - 1)]) * verticalScale;
			const hz = (heights[Math.min(H - 1, j + 1) * W + i] - heights[Math.max(0, j - 1) * W + i]) * verticalScale;
			const dx = (Math.min(W - 1, i + 1) - Math.max(0, i - 1)) * s, dz = (Math.min(H - 1, j + 1) - Math.max(0, j - 1)) * s;
			const nx = -hx / dx, nz = -hz / dz, l = Math.hypot(nx, 1, nz);
			normals[3 * k] = nx / l;
			normals[3 * k + 1] = 1 / l;
			normals[3 * k + 2] = nz / l;
		}
	}
	let o = 0;
	for (let j = 0; j + 1 < H; j++) {
		for (let i = 0; i + 1 < W; i++) {
			const a = j * W + i, b = a + 1, c = a + W, d = c + 1;
			// seen from +y with x east and z south, a b / c d is clockwise
			// as a, b, d: so a, c, b and b, c, d are counter-clockwise
			indices[o++] = a; indices[o++] = c; indices[o++] = b;
			indices[o++] = b; indices[o++] = c; indices[o++] = d;
		}
	}
	return { positions, normals, indices };
}

/** The chunks of the square ring of radius r around (cx, cz): (2r + 1)^2 of them, as a rectangle. */
export const ringRect = (cx, cz, r) => ({ cx0: cx - r, cz0: cz - r, cx1: cx + r, cz1: cz + r });
