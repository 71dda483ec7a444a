/*
 * xxh3_ref - XXH3-64 reference values from libxxhash for
 * tests/browser/viewer_browser.sh.
 *
 *   xxh3_ref --table MAX   for each n in 0..MAX, "n <16 hex>": XXH3_64bits()
 *                          of the bytes b[k] = (k * 131 + n * 7 + 1) & 0xFF,
 *                          k < n (the viewer's JavaScript XXH3 must agree)
 *   xxh3_ref FILE          "<16 hex>" of the file's bytes (an asset's ETag)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

static int table(long max)
{
	unsigned char *b = malloc(max > 0 ? (size_t)max : 1);
	long n, k;

	if (!b || max < 0)
		return 1;
	for (n = 0; n <= max; n++) {
		for (k = 0; k < n; k++)
			b[k] = (unsigned char)((k * 131 + n * 7 + 1) & 0xFF);
		printf("%ld %016llx\n", n, (unsigned long long)XXH3_64bits(b, (size_t)n));
	}
	free(b);
	return 0;
}

static int file(const char *path)
{
	XXH3_state_t *s = XXH3_createState();
	unsigned char buf[65536];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f || !s || XXH3_64bits_reset(s) != XXH_OK) {
		perror(path);
		return 1;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		XXH3_64bits_update(s, buf, n);
	fclose(f);
	printf("%016llx\n", (unsigned long long)XXH3_64bits_digest(s));
	XXH3_freeState(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--table"))
		return table(strtol(argv[2], NULL, 10));
	if (argc == 2)
		return file(argv[1]);
	fprintf(stderr, "usage: xxh3_ref --table MAX | xxh3_ref FILE\n");
	return 2;
}
