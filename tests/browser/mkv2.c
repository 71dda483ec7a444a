/*
 * mkv2 - turn a tile into a version 2 tile (the old form, filter 1 byte
 * planes, which decoders still read) with a material layer,
 * using the reference encoder (common/tile.c), for tests/browser/viewer_browser.sh:
 * the page's decoder must read it back with the same heights and
 * material[k] = (k * 7 + k / side) % 6.
 *
 *   mkv2 IN OUT
 */
#include <stdio.h>
#include <stdlib.h>

#include "err.h"
#include "tile.h"

static long slurp(const char *path, uint8_t **out)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(*out = malloc((size_t)n + 1)) || fread(*out, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		return -1;
	}
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	struct tile t;
	uint8_t *in, *out;
	size_t len, k, n;
	long inlen;
	FILE *f;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: mkv2 IN OUT\n");
		return 2;
	}
	if ((inlen = slurp(argv[1], &in)) < 0)
		return 1;
	if ((rc = tile_decode(in, (size_t)inlen, &t)) != 0 || (rc = tile_add_material(&t)) != 0) {
		fprintf(stderr, "mkv2: %s\n", err_str(rc));
		return 1;
	}
	n = (size_t)t.side * t.side;
	for (k = 0; k < n; k++)
		t.material[k] = (uint8_t)((k * 7 + k / t.side) % 6);
	out = malloc(tile_encode_bound(&t));
	if (!out || (rc = tile_encode_lz21(&t, out, tile_encode_bound(&t), &len)) != 0) {
		fprintf(stderr, "mkv2: encode: %s\n", err_str(rc));
		return 1;
	}
	f = fopen(argv[2], "wb");
	if (!f || fwrite(out, 1, len, f) != len || fclose(f)) {
		perror(argv[2]);
		return 1;
	}
	tile_release(&t);
	free(in);
	free(out);
	return 0;
}
