/*
 * procstat.c - process figures from /proc/self (see procstat.h), the way
 * Prometheus's own client libraries read them: CPU time, virtual size, RSS
 * and start time from /proc/self/stat, boot time from /proc/stat, open
 * descriptors by listing /proc/self/fd.
 */
#include "procstat.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "err.h"

/* The fields of /proc/self/stat we use (proc(5) numbers them from 1). */
struct stat_fields {
	unsigned long utime, stime;  /* 14, 15: clock ticks */
	unsigned long long start;    /* 22: ticks after boot */
	unsigned long vsize;         /* 23: bytes */
	long rss;                    /* 24: pages */
};

static int read_stat(struct stat_fields *sf)
{
	char buf[1024];
	const char *p;
	size_t n;
	FILE *f = fopen("/proc/self/stat", "r");

	if (!f)
		return ERR_IO;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name (field 2) is in parentheses and may hold spaces */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu "
			 "%*d %*d %*d %*d %*d %*d %llu %lu %ld", &sf->utime, &sf->stime,
			 &sf->start, &sf->vsize, &sf->rss) != 5)
		return ERR_IO;
	return 0;
}

/* Boot time, seconds since the epoch: the "btime" line of /proc/stat. */
static int boot_time(unsigned long long *out)
{
	char line[256];
	int rc = ERR_IO;
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return ERR_IO;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", out) == 1) {
			rc = 0;
			break;
		}
	fclose(f);
	return rc;
}

/* Descriptors open, not counting the one that lists them. */
static int open_fds(uint64_t *out)
{
	DIR *d = opendir("/proc/self/fd");
	const struct dirent *e;
	uint64_t n = 0;

	if (!d)
		return ERR_IO;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	*out = n ? n - 1 : 0;
	return 0;
}

int procstat_read(struct procstat *st)
{
	struct stat_fields sf;
	unsigned long long btime;
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	struct rlimit rl;

	memset(st, 0, sizeof(*st));
	if (tick <= 0 || page <= 0 || read_stat(&sf) || boot_time(&btime) ||
	    open_fds(&st->open_fds) || getrlimit(RLIMIT_NOFILE, &rl)) {
		memset(st, 0, sizeof(*st));
		return ERR_IO;
	}
	st->cpu_seconds = (double)(sf.utime + sf.stime) / (double)tick;
	st->resident_bytes = sf.rss > 0 ? (uint64_t)sf.rss * (uint64_t)page : 0;
	st->virtual_bytes = sf.vsize;
	st->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	st->start_time = (double)btime + (double)sf.start / (double)tick;
	return 0;
}
