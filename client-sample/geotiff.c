/*
 * geotiff.c - a Float32 heightmap as a GeoTIFF (geotiff.h). libtiff
 * writes the image; libgeotiff writes the GeoKeys and, through its
 * XTIFF extender, registers the GeoTIFF tags (ModelTiepointTag,
 * ModelPixelScaleTag) with libtiff.
 */
#include "geotiff.h"

#include <geotiff/geotiffio.h>
#include <geotiff/xtiffio.h>
#include <stdio.h>
#include <tiffio.h>

#include "err.h"

/* libtiff prints warnings and errors on stderr by default; the caller
 * reports ERR_IO itself. */
static void quiet(const char *module, const char *fmt, va_list ap)
{
	(void)module;
	(void)fmt;
	(void)ap;
}

static int write_image(TIFF *tif, const struct geotiff_desc *d,
		       const float *h)
{
	TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, d->width);
	TIFFSetField(tif, TIFFTAG_IMAGELENGTH, d->height);
	TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
	TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 32);
	TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_IEEEFP);
	TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
	TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
	TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_NONE);
	TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 1);
	TIFFSetField(tif, TIFFTAG_SOFTWARE, "terrain-client export");
	for (uint32_t r = 0; r < d->height; r++)
		if (TIFFWriteScanline(tif, (void *)(h + (size_t)r * d->width), r,
				      0) < 0)
			return ERR_IO;
	return 0;
}

static int write_geo(TIFF *tif, const struct geotiff_desc *d)
{
	double tie[6] = { 0, 0, 0, d->x0, d->y0, 0 };
	double scale[3] = { d->spacing, d->spacing, 0 };
	GTIF *gt = GTIFNew(tif);

	if (!gt)
		return ERR_IO;
	TIFFSetField(tif, TIFFTAG_GEOTIEPOINTS, 6, tie);
	TIFFSetField(tif, TIFFTAG_GEOPIXELSCALE, 3, scale);
	GTIFKeySet(gt, GTModelTypeGeoKey, TYPE_SHORT, 1, KvUserDefined);
	GTIFKeySet(gt, GTRasterTypeGeoKey, TYPE_SHORT, 1, RasterPixelIsPoint);
	GTIFKeySet(gt, ProjLinearUnitsGeoKey, TYPE_SHORT, 1, Linear_Meter);
	if (d->citation)
		GTIFKeySet(gt, GTCitationGeoKey, TYPE_ASCII, 0, d->citation);
	GTIFWriteKeys(gt);
	GTIFFree(gt);
	return 0;
}

int geotiff_write(const char *path, const struct geotiff_desc *d,
		  const float *h)
{
	TIFFErrorHandler old_err, old_warn;
	TIFF *tif;
	int rc;

	if (!path || !d || !h || !d->width || !d->height || !(d->spacing > 0))
		return ERR_INVAL;
	old_err = TIFFSetErrorHandler(quiet);
	old_warn = TIFFSetWarningHandler(quiet);
	tif = XTIFFOpen(path, "w");
	rc = tif ? write_geo(tif, d) : ERR_IO;
	if (!rc)
		rc = write_image(tif, d, h);
	if (tif && !rc && !TIFFWriteDirectory(tif))
		rc = ERR_IO;
	if (tif)
		XTIFFClose(tif);
	TIFFSetErrorHandler(old_err);
	TIFFSetWarningHandler(old_warn);
	return rc;
}
