/*
 * geotiff.h - write a heightmap as a GeoTIFF (libtiff + libgeotiff).
 *
 * One band of Float32 metres, one strip per row, no compression, in a
 * local engineering CRS in metres (GTModelTypeGeoKey user-defined,
 * ProjLinearUnitsGeoKey metre): the world's own flat coordinates, no
 * projection, no datum. Pixels are points (GTRasterTypeGeoKey
 * RasterPixelIsPoint): pixel (c, r) is the sample at model
 * X = x0 + c * spacing, Y = y0 - r * spacing, given by ModelTiepointTag
 * (0, 0, 0, x0, y0, 0) and ModelPixelScaleTag (spacing, spacing, 0).
 * The caller chooses x0, y0 (export.c: X = world x, Y = -world z, so
 * rows go south as z increases and the map is north up). Choosing what
 * to write is export.c's.
 */
#ifndef CLIENT_GEOTIFF_H
#define CLIENT_GEOTIFF_H

#include <stdint.h>

struct geotiff_desc {
	uint32_t width, height;  /* samples */
	double x0, y0;           /* model position of pixel (0, 0)'s centre */
	double spacing;          /* metres between samples */
	const char *citation;    /* GTCitationGeoKey text, may be NULL */
};

/*
 * Write h (width * height metres, row-major) to path. Returns 0,
 * ERR_INVAL for a bad description, or ERR_IO (cannot create or write).
 */
int geotiff_write(const char *path, const struct geotiff_desc *d,
		  const float *h);

#endif
