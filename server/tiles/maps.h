/*
 * maps.h - the world as web map tiles, for MapLibre GL JS, Leaflet and
 * other clients of TileJSON and {z}/{x}/{y} templates (docs/maps.md).
 *
 *   GET|HEAD /v1/worlds/{seed}/maps/{style}[?gen=NAME][&origin=CX,CZ]
 *	A TileJSON 3.0.0 document of the world and preset in style
 *	"terrarium" (elevation, Terrarium-encoded, for raster-dem sources)
 *	or "shaded" (a hillshaded, material-coloured picture for raster
 *	layers); "{style}.json" is the same. Its tiles template is absolute
 *	(from Host, or the host= and proto= of a Forwarded header), keeps
 *	gen and origin, and it carries tileSize 256 and, for terrarium,
 *	encoding "terrarium", which MapLibre reads. Cache-Control:
 *	no-cache (the document names the host it was asked through), ETag
 *	(XXH3-64 of the body) and 304, Vary: Host, Forwarded.
 *   GET|HEAD /v1/worlds/{seed}/maps/{style}/{z}/{x}/{y}[.png][?gen=][&origin=]
 *	A 256 x 256 8-bit RGB PNG of tile (z, x, y) of the pyramid of
 *	maptile.h: zoom 17 is 1 m per pixel, zoom 17 - d 2^d m per pixel,
 *	down to maptile_min_zoom(). origin=CX,CZ centres the window on
 *	chunk (CX, CZ)'s north-west corner instead of the world origin.
 *	Heights come from the generation and edit path of the binary tiles,
 *	so a map tile shows every acknowledged edit of the chunks it covers.
 *	Cached (the tile cache, --cache-mb) under a key with the largest
 *	edit version of those chunks, generated once per key on the worker
 *	pool. ETag: XXH3-64 of the PNG, strong; If-None-Match gives 304;
 *	Cache-Control as tiles (--max-age); CORS; X-Cache. Errors as JSON:
 *	400 bad seed, style, z, x, y or origin syntax, 404 unknown
 *	generator, a zoom outside the pyramid, x or y not below 2^z, or a
 *	tile beyond the int32 chunk grid; 503 when the generation queue is
 *	full.
 *
 * Part of the tiles module (it shares the cache, the eroded regions and
 * the baked edits of tiles_int.h); service.c registers these routes with
 * the struct tiles as their module. Loop thread only, apart from the
 * jobs it queues.
 */
#ifndef MAPS_H
#define MAPS_H

#include <stddef.h>

struct route;

#define MAPS_PNG_TYPE "image/png"

/* The routes of this resource (static); each handler's module must be
 * the struct tiles. Returns their count. */
size_t maps_routes(const struct route **out);

#endif
