// world.js - where a point of a terrain world sits on a web map, for the
// pages beside this file (docs/maps.md, "The pyramid"). Zoom 17 has one
// pixel per metre: the pixel centred on world sample (x, z) of a window
// centred on the origin chunk (ocx, ocz) is Mercator pixel
// (x - ox + 2^24 + 1/2, z - oz + 2^24 + 1/2) of the 2^25-pixel world
// square, ox = ocx * chunk_size; x runs east, z south.

export const MAX_ZOOM = 17;
const HALF = 2 ** 24, WORLD_PX = 2 ** 25;

/** [lng, lat] of world (x, z) metres, for a window centred on (ox, oz) metres. */
export function lngLatOf(x, z, ox = 0, oz = 0) {
	const px = (x - ox + HALF + 0.5) / WORLD_PX, py = (z - oz + HALF + 0.5) / WORLD_PX;
	return [px * 360 - 180, (Math.atan(Math.sinh(Math.PI * (1 - 2 * py))) * 180) / Math.PI];
}

/** World (x, z) metres of [lng, lat]: the inverse of lngLatOf(). */
export function worldOf(lng, lat, ox = 0, oz = 0) {
	const px = (lng + 180) / 360;
	const py = (1 - Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360)) / Math.PI) / 2;
	return [px * WORLD_PX - HALF - 0.5 + ox, py * WORLD_PX - HALF - 0.5 + oz];
}

/** Leaflet's CRS for the same pyramid (L is the leaflet module): a flat
 * CRS.Simple whose latlng is [-z, x] in metres, the same {z}/{x}/{y}
 * tiles as MapLibre's, pixel centres on samples at zoom 17. */
export function leafletCrs(L, ox = 0, oz = 0) {
	const a = 1 / 2 ** MAX_ZOOM, b = HALF / 2 ** MAX_ZOOM + 0.5 / 2 ** MAX_ZOOM;
	return L.extend({}, L.CRS.Simple, {
		transformation: new L.Transformation(a, b - ox * a, -a, b - oz * a),
		infinite: true,
	});
}

/** The page's parameters: ?server=&seed=&gen=&x=&z=&zoom=&pitch=&origin=CX,CZ
 * (&radius=&lod= for three.html; &fade=0 turns fading off, &fade=MS sets
 * MapLibre's) */
export function params(defaults = {}) {
	const q = new URLSearchParams(location.search), get = (k, d) => q.get(k) ?? d;
	return {
		server: get('server', defaults.server ?? 'http://127.0.0.1:8080').replace(/\/$/, ''),
		seed: get('seed', defaults.seed ?? '42'),
		gen: get('gen', defaults.gen ?? 'default'),
		x: Number(get('x', defaults.x ?? 0)),
		z: Number(get('z', defaults.z ?? 0)),
		zoom: Number(get('zoom', defaults.zoom ?? 14)),
		pitch: Number(get('pitch', defaults.pitch ?? 0)),
		radius: Number(get('radius', defaults.radius ?? 2)),
		lod: Number(get('lod', defaults.lod ?? 2)),
		origin: get('origin', ''),
		fade: q.has('fade') ? Number(q.get('fade')) : undefined,
	};
}
