/*
 * procstat.h - this process's resource figures, read from /proc/self for
 * the standard process_* metrics of /metrics (metrics.h): CPU time,
 * resident and virtual memory, open and allowed descriptors, start time.
 *
 * Linux only; elsewhere, or when /proc is not mounted, procstat_read()
 * fails and /metrics leaves the process_* families without samples.
 * Reads files, so it belongs to the I/O shell; any thread.
 */
#ifndef PROCSTAT_H
#define PROCSTAT_H

#include <stdint.h>

struct procstat {
	double cpu_seconds;      /* user + system CPU time, seconds */
	uint64_t resident_bytes; /* resident set size */
	uint64_t virtual_bytes;  /* virtual memory size */
	uint64_t open_fds;       /* entries of /proc/self/fd */
	uint64_t max_fds;        /* soft RLIMIT_NOFILE (UINT64_MAX: unlimited) */
	double start_time;       /* seconds since the Unix epoch */
};

/*
 * Fill *st from /proc/self/stat, /proc/stat (boot time), /proc/self/fd
 * and getrlimit(). Returns 0, or ERR_IO (st is then zeroed) when one of
 * them cannot be read or parsed.
 */
int procstat_read(struct procstat *st);

#endif
