/*
 * files.c - the files the server opens besides the edit log (files.h).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "err.h"
#include "files.h"
#include "le.h"

int files_read(const char *path, size_t max, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;
	int rc = 0;

	if (!f)
		return ERR_IO;
	if (!(buf = malloc(max + 2))) {
		fclose(f);
		return ERR_NOMEM;
	}
	n = fread(buf, 1, max + 1, f);
	if (ferror(f))
		rc = ERR_IO;
	else if (n > max)
		rc = ERR_TOOBIG;
	fclose(f);
	if (rc) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int files_write(const char *path, const void *buf, size_t len)
{
	FILE *f = path ? fopen(path, "wb") : stdout;
	int ok;

	if (!f)
		return ERR_IO;
	ok = fwrite(buf, 1, len, f) == len;
	ok = (path ? fclose(f) : fflush(f)) == 0 && ok;
	return ok ? 0 : ERR_IO;
}

FILE *files_open_append(const char *path)
{
	FILE *f;

	if (!strcmp(path, "-")) { /* access lines apart from stderr's messages */
		setvbuf(stdout, NULL, _IOLBF, 0);
		return stdout;
	}
	f = fopen(path, "a");
	if (f)
		setvbuf(f, NULL, _IOLBF, 0);
	return f;
}

int files_reopen_append(FILE *f, const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);

	if (fd < 0)
		return ERR_IO;
	fflush(f);
	if (dup2(fd, fileno(f)) < 0) {
		close(fd);
		return ERR_IO;
	}
	close(fd);
	return 0;
}
