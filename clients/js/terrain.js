// terrain.js - the JavaScript client of the terrain chunk server, as one ES
// module with no dependencies: fetch a tile or a bundle, decode it (the
// tile format, versions 1 to 8: heights, coded (tANS in 7 and 8, rANS
// in 3 to 6) or as byte planes (1 and 2), and the material layer;
// docs/tile-format.md), verify it (XXH3-64 checksum, and that the header
// names what was asked for), and build height arrays and meshes that
// three.js, Babylon.js or a physics engine take as they are; and post
// edits that are applied exactly once however often they are retried
// (postEdits).
//
// The server's map viewer imports this very file (served as
// /assets/terrain.js); a web game can import it from there, or copy it, or
// install the npm package terrain-chunk-client (clients/js/package.json:
// this file, terrain.wasm and the TypeScript declarations terrain.d.ts,
// which must follow every change of an export here).
// Runs in pages, workers and Node.js 18+ (fetch). docs/js-client.md.
//
//   import { fetchBundle, stitch, gridMesh } from 'terrain-chunk-client';
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

/* The high 32 bits of the 64-bit product of u32 a and b (the low ones are
 * Math.imul(a, b) >>> 0), by 16-bit parts in integer operations. */
function mulHi(a, b) {
	const a0 = a & 0xFFFF, a1 = a >>> 16, b0 = b & 0xFFFF, b1 = b >>> 16;
	const p01 = a0 * b1, p10 = a1 * b0;
	const mid = ((a0 * b0) >>> 16) + (p01 & 0xFFFF) + (p10 & 0xFFFF);
	return (a1 * b1 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16)) >>> 0;
}

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
		// acc[i] += klo * khi (32 x 32 -> 64)
		const lo = Math.imul(klo, khi) >>> 0, hi = mulHi(klo, khi);
		t = acc[2 * i] + lo;
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
		acc[2 * i] = Math.imul(lo, P32_1);
		acc[2 * i + 1] = mulHi(lo, P32_1) + Math.imul(hi, P32_1);
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
	if (h.version < 1 || h.version > 8) throw new TileError('ERR_VERSION', `version ${h.version}, this decoder reads 1 to 8`);
	h.coded = h.version >= 3;
	h.states = h.version >= 5 ? 8 : 2;   // interleaved states of the coded form
	h.tans = h.version >= 7;             // its coder: tANS (7, 8) or rANS (3 to 6)
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
 * materials: Uint8Array of side*side material ids (versions 2, 4, 6, 8) or null }.
 * Throws TileError with the reference decoder's code, checks in its order.
 * verify: check the XXH3 checksum (default true).
 */
export function decodeTile(input, { verify = true, metres = true, wasm = true } = {}) {
	const u8 = input instanceof Uint8Array ? input : new Uint8Array(input);
	if (core && wasm && verify) return withMetres(wasmDecode(u8), metres); // the fast path (loadWasm)
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
	const q = !h.coded ? decodePlanes(pay, W, P, h.offset)
		: h.tans ? decodeTans(pay.subarray(0, 4 + h.codedLen), W, h.filter, h.offset)
		: decodeCoded(pay.subarray(0, 4 + h.codedLen), W, h.filter, h.offset, h.states);
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

// ---- versions 3 to 8: coded heights (filters 2 and 3) ----
// The arithmetic follows docs/tile-format.md, "Coded payload": predictions
// are exact integers below 2^37 in doubles, heights wrap through | 0.
// Versions 3 to 6 code the tokens by rANS (CodedReader), 7 and 8 by tANS
// (TansReader); the model (orders, predictions, contexts, tables, extra
// bits) is the same. Speed: typed-array tables indexed by (context,
// token), filter 2 a whole line at a time (predictions and contexts, then
// its samples), no closure or allocation per sample.

const NTOK = 72, NCTX = 16, NIX = NCTX * NTOK, PROB_BITS = 10, PROB_M = 1 << PROB_BITS, RANS_L = 65536, ZSAT = 1 << 24, CTX_CORNER = 15, NARROW = 1 << 25;
const LINE_CUBIC = 0, LINE_LINEAR = 1, LINE_EDGES = 2;
const TOK_NB = new Uint8Array(NTOK);
for (let t = 16; t < NTOK; t++) TOK_NB[t] = ((t - 16) >> 1) + 3;
const corrupt = (why) => new TileError('ERR_CORRUPT', why);
const zigzag = (r) => ((r << 1) ^ (r >> 31)) >>> 0;
const blen = (v) => (v < 4294967296 ? 32 - Math.clz32(v) : 64 - Math.clz32(Math.floor(v / 4294967296)));
const blen32 = (v) => 32 - Math.clz32(v);

const hierCtx = (b, d) => (d === 1 ? (b < 10 ? b : 10) : d === 2 ? 11 + Math.min(b >> 2, 2) : 14);
// the same as tables of 32 - b: HIER_CTX[d] for d = 1, 2 and 4 (any d >= 4)
const HIER_CTX = [0, 1, 2, 4, 4].map((d) => Uint8Array.from({ length: 33 }, (_, c) => hierCtx(32 - c, d)));

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
	const o3 = 3 * off, cb = HIER_CTX[d < 4 ? d : 4];
	for (let m = m0, k = o + m0 * st; m < m1; m++, k += st) {
		const a0 = (q[k - o3] - base) | 0, a1 = (q[k - off] - base) | 0, a2 = (q[k + off] - base) | 0, a3 = (q[k + o3] - base) | 0;
		pred[m] = (base + ((9 * (a1 + a2) - a0 - a3 + 8) >> 4)) | 0;
		ctx[m] = cb[Math.clz32(Math.abs(a0 + a3 - a1 - a2))];
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

/* lineBits() of the line hierLine(q, o, st, off, n, kind, d, ...)
 * predicts. narrow: the cubic samples' sums in int32 relative to q[0], as
 * in hierLine, and no contexts. */
function hierLineBits(q, o, st, off, n, kind, d, pred, ctx, narrow) {
	if (!narrow || kind === LINE_LINEAR || n < 3) {
		hierLine(q, o, st, off, n, kind, d, pred, ctx, narrow, q[0]);
		return lineBits(q, o, st, n, pred);
	}
	let bits = 0, m0 = 0, m1 = n;
	if (kind === LINE_EDGES) {
		hierOne(q, o, off, false, d, pred, ctx, 0);
		hierOne(q, o + (n - 1) * st, off, false, d, pred, ctx, 1);
		bits = lineBits(q, o, (n - 1) * st, 2, pred);
		m0 = 1;
		m1 = n - 1;
	}
	const base = q[0], o3 = 3 * off;
	for (let m = m0, k = o + m0 * st; m < m1; m++, k += st) {
		const a0 = (q[k - o3] - base) | 0, a1 = (q[k - off] - base) | 0, a2 = (q[k + off] - base) | 0, a3 = (q[k + o3] - base) | 0;
		const r = (q[k] - base - ((9 * (a1 + a2) - a0 - a3 + 8) >> 4)) | 0;
		bits += 32 - Math.clz32((r << 1) ^ (r >> 31));
	}
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
		bits += hierLineBits(q, j * W, 2 * dr, dr * W, n, j >= 3 * dr && j + 3 * dr < W ? LINE_CUBIC : LINE_LINEAR, dr, pred, ctx, narrow);
	}
	for (let d = 1; d <= dr; d *= 2)
		bits += hierLineBits(q, j * W + d, 2 * d, d, s / (2 * d), LINE_EDGES, d, pred, ctx, narrow);
	return bits;
}

/* Filter 3's bits over row j. narrow: as hierLine's, the sums relative
 * to q[0] in int32 (below 2^29). */
function causalRowBits(q, W, j, narrow) {
	let bits = 0, i = j ? 0 : 1;
	if (narrow && j >= 2) {
		const base = q[0], o = j * W;
		for (; i < 2; i++) bits += blen32(zigzag((q[o + i] - causalPred(q, W, i, j)) | 0));
		for (let k = o + 2; k < o + W; k++) {
			const n = (q[k - W] - base) | 0, w = (q[k - 1] - base) | 0, nw = (q[k - W - 1] - base) | 0;
			const ww = (q[k - 2] - base) | 0, nww = (q[k - W - 2] - base) | 0, nn = (q[k - 2 * W] - base) | 0;
			const r = (q[k] - base - ((3 * (n + w) - 4 * nw - ww + nww - nn + (q[k - 2 * W - 1] - base)) >> 1)) | 0;
			bits += 32 - Math.clz32((r << 1) ^ (r >> 31));
		}
		return bits;
	}
	for (; i < W; i++) bits += blen32(zigzag((q[j * W + i] - causalPred(q, W, i, j)) | 0));
	return bits;
}

/* The filter the rule picks for heights q. */
function chooseFilter(q, W, pred, ctx, narrow) {
	let jh = 0, jc = 0;
	for (let j = 0; j < W; j += (j & 31) === 3 ? 29 : 1) {
		jh += hierRowBits(q, W, j, pred, ctx, narrow);
		jc += causalRowBits(q, W, j, narrow);
	}
	return jh <= jc ? 2 : 3;
}

/* The moving parts of the decoder, copied into locals by each loop. */
class CodedReader {
	/* The bit stream is pay[at .. at + bitsLen), after `front` zero words
	 * (tANS reads backwards from the end: see TansReader). */
	constructor(pay, bitsLen, S, offset, at = 8, front = 0) {
		this.pay = pay;
		// the bit stream as 32-bit little-endian words, zero-padded
		const nw = front + ((bitsLen + 3) >> 2) + 2, words = new Uint32Array(nw), end = at + bitsLen;
		let i = at, w = front;
		for (; i + 4 <= end; i += 4, w++) words[w] = pay[i] | pay[i + 1] << 8 | pay[i + 2] << 16 | pay[i + 3] << 24;
		for (let sh = 0; i < end; i++, sh += 8) words[w] |= pay[i] << sh;
		this.words = words;
		this.bitsLen = bitsLen;
		this.pos = 32 * front;   // bit position in words
		this.start = 32 * front;
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
		// tables, indexed by context * NTOK + token (sym and fq: rANS's, tables())
		this.sym = null;                     // the token of each slot, by context * PROB_M + slot
		this.fq = null;                      // freq | cum << 16
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

	/* Read the frequency tables and the zero bits after them; with rans,
	 * rANS's look-ups too. */
	tables(rans = true) {
		if (rans) {
			this.sym = new Uint8Array(NCTX * PROB_M);
			this.fq = new Int32Array(NIX);
		}
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
			for (let t = 0; t < NTOK; t++) {
				this.base[o + t] = t < 16 ? t : (2 | (t & 1)) << TOK_NB[t];
				this.nb[o + t] = TOK_NB[t];
			}
			if (!rans) continue;
			for (let t = 0, s = 0; t < NTOK; s += f[o + t], t++) {
				this.fq[o + t] = f[o + t] | s << 16;
				this.sym.fill(t, c * PROB_M + s, c * PROB_M + s + f[o + t]);
			}
		}
		if (this.get((8 - (this.pos & 7)) & 7)) throw corrupt('table padding');
		if (this.pos - this.start > 8 * this.bitsLen) throw corrupt('bit stream length');
	}

	/* A line of filter 2 (hierLine's arguments): its predictions and
	 * contexts, then its samples. */
	line(q, o, st, off, n, kind, d, pred, ctx) {
		hierLine(q, o, st, off, n, kind, d, pred, ctx, this.narrow(), q[0]);
		this.run(q, o, st, n, pred, ctx);
	}

	/* Row j of filter 3: sample (i, j) in the context of the saturated z of
	 * its neighbours, up[i + 1 .. i + 3] and cur[i], cur[i + 1] (cur[i + 2]
	 * becomes its own), with the causal prediction. */
	causalRow(q, W, j, up, cur, pred, ctx) {
		for (let i = j ? 0 : 1; i < W; i++) {
			const a = 4 * cur[i + 1] + cur[i] + 2 * up[i + 2] + up[i + 1] + up[i + 3];
			const b = blen32(a >>> 2);
			ctx[0] = b < 15 ? b : 15;
			pred[0] = causalPred(q, W, i, j);
			cur[i + 2] = Math.min(this.run(q, j * W + i, 1, 1, pred, ctx) >>> 0, ZSAT);
		}
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
		for (let j = d; j < W; j += s)
			r.line(q, j * W, s, d * W, n, j >= 3 * d && j + 3 * d < W ? LINE_CUBIC : LINE_LINEAR, d, pred, ctx);
		n = (W - 1) / s;
		for (let j = 0; j < W; j += d)
			r.line(q, j * W + d, s, d, n, LINE_EDGES, d, pred, ctx);
	}
}

/* Filter 3, backwards: raster order, each sample's context from the
 * saturated z of its neighbours (rows padded with zeros: two before, one
 * after). */
function causalInverse(r, q, W, pred, ctx) {
	let up = new Uint32Array(W + 3), cur = new Uint32Array(W + 3);
	for (let j = 0; j < W; j++) {
		r.causalRow(q, W, j, up, cur, pred, ctx);
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
	checkModel(r, q, W, filter, pred, ctx);
	return q;
}

/* The canonical form's checks on the model, after the coder's own: the
 * tables are those the counts of r normalise to, and the filter is the
 * one the rule picks for the heights q. */
function checkModel(r, q, W, filter, pred, ctx) {
	const f = new Uint32Array(NTOK);
	for (let c = 0; c < NCTX; c++) {
		let tot = 0;
		for (let t = 0; t < NTOK; t++) tot += r.cnt[c * NTOK + t];
		if (!tot || !r.used[c]) { if (tot || r.used[c]) throw corrupt('table of an unused context'); continue; }
		normalize(r.cnt, c * NTOK, tot, f);
		for (let t = 0; t < NTOK; t++) if (f[t] !== r.freq[c * NTOK + t]) throw corrupt('tables are not the counts\' ');
	}
	if (chooseFilter(q, W, pred, ctx, r.narrow()) !== filter) throw corrupt('not the filter the rule picks');
}

// ---- versions 7 and 8: tANS ----
// docs/tile-format.md, "Versions 7 and 8: tANS"; common/tilecode_dec.c,
// decode_tans(). The payload after coded_len is the tables, then a bit
// stream read backwards from its end mark: 8 states of 10 bits, then for
// each sample one look-up of (context, state) and one read of the state's
// bits with the token's extra bits above them. Positions here are bits of
// TansReader's words, which hold the payload after TANS_FRONT zero words,
// so that a 32-bit window ending at any position of the stream, or 40 bits
// below its start, is still inside them.

const TANS_STATES = 8, TANS_FRONT = 2, TANS_MIN_STREAM = (TANS_STATES * PROB_BITS + 1 + 7) >> 3;

/* The 32 bits of words below bit p (p >= 32), bit 31 the one at p - 1. */
const window32 = (w, p) => {
	const i = (p >>> 5) - 1, sh = p & 31;
	return (w[i] >>> sh) | ((w[i + 1] << 1) << (31 - sh));
};

class TansReader extends CodedReader {
	constructor(pay, len, offset) {
		super(pay, len, TANS_STATES, offset, 4, TANS_FRONT);
		// the decoding entry of each (context, state): see tansTables()
		this.dt = new Int32Array(NCTX << PROB_BITS);
		this.lo = 0;         // the stream's first bit
		this.bad = false;    // a read went below it
		this.ws = 0;         // wide()'s next state
	}

	/*
	 * The entry of state s of context c: base | bits << 10 | (c * NTOK +
	 * token) << 14 | (bits + extra bits) << 25 (at most 40: 6 bits). Token t
	 * owns the states cum .. cum + f - 1 in order; the k-th stands for
	 * y = f + k, from which the encoder wrote bits = 11 - blen(y) bits of the
	 * state before, which was (y << bits) - 1024 + those bits: base =
	 * (y << bits) - 1024. An unused context decodes token 0 from any state,
	 * reading nothing (and then fails the count check), as the C decoder.
	 */
	tansTables() {
		const dt = this.dt, freq = this.freq;
		for (let c = 0; c < NCTX; c++) {
			let e = c << PROB_BITS;
			const o = c * NTOK;
			if (!this.used[c]) {
				for (let u = 0; u < PROB_M; u++) dt[e++] = u | o << 14;
				continue;
			}
			for (let t = 0; t < NTOK; t++) {
				const f = freq[o + t], tag = (o + t) << 14 | TOK_NB[t] << 25;
				// in runs of one bit count: y up to the next power of two
				for (let y = f; y < 2 * f;) {
					const bits = PROB_BITS + 1 - blen32(y), stop = Math.min(2 * f, 1 << (PROB_BITS + 1 - bits));
					for (let v = ((y << bits) - PROB_M) | bits << 10 | tag + (bits << 25); y < stop; y++, v += 1 << bits) dt[e++] = v;
				}
			}
		}
	}

	/* nb <= 31 bits below the position, which moves down; below the
	 * stream's first bit it stops there and the stream is bad. */
	down(nb) {
		const v = (window32(this.words, this.pos) >>> 1) >>> (31 - nb);
		this.pos -= nb;
		if (this.pos < this.lo) { this.bad = true; this.pos = this.lo; }
		return v;
	}

	/* A sample of entry e whose bits are 32 to 40 (rare: a residual of 2^22
	 * or more): its extra bits, then its state's; returns its z, and its
	 * next state in this.ws. */
	wide(e) {
		const nbs = (e >>> 10) & 15, z = this.base[(e >>> 14) & 2047] | this.down((e >>> 25) - nbs);
		this.ws = (e & (PROB_M - 1)) + this.down(nbs);
		return z;
	}

	// The loops below decode a sample each as docs/tile-format.md says, in
	// 32-bit integer operations: its entry e from its context and state
	// x[j]; when its bits (nt = e >>> 25) are at most 31, one read of the 32
	// bits below the position p (two words), the state's bits the low nbs
	// of them, the extra bits above; else wide(). They keep the position,
	// the state index and the OR of the heights (narrow()) in locals.

	/* Decode n samples as CodedReader.run: sample m in context ctx[m]
	 * becomes pred[m] + unzigzag(z) at q[o + m * st]. Returns the z of the
	 * last one (as int32 bits). */
	run(q, o, st, n, pred, ctx) {
		const x = this.x, dt = this.dt, zb = this.base, cnt = this.cnt, w = this.words, lo = this.lo, add = this.add;
		let j = this.j, p = this.pos, acc = this.acc, z = 0;
		for (let m = 0, k = o; m < n; m++, k += st) {
			const e = dt[ctx[m] << PROB_BITS | x[j]], nt = e >>> 25;
			if (nt < 32) {
				const wi = (p >>> 5) - 1, sh = p & 31, nbs = (e >>> 10) & 15;
				const v = (((w[wi] >>> sh) | ((w[wi + 1] << 1) << (31 - sh))) >>> 1) >>> (31 - nt);
				p -= nt;
				x[j] = (e & (PROB_M - 1)) + (v & ((1 << nbs) - 1));
				z = zb[(e >>> 14) & 2047] | (v >>> nbs);
			} else {
				this.pos = p;
				z = this.wide(e);
				x[j] = this.ws;
				p = this.pos;
			}
			if (p < lo) { this.bad = true; p = lo; }
			j = (j + 1) & (TANS_STATES - 1);
			cnt[(e >>> 14) & 2047]++;
			const h = (pred[m] + ((z >>> 1) ^ -(z & 1))) | 0;
			q[k] = h;
			acc |= (h + add) | 0;
		}
		this.j = j;
		this.pos = p;
		this.acc = acc;
		return z;
	}

	/* A line of filter 2 as CodedReader.line; the cubic samples of narrow
	 * heights (most of them) by cubic(). */
	line(q, o, st, off, n, kind, d, pred, ctx) {
		if (kind === LINE_LINEAR || n < 3 || !this.narrow()) {
			super.line(q, o, st, off, n, kind, d, pred, ctx);
		} else if (kind === LINE_CUBIC) {
			this.cubic(q, o, st, off, n, HIER_CTX[d < 4 ? d : 4]);
		} else {   // LINE_EDGES: the first and the last linear
			const e = o + (n - 1) * st;
			hierOne(q, o, off, false, d, pred, ctx, 0);
			this.run(q, o, st, 1, pred, ctx);
			this.cubic(q, o + st, st, off, n - 2, HIER_CTX[d < 4 ? d : 4]);
			hierOne(q, e, off, false, d, pred, ctx, 0);
			this.run(q, e, st, 1, pred, ctx);
		}
	}

	/* n samples at q[o + m * st] of filter 2, narrow heights: each the
	 * cubic prediction of hierLine()'s narrow loop from q[k -+ off] and
	 * q[k -+ 3 off], in context cb[32 - b] (HIER_CTX[d]), plus its
	 * residual. Most of a tile's samples pass here. */
	cubic(q, o, st, off, n, cb) {
		const x = this.x, dt = this.dt, zb = this.base, cnt = this.cnt, w = this.words, lo = this.lo, add = this.add;
		const base = q[0], o3 = 3 * off;
		let j = this.j, p = this.pos, acc = this.acc;
		for (let m = 0, k = o; m < n; m++, k += st) {
			const a0 = (q[k - o3] - base) | 0, a1 = (q[k - off] - base) | 0, a2 = (q[k + off] - base) | 0, a3 = (q[k + o3] - base) | 0;
			const e = dt[cb[Math.clz32(Math.abs(a0 + a3 - a1 - a2))] << PROB_BITS | x[j]], nt = e >>> 25;
			let z;
			if (nt < 32) {
				const wi = (p >>> 5) - 1, sh = p & 31, nbs = (e >>> 10) & 15;
				const v = (((w[wi] >>> sh) | ((w[wi + 1] << 1) << (31 - sh))) >>> 1) >>> (31 - nt);
				p -= nt;
				x[j] = (e & (PROB_M - 1)) + (v & ((1 << nbs) - 1));
				z = zb[(e >>> 14) & 2047] | (v >>> nbs);
			} else {
				this.pos = p;
				z = this.wide(e);
				x[j] = this.ws;
				p = this.pos;
			}
			if (p < lo) { this.bad = true; p = lo; }
			j = (j + 1) & (TANS_STATES - 1);
			cnt[(e >>> 14) & 2047]++;
			const h = (base + ((9 * (a1 + a2) - a0 - a3 + 8) >> 4) + ((z >>> 1) ^ -(z & 1))) | 0;
			q[k] = h;
			acc |= (h + add) | 0;
		}
		this.j = j;
		this.pos = p;
		this.acc = acc;
	}

	/* Row j of filter 3 (causalInverse's arguments): each sample's context
	 * from the saturated z of its neighbours, its prediction, its residual. */
	causalRow(q, W, j, up, cur) {
		const x = this.x, dt = this.dt, zb = this.base, cnt = this.cnt, w = this.words, lo = this.lo, add = this.add;
		let s = this.j, p = this.pos, acc = this.acc;
		for (let i = j ? 0 : 1, k = j * W + i; i < W; i++, k++) {
			const a = 4 * cur[i + 1] + cur[i] + 2 * up[i + 2] + up[i + 1] + up[i + 3], b = blen32(a >>> 2);
			const pr = i < 2 || j < 2 ? causalPred(q, W, i, j)
				: Math.floor((3 * (q[k - W] + q[k - 1]) - 4 * q[k - W - 1] - q[k - 2] + q[k - W - 2] - q[k - 2 * W] + q[k - 2 * W - 1]) / 2);
			const e = dt[(b < 15 ? b : 15) << PROB_BITS | x[s]], nt = e >>> 25;
			let z;
			if (nt < 32) {
				const wi = (p >>> 5) - 1, sh = p & 31, nbs = (e >>> 10) & 15;
				const v = (((w[wi] >>> sh) | ((w[wi + 1] << 1) << (31 - sh))) >>> 1) >>> (31 - nt);
				p -= nt;
				x[s] = (e & (PROB_M - 1)) + (v & ((1 << nbs) - 1));
				z = zb[(e >>> 14) & 2047] | (v >>> nbs);
			} else {
				this.pos = p;
				z = this.wide(e);
				x[s] = this.ws;
				p = this.pos;
			}
			if (p < lo) { this.bad = true; p = lo; }
			s = (s + 1) & (TANS_STATES - 1);
			cnt[(e >>> 14) & 2047]++;
			const h = (pr + ((z >>> 1) ^ -(z & 1))) | 0;
			q[k] = h;
			acc |= (h + add) | 0;
			cur[i + 2] = (z >>> 0) < ZSAT ? z >>> 0 : ZSAT;
		}
		this.j = s;
		this.pos = p;
		this.acc = acc;
	}
}

/* Versions 7 and 8: pay is the u32 coded_len and the coded_len bytes after
 * it. The checks and their order are decode_tans()'s. */
function decodeTans(pay, W, filter, offset) {
	const N = W * W, len = pay.byteLength - 4;
	if (len < 2 + TANS_MIN_STREAM || !pay[3 + len]) throw corrupt('tANS stream end');
	const r = new TansReader(pay, len, offset);
	r.tables(false);
	const lo = r.pos;   // a whole byte: the stream's first bit
	if ((lo - r.start) / 8 + TANS_MIN_STREAM > len) throw corrupt('tANS stream length');
	r.tansTables();
	// the end mark: the highest set bit of the last byte; the states below it
	r.lo = 0;
	r.pos = r.start + 8 * (len - 1) + blen32(pay[3 + len]) - 1;
	for (let k = 0; k < TANS_STATES; k++) r.x[k] = r.down(PROB_BITS);
	if (r.pos < lo) throw corrupt('tANS stream length');
	r.lo = lo;
	const q = new Int32Array(N), pred = new Int32Array(W), ctx = new Uint8Array(W);
	q[0] = offset;
	if (filter === 2) hierInverse(r, q, W, pred, ctx);
	else causalInverse(r, q, W, pred, ctx);
	// canonical: the stream used up exactly, every state back at 0, the
	// tables from the counts, and the filter the rule picks
	if (r.bad || r.pos !== lo) throw corrupt('tANS stream length');
	for (let k = 0; k < TANS_STATES; k++) if (r.x[k] !== 0) throw corrupt('final tANS states');
	checkModel(r, q, W, filter, pred, ctx);
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

// ---- edits, applied exactly once (docs/edits.md, issue 35) ----

/** The URL that takes edits: POST {"edits": [...]}. */
export const editsUrl = (base, { seed, gen }) => `${base}/v1/worlds/${enc(String(seed))}/edits${query(gen)}`;

/** A fresh Idempotency-Key: 128 random bits (crypto.getRandomValues) as 32 lowercase hex digits. */
export function newEditKey() {
	return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

// Answers worth another attempt with the same key: 'retry' when the batch
// certainly was not applied, 'unknown' when it may have been.
const RETRYABLE = { 503: 'retry', 429: 'retry', 409: 'unknown', 502: 'unknown', 504: 'unknown' };
const EDIT_BACKOFF_MS = 100, EDIT_BACKOFF_MAX_MS = 2000, RETRY_AFTER_MAX_S = 300;

// Resolve after ms, or reject with signal's reason when it aborts first.
const pause = (ms, signal) => new Promise((resolve, reject) => {
	if (signal?.aborted) return reject(signal.reason);
	const stop = () => { clearTimeout(t); reject(signal.reason); };
	const t = setTimeout(() => { signal?.removeEventListener('abort', stop); resolve(); }, ms);
	signal?.addEventListener('abort', stop, { once: true });
});

// One POST with its own timeout: { res, text } or { error } (no answer, or
// the body cut short); the caller's signal rejects with its reason.
async function postOnce(f, url, init, timeoutMs, signal) {
	const ctrl = new AbortController(), stop = () => ctrl.abort(signal.reason);
	const timer = setTimeout(() => ctrl.abort(new TileError('ERR_TIMEOUT', `no answer in ${timeoutMs} ms`)), timeoutMs);
	signal?.addEventListener('abort', stop, { once: true });
	try {
		const res = await f(url, { ...init, signal: ctrl.signal });
		return { res, text: await res.text() };
	} catch (error) {
		if (signal?.aborted) throw signal.reason;
		return { error: ctrl.signal.aborted ? ctrl.signal.reason : error };
	} finally {
		clearTimeout(timer);
		signal?.removeEventListener('abort', stop);
	}
}

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
export async function postEdits(base, world, edits, options = {}) {
	return postKeyed(editsUrl(base, world), { edits }, 'edits', 'the edits', options);
}

/** The URL that takes reverts and undos: POST a filter or {"undo": SEQ}. */
export const revertsUrl = (base, { seed, gen }) => `${base}/v1/worlds/${enc(String(seed))}/reverts${query(gen)}`;

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
export async function postReverts(base, world, filter, options = {}) {
	return postKeyed(revertsUrl(base, world), filter, 'reverts', 'the revert', options);
}

// postEdits() and postReverts(): POST payload to url with one
// Idempotency-Key over every attempt; what names the route in messages,
// thing what may have been applied.
async function postKeyed(url, payload, what, thing, {
	token, key = newEditKey(), attempts = 8, timeoutMs = 10000, fetch: f = globalThis.fetch, signal, onRetry,
} = {}) {
	const headers = { 'Content-Type': 'application/json', 'Idempotency-Key': `"${key}"` };
	if (token) headers.Authorization = `Bearer ${token}`;
	const init = { method: 'POST', headers, body: JSON.stringify(payload), cache: 'no-store' };
	let unknown = false;
	for (let n = 1; ; n++) {
		signal?.throwIfAborted();
		const { res, text, error } = await postOnce(f, url, init, timeoutMs, signal);
		let body = null;
		try { body = JSON.parse(text); } catch { /* no answer, or not JSON */ }
		if (res?.ok && body)
			return { ...body, attempts: n, key, replay: body.replay === true || res.headers.get('Idempotent-Replayed') === 'true' };
		// nothing was sent when the connection was refused (Node.js says so; browsers do not)
		let verdict = error ? (error.cause?.code === 'ECONNREFUSED' ? 'retry' : 'unknown') :
			res.ok ? 'unknown' : RETRYABLE[res.status] ?? 'stop';
		// a revert's own 409 (an undo of a revert undone already) is an answer
		if (res?.status === 409 && what === 'reverts' && typeof body?.detail === 'string' &&
			!body.detail.startsWith('idempotency-key')) verdict = 'stop';
		unknown ||= verdict === 'unknown';
		const last = error ? `no answer (${error.message}${error.cause?.message ? `: ${error.cause.message}` : ''})` :
			res.ok ? `HTTP ${res.status}: not the answer JSON expected` :
			`HTTP ${res.status}${body?.error ? `: ${body.error}: ${body.detail}` : ''}`;
		if (verdict === 'stop' || n >= attempts) {
			const why = verdict === 'stop' ? `${last}${n > 1 ? ` (attempt ${n})` : ''}` :
				`gave up after ${n} attempt${n > 1 ? 's' : ''}; the last: ${last}`;
			const outcome = unknown ? `; the outcome is unknown: ${thing} may or may not have been applied; post ${what === 'edits' ? 'them' : 'it'} again with key ${key} to apply ${what === 'edits' ? 'them' : 'it'} once and learn the outcome` :
				verdict === 'stop' ? '' : `; ${thing} ${what === 'edits' ? 'were' : 'was'} not applied`;
			throw Object.assign(new TileError(res ? `HTTP_${res.status}` : 'ERR_IO', `POST ${what}: ${why}${outcome}`),
				{ status: res?.status ?? 0, body, attempts: n, key, unknown });
		}
		const after = res && /^\d+$/.test(res.headers.get('Retry-After') ?? '') ?
			Math.min(Number(res.headers.get('Retry-After')), RETRY_AFTER_MAX_S) * 1000 : -1;
		const d = Math.min(EDIT_BACKOFF_MS * 2 ** (n - 1), EDIT_BACKOFF_MAX_MS);
		const delayMs = after >= 0 ? after : Math.round(d / 2 + Math.random() * d / 2);
		onRetry?.({ attempt: n + 1, attempts, delayMs, status: res?.status ?? 0, unknown: verdict === 'unknown' });
		await pause(delayMs, signal);
	}
}

/**
 * The edits whose brush covers the point (x, z) metres of the world
 * { seed, gen }, newest first (docs/edits.md, "Lookups"): the answer of
 * GET .../edits?x=&z= ({ seq, world_hash, edits: [{ seq, op, ..., author,
 * time, reverted? }], next? }); pass next as before for the page after.
 * options: { before, limit, author, fetch, init }.
 */
export async function lookupEdits(base, { seed, gen }, x, z, { before, limit, author, fetch: f = globalThis.fetch, init } = {}) {
	const p = new URLSearchParams({ gen: gen ?? 'default', x: String(x), z: String(z) });
	if (before) p.set('before', String(before));
	if (limit) p.set('limit', String(limit));
	if (author) p.set('author', author);
	const res = await f(`${base}/v1/worlds/${enc(String(seed))}/edits?${p}`, { cache: 'no-store', ...init });
	let body = null;
	try { body = await res.json(); } catch { /* not JSON */ }
	if (!res.ok || !body)
		throw Object.assign(new TileError(`HTTP_${res.status}`, `lookup at ${x}, ${z}: ${body?.error ? `${body.error}: ${body.detail}` : res.statusText || 'not JSON'}`),
			{ status: res.status, body });
	return body;
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
export function gridMesh(grid, { verticalScale = 1, offset = [0, 0, 0], skirt = 0 } = {}) {
	const { width: W, height: H, spacing: s, heights } = grid;
	const edge = skirt > 0 ? 2 * (W + H) : 0;   // samples along the four sides
	const positions = new Float32Array((W * H + 2 * edge) * 3), normals = new Float32Array((W * H + 2 * edge) * 3);
	const indices = new Uint32Array(((W - 1) * (H - 1) + (skirt > 0 ? 2 * (W - 1) + 2 * (H - 1) : 0)) * 6);
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
	if (skirt > 0) skirtWalls(grid, verticalScale, offset, skirt, positions, normals, indices, o);
	return { positions, normals, indices, skirtStart: W * H };
}

/* gridMesh()'s walls: for each side, its edge samples in order of i (or
 * j), a top vertex (the sample) and a bottom one (the base) each. */
function skirtWalls({ width: W, height: H, heights }, vs, offset, skirt, positions, normals, indices, o) {
	let lo = Infinity;
	for (const h of heights) lo = Math.min(lo, h);
	const base = (lo - skirt) * vs + offset[1];
	// [first sample, step between samples, count, outward normal (x, z),
	// whether walking along the side goes right to left seen from outside]
	const sides = [
		[0, 1, W, 0, -1, true],                   // north (j = 0): -z
		[(H - 1) * W, 1, W, 0, 1, false],         // south: +z
		[0, W, H, -1, 0, false],                  // west (i = 0): -x
		[W - 1, W, H, 1, 0, true],                // east: +x
	];
	let v = W * H;
	for (const [first, step, n, ox, oz, reversed] of sides) {
		const v0 = v;
		for (let t = 0; t < n; t++, v += 2) {
			const k = first + t * step;
			for (const [w, y] of [[v, positions[3 * k + 1]], [v + 1, base]]) {
				positions[3 * w] = positions[3 * k];
				positions[3 * w + 1] = y;
				positions[3 * w + 2] = positions[3 * k + 2];
				normals[3 * w] = ox;
				normals[3 * w + 1] = 0;
				normals[3 * w + 2] = oz;
			}
		}
		for (let t = 0; t + 1 < n; t++) {
			// top T, bottom B of samples t and t + 1: B0 B1 T1 is
			// counter-clockwise seen from outside when t grows to the right
			const T0 = v0 + 2 * t, B0 = T0 + 1, T1 = T0 + 2, B1 = T0 + 3;
			const tri = reversed ? [B0, T1, B1, B0, T0, T1] : [B0, B1, T1, B0, T1, T0];
			for (const x of tri) indices[o++] = x;
		}
	}
}

/** The chunks of the square ring of radius r around (cx, cz): (2r + 1)^2 of them, as a rectangle. */
export const ringRect = (cx, cz, r) => ({ cx0: cx - r, cz0: cz - r, cx1: cx + r, cz1: cz + r });

// ---- WebAssembly: the core itself, in the page (docs/library.md) ----
// terrain.wasm is libterrain (common/, its public API common/terrain.h)
// built for wasm32 (make wasm): the generator, the encoder and the
// reference decoder, byte for byte the server's. Loaded on request
// (loadWasm), it makes openWorld() and generateTile() work and decodeTile()
// take the reference decoder (verify: true); without it decodeTile() is
// the JavaScript decoder above. The structs below are terrain.h's, at the
// offsets its comments give.

let core = null;

// common/err.h's codes, by number (terrain.h's TERRAIN_ERR_*)
const ERR_NAMES = ['ERR_OK', 'ERR_INVAL', 'ERR_NOMEM', 'ERR_RANGE', 'ERR_TRUNC', 'ERR_MAGIC', 'ERR_VERSION',
	'ERR_CORRUPT', 'ERR_CHECKSUM', 'ERR_TOOBIG', 'ERR_NOTFOUND', 'ERR_PARSE', 'ERR_ZSTD', 'ERR_IO', 'ERR_BUSY',
	'ERR_AGAIN', 'ERR_CONFLICT', 'ERR_ZLIB'];
const LAYER_BITS = { height: 0, material: 1 };   // TERRAIN_LAYER_MATERIAL
const PRECISION_UM = { '1cm': 10000, '5cm': 50000, '10cm': 100000, '50cm': 500000, '1m': 1000000 };
const REQUEST_SIZE = 32, INFO_SIZE = 72, WORLD_INFO_SIZE = 64, EDIT_SIZE = 42;

// The module imports three WASI calls that only its unused stdio reaches.
const WASI_STUBS = { fd_close: () => 8, fd_seek: () => 8, fd_write: () => 8 };

/* The bytes of terrain.wasm at url: fetch, or the file system for file: URLs (Node.js). */
async function wasmBytes(url) {
	if (url instanceof URL && url.protocol === 'file:') {
		const { readFile } = await import('node:fs/promises');
		return readFile(url);
	}
	const res = await fetch(url);
	if (!res.ok) throw new TileError(`HTTP_${res.status}`, `${url}: ${res.statusText}`);
	return new Uint8Array(await res.arrayBuffer());
}

class Core {
	constructor(instance) {
		this.x = instance.exports;
		this.x._initialize();
		this.worlds = new Map();
		this.bufs = new Map();   // name -> [ptr, size]: reused input and output areas
		this.work = this.out32((p) => this.x.terrain_work_create(p), 'terrain_work_create');
	}
	get dv() { return new DataView(this.x.memory.buffer); }
	u8(ptr, n) { return new Uint8Array(this.x.memory.buffer, ptr, n); }
	/* A reused block of at least n bytes for purpose `name`. */
	buf(name, n) {
		const b = this.bufs.get(name);
		if (b && b[1] >= n) return b[0];
		if (b) this.x.free(b[0]);
		const ptr = this.x.malloc(Math.max(n, 64));
		if (!ptr) throw new TileError('ERR_NOMEM', `${n} bytes in the WebAssembly memory`);
		this.bufs.set(name, [ptr, Math.max(n, 64)]);
		return ptr;
	}
	put(name, bytes) {
		const ptr = this.buf(name, bytes.byteLength + 1);
		this.u8(ptr, bytes.byteLength).set(bytes);
		return ptr;
	}
	cstr(ptr) {
		const m = new Uint8Array(this.x.memory.buffer);
		let e = ptr;
		while (m[e]) e++;
		return new TextDecoder().decode(m.subarray(ptr, e));
	}
	error(rc, what, msg = '') {
		return new TileError(ERR_NAMES[-rc] ?? `ERR_${rc}`, `${what}: ${msg || this.cstr(this.x.terrain_strerror(rc))}`);
	}
	/* f(pointer to a u32 out-parameter): the pointer it stored, or throw. */
	out32(f, what) {
		const p = this.buf('out32', 4), rc = f(p);
		if (rc) throw this.error(rc, what);
		return this.dv.getUint32(p, true);
	}
	/* terrain_tile_request for key into the 'request' block. */
	request({ lod = 0, cx, cz, layers, precision, format }) {
		if (!Number.isInteger(lod) || !Number.isInteger(cx) || !Number.isInteger(cz) || cx !== (cx | 0) || cz !== (cz | 0))
			throw new TileError('ERR_INVAL', `tile ${lod}/${cx}/${cz}: not integers of int32`);
		const bits = String(layers ?? 'height').split(',').reduce((b, l) => {
			if (!(l in LAYER_BITS)) throw new TileError('ERR_INVAL', `layer ${l}`);
			return b | LAYER_BITS[l];
		}, 0);
		const um = precision === undefined ? 0 : typeof precision === 'number' ? precision : PRECISION_UM[precision];
		if (um === undefined) throw new TileError('ERR_INVAL', `precision ${precision}`);
		const p = this.buf('request', REQUEST_SIZE), dv = this.dv;
		[REQUEST_SIZE, lod, cx, cz, um, bits, format ?? 0, 0].forEach((v, i) => dv.setInt32(p + 4 * i, v | 0, true));
		return { p, bits };
	}
	/* terrain_tile_info at p as decodeHeader()'s fields. */
	info(p) {
		const dv = this.dv, hex = (v) => v.toString(16).padStart(16, '0');
		return { fingerprint: hex(dv.getBigUint64(p + 8, true)), seed: dv.getBigUint64(p + 16, true).toString(),
			cx: dv.getInt32(p + 24, true), cz: dv.getInt32(p + 28, true), lod: dv.getInt32(p + 32, true),
			chunkLog2: dv.getInt32(p + 36, true), side: dv.getUint32(p + 40, true), quantumUm: dv.getUint32(p + 44, true),
			editSeq: Number(dv.getBigUint64(p + 48, true)), layers: !!(dv.getUint32(p + 64, true) & 1) };
	}
}

/**
 * Load terrain.wasm (default: the file beside this module) and use it from
 * now on. Resolves to true, or to false when it cannot be had (no file,
 * no WebAssembly): the module then works as before, without generation.
 */
export async function loadWasm(url = new URL('terrain.wasm', import.meta.url)) {
	if (core) return true;
	try {
		const { instance } = await WebAssembly.instantiate(await wasmBytes(url), { wasi_snapshot_preview1: WASI_STUBS });
		core = new Core(instance);
		return true;
	} catch {
		return false;
	}
}

/** Whether terrain.wasm is loaded (loadWasm). */
export const wasmLoaded = () => core !== null;

const needCore = (what) => {
	if (!core) throw new TileError('ERR_INVAL', `${what} needs terrain.wasm: await loadWasm() first`);
	return core;
};

/* The reference decoder (terrain_decode) on u8: decodeTile's result, metres aside. */
function wasmDecode(u8) {
	const c = core, x = c.x;
	if (u8.byteLength < HEADER_LEN) throw new TileError('ERR_TRUNC', `${u8.byteLength} bytes, a header is 64`);
	const side = new DataView(u8.buffer, u8.byteOffset + 36, 4).getUint32(0, true);
	const n = side <= 4097 ? side * side : 0;
	const inp = c.put('in', u8), info = c.buf('info', INFO_SIZE), out = c.buf('heights', 4 * n + 4), mat = c.buf('materials', n + 1);
	c.dv.setUint32(info, INFO_SIZE, true);
	const rc = x.terrain_decode(inp, u8.byteLength, info, out, n, mat, n);
	if (rc) throw c.error(rc, 'terrain_decode');
	const header = decodeHeader(u8);
	if (header.coded) header.codedLen = new DataView(u8.buffer, u8.byteOffset + HEADER_LEN, 4).getUint32(0, true);
	const quanta = new Int32Array(x.memory.buffer, out, n).slice();
	const materials = header.layers ? c.u8(mat, n).slice() : null;
	return { header, quanta, heights: null, materials };
}

function withMetres(t, metres) {
	if (metres) {
		const s = t.header.quantumUm / 1e6, q = t.quanta, h = new Float64Array(q.length);
		for (let k = 0; k < q.length; k++) h[k] = q[k] * s;
		t.heights = h;
	}
	return t;
}

/**
 * A world of the core in this process (terrain_world_create): (gen, seed)
 * with gen a built-in preset's name, or preset (a preset's JSON text or
 * object). Needs loadWasm(). Returns a World: { fingerprint (16 hex
 * digits), chunkLog2, maxLod, quantumUm, tile(key, options), edits(),
 * close() }.
 */
export function openWorld({ seed, gen = 'default', preset } = {}) {
	const c = needCore('openWorld'), x = c.x, s = seedU64(seed);
	let w;
	if (preset === undefined) {
		w = c.out32((p) => x.terrain_world_create(c.put('name', new TextEncoder().encode(`${gen}\0`)), s, p), `preset ${gen}`);
	} else {
		const b = new TextEncoder().encode(typeof preset === 'string' ? preset : JSON.stringify(preset));
		const jp = c.put('json', b), msg = c.buf('msg', 256);
		c.u8(msg, 1)[0] = 0;
		w = c.out32((p) => {
			const rc = x.terrain_world_create_json(jp, b.byteLength, s, p, msg, 256);
			if (rc) throw c.error(rc, `preset ${gen}`, c.cstr(msg));
			return 0;
		}, `preset ${gen}`);
	}
	return new World(c, w, s);
}

/** A world in terrain.wasm (openWorld). */
class World {
	constructor(c, ptr, seed) {
		const p = c.buf('winfo', WORLD_INFO_SIZE), dv = c.dv;
		dv.setUint32(p, WORLD_INFO_SIZE, true);
		c.x.terrain_world_info(ptr, p);
		this.c = c; this.ptr = ptr; this.seed = seed;
		this.gen = c.cstr(c.x.terrain_world_name(ptr));
		this.fingerprint = dv.getBigUint64(p + 8, true).toString(16).padStart(16, '0');
		this.chunkLog2 = dv.getInt32(p + 24, true);
		this.maxLod = dv.getInt32(p + 28, true);
		this.quantumUm = dv.getUint32(p + 32, true);
		this.logs = [];
	}
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
	tile(key, { edits, metres = true, encode = true } = {}) {
		const c = this.c, x = c.x;
		if (!this.ptr) throw new TileError('ERR_INVAL', 'the world is closed');
		if (edits && edits.world !== this) throw new TileError('ERR_INVAL', 'edits of another world');
		const { p: rq, bits } = c.request(key), side = x.terrain_tile_side(this.ptr, key.lod ?? 0), n = side * side;
		if (!side) throw new TileError('ERR_INVAL', `lod ${key.lod}`);
		const ep = edits ? edits.ptr : 0;
		let t;
		if (encode) {
			const cap = x.terrain_tile_bound(this.ptr, rq), tp = c.buf('gen-tile', cap), lp = c.buf('len', 4);
			const rc = x.terrain_generate_encoded(this.ptr, ep, c.work, rq, tp, cap, lp);
			if (rc) throw c.error(rc, `generate ${key.lod ?? 0}/${key.cx}/${key.cz}`);
			const bytes = c.u8(tp, c.dv.getUint32(lp, true)).slice();
			t = decodeTile(bytes, { metres: false });
			t.bytes = bytes;
		} else {
			const hp = c.buf('gen-heights', 4 * n), mp = bits & 1 ? c.buf('gen-materials', n) : 0, ip = c.buf('info', INFO_SIZE);
			c.dv.setUint32(ip, INFO_SIZE, true);
			const rc = x.terrain_generate(this.ptr, ep, c.work, rq, hp, n, mp, mp ? n : 0, ip);
			if (rc) throw c.error(rc, `generate ${key.lod ?? 0}/${key.cx}/${key.cz}`);
			t = { header: c.info(ip), quanta: new Int32Array(x.memory.buffer, hp, n).slice(), heights: null,
				materials: mp ? c.u8(mp, n).slice() : null, bytes: null };
		}
		return withMetres(t, metres);
	}
	/** A new, empty edit log of this world (terrain_edits_create). */
	edits() {
		const c = this.c, ptr = c.out32((p) => c.x.terrain_edits_create(this.ptr, p), 'terrain_edits_create');
		const log = new EditLog(this, ptr);
		this.logs.push(log);
		return log;
	}
	close() {
		for (const l of this.logs) l.close();
		if (this.ptr) this.c.x.terrain_world_destroy(this.ptr);
		this.ptr = 0;
	}
}

/**
 * A world's edit log in terrain.wasm (terrain_edits): batches applied in
 * sequence order, the world hash and each chunk's version and hash as the
 * server publishes them (docs/edits.md), and what World.tile() applies.
 */
class EditLog {
	constructor(world, ptr) { this.world = world; this.c = world.c; this.ptr = ptr; }
	/**
	 * Apply a batch, as the JSON of POST .../edits ({"edits": [...]}, text
	 * or object) numbered from firstSeq (the log's next: seq + 1), or as
	 * canonical records (a Uint8Array of 42-byte edits). All or nothing.
	 * With { author, time } (the server's answer or GET .../edits gives
	 * them, record version 3) the world hash is the server's too.
	 */
	apply(batch, firstSeq = this.seq + 1, { author, time = 0 } = {}) {
		const c = this.c, x = c.x;
		let rc;
		if (batch instanceof Uint8Array) {
			if (batch.byteLength % EDIT_SIZE) throw new TileError('ERR_INVAL', 'edits: not whole 42-byte records');
			rc = x.terrain_edits_apply(this.ptr, BigInt(firstSeq), c.put('records', batch), batch.byteLength / EDIT_SIZE);
		} else {
			const b = new TextEncoder().encode(typeof batch === 'string' ? batch : JSON.stringify(batch));
			const jp = c.put('json', b), cap = 12000, op = c.buf('record', cap), lp = c.buf('len', 4), msg = c.buf('msg', 256);
			rc = author === undefined ?
				x.terrain_edits_record(this.world.ptr, BigInt(firstSeq), jp, b.byteLength, op, cap, lp, msg, 256) :
				x.terrain_edits_record_by(this.world.ptr, BigInt(firstSeq), jp, b.byteLength,
					c.put('author', new TextEncoder().encode(`${author}\0`)), BigInt(time), op, cap, lp, msg, 256);
			if (rc) throw c.error(rc, 'edits', c.cstr(msg));
			rc = x.terrain_edits_apply_record(this.ptr, op, c.dv.getUint32(lp, true));
		}
		if (rc) throw c.error(rc, `edits from seq ${firstSeq}`);
		return this;
	}
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
	revert(r, { author, time = 0, floor = 1, seq = this.seq + 1 } = {}) {
		if (r && typeof r === 'object' && 'seq' in r) {
			const { floor: f = 1, ...filter } = r.revert ?? {};
			const undo = r.history_ms ? { undo: r.undo, history_ms: r.history_ms } : { undo: r.undo };
			return this.revert(r.revert ? filter : undo, { author: r.author, time: r.time ?? 0, floor: r.revert ? f : r.floor ?? 1, seq: r.seq });
		}
		const c = this.c, x = c.x, te = new TextEncoder();
		const b = te.encode(typeof r === 'string' ? r : JSON.stringify(r));
		const jp = c.put('json', b), ap = c.put('author', te.encode(`${author ?? ''}\0`));
		const op = c.buf('record', 514), lp = c.buf('len', 4), msg = c.buf('msg', 256);
		let rc = x.terrain_edits_revert_record(this.world.ptr, BigInt(seq), jp, b.byteLength, ap, BigInt(time), BigInt(floor),
			op, 514, lp, msg, 256);
		if (rc) throw c.error(rc, 'revert', c.cstr(msg));
		rc = x.terrain_edits_apply_record(this.ptr, op, c.dv.getUint32(lp, true));
		if (rc) throw c.error(rc, `revert at seq ${seq}`);
		return this;
	}
	/** The last applied sequence number (0: none). */
	get seq() { return Number(BigInt.asUintN(64, this.c.x.terrain_edits_seq(this.ptr))); }
	/** The world hash after it, 16 hex digits (GET /v1/worlds/{seed}'s world_hash). */
	get worldHash() { return BigInt.asUintN(64, this.c.x.terrain_edits_world_hash(this.ptr)).toString(16).padStart(16, '0'); }
	/** Chunk (cx, cz)'s { version, hash } (GET .../hashes; 0 and '0000000000000000' when no edit touches it). */
	chunk(cx, cz) {
		const c = this.c, p = c.buf('chunk', 16);
		const rc = c.x.terrain_edits_chunk(this.ptr, cx, cz, p, p + 8);
		if (rc) throw c.error(rc, `chunk ${cx},${cz}`);
		return { version: Number(c.dv.getBigUint64(p, true)), hash: c.dv.getBigUint64(p + 8, true).toString(16).padStart(16, '0') };
	}
	close() {
		if (this.ptr) this.c.x.terrain_edits_destroy(this.ptr);
		this.ptr = 0;
	}
}

/**
 * One tile generated here, as the server would send it for a chunk with
 * no edits: generateTile({ seed, gen, preset, lod, cx, cz, layers,
 * precision, format }, options as World.tile()). Keeps the few worlds it
 * opens; needs loadWasm().
 */
export function generateTile(key, options) {
	const c = needCore('generateTile');
	const id = `${key.gen ?? 'default'}\n${seedU64(key.seed)}\n${key.preset ?? ''}`;
	let w = c.worlds.get(id);
	if (!w) {
		w = openWorld(key);
		if (c.worlds.size >= 8) {
			const [old, ow] = c.worlds.entries().next().value;
			ow.close();
			c.worlds.delete(old);
		}
		c.worlds.set(id, w);
	}
	return w.tile(key, options);
}

/**
 * Does this terrain.wasm make the world it was built to make? Runs
 * libterrain's self-check (the server's start-up golden tiles, about 10
 * ms): { ok, message, digest } with digest (16 hex digits) the one a
 * server publishes as "selfcheck" in its world info.
 */
export function selfCheck() {
	const c = needCore('selfCheck'), msg = c.buf('msg', 512);
	c.u8(msg, 1)[0] = 0;
	const rc = c.x.terrain_selfcheck(msg, 512);
	return { ok: rc === 0, message: c.cstr(msg), digest: BigInt.asUintN(64, c.x.terrain_selfcheck_digest()).toString(16).padStart(16, '0') };
}

// ---- local mode: generate what no edit reaches, ask the server the rest ----

/** The URL of the edit versions and hashes of a rectangle (at most 64 x 64 chunks). */
export const hashesUrl = (base, { seed, gen, cx0, cz0, cx1, cz1 }) =>
	`${base}/v1/worlds/${enc(String(seed))}/hashes${query(gen)}&cx0=${cx0}&cz0=${cz0}&cx1=${cx1}&cz1=${cz1}`;

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
export async function openLocal(base, { seed, gen = 'default' }, options = {}) {
	needCore('openLocal');
	const f = options.fetch ?? globalThis.fetch, maxAge = options.maxAge ?? 60000;
	const info = JSON.parse(new TextDecoder().decode(await body(await f(worldUrl(base, { seed, gen }), options.init), 'world info')));
	const world = openWorld({ seed, gen });
	const sc = selfCheck();
	const refuse = (why) => { world.close(); throw new TileError('ERR_MISMATCH', `local mode refused: ${why}`); };
	if (info.fingerprint !== world.fingerprint)
		refuse(`generator ${gen}: the server's fingerprint is ${info.fingerprint}, this module's ${world.fingerprint}`);
	if (!sc.ok) refuse(`this module's self-check fails: ${sc.message}`);
	if (info.selfcheck !== sc.digest)
		refuse(info.selfcheck ? `the server checked other golden tiles (${info.selfcheck}, this module ${sc.digest})`
			: 'the server does not say which golden tiles it checked (no "selfcheck" in its world info)');
	const stats = { generated: 0, fetched: 0, hashes: 0 };
	let known = null; // { rect, until, versions: Map "cx,cz" -> version }

	async function versions(r) {
		const now = Date.now();
		if (known && now < known.until && r.cx0 >= known.rect.cx0 && r.cz0 >= known.rect.cz0 &&
			r.cx1 <= known.rect.cx1 && r.cz1 <= known.rect.cz1) return known.versions;
		const v = new Map();
		for (let z = r.cz0; z <= r.cz1; z += 64)
			for (let x = r.cx0; x <= r.cx1; x += 64) {
				const part = { seed, gen, cx0: x, cz0: z, cx1: Math.min(x + 63, r.cx1), cz1: Math.min(z + 63, r.cz1) };
				const h = JSON.parse(new TextDecoder().decode(await body(await f(hashesUrl(base, part), options.init), 'hashes')));
				stats.hashes++;
				for (const c of h.chunks) v.set(`${c.cx},${c.cz}`, c.version);
			}
		known = { rect: r, until: now + maxAge, versions: v };
		return v;
	}
	const clamp = (c) => Math.max(-2147483648, Math.min(2147483647, c));
	// the version a tile reads: its own, or with materials the largest of the 3 x 3
	const reads = (v, cx, cz, layers) => {
		if (!/material/.test(layers ?? '')) return v.get(`${cx},${cz}`) ?? 0;
		let m = 0;
		for (let dz = -1; dz <= 1; dz++)
			for (let dx = -1; dx <= 1; dx++) m = Math.max(m, v.get(`${clamp(cx + dx)},${clamp(cz + dz)}`) ?? 0);
		return m;
	};
	async function one(v, tile, opts) {
		const lod = tile.lod ?? 0;
		if (!reads(v, tile.cx, tile.cz, tile.layers)) {
			stats.generated++;
			const t = world.tile({ lod, cx: tile.cx, cz: tile.cz, layers: tile.layers }, opts);
			return { ...t, etag: null, url: null, local: true };
		}
		stats.fetched++;
		const t = await fetchTile(base, { ...tile, seed, gen }, opts);
		const want = v.get(`${tile.cx},${tile.cz}`) ?? 0;
		if (t.header.editSeq !== want)
			throw new TileError('ERR_MISMATCH', `tile ${lod}/${tile.cx}/${tile.cz}: edit_seq ${t.header.editSeq}, GET /hashes says version ${want}`);
		return t;
	}
	const around = (r) => ({ cx0: clamp(r.cx0 - 1), cz0: clamp(r.cz0 - 1), cx1: clamp(r.cx1 + 1), cz1: clamp(r.cz1 + 1) });
	return {
		world, stats,
		async fetchTile(tile, opts = {}) {
			return one(await versions(around({ cx0: tile.cx, cz0: tile.cz, cx1: tile.cx, cz1: tile.cz })), tile, { ...options, ...opts });
		},
		async fetchBundle(rect, opts = {}) {
			const v = await versions(around(rect)), tiles = new Map();
			for (let cz = rect.cz0; cz <= rect.cz1; cz++)
				for (let cx = rect.cx0; cx <= rect.cx1; cx++)
					tiles.set(`${cx},${cz}`, await one(v, { lod: rect.lod ?? 0, cx, cz, layers: rect.layers }, { ...options, ...opts }));
			return tiles;
		},
	};
}
