/*
 * kill_on.c - a helper of tests/edits/edit_compact.sh: kill -9 a process the
 * moment a file appears in a directory or is renamed away from it, so
 * that a test can cut a server short in the middle of writing that file.
 *
 *   kill_on DIR NAME create|moved PID SECONDS
 *
 * Watches DIR with inotify for NAME being created (IN_CREATE) or renamed
 * away (IN_MOVED_FROM), then sends SIGKILL to PID at once. Prints "killed"
 * and exits 0, or exits 1 after SECONDS without the event.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/types.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	uint32_t mask;
	int fd, ms;

	if (argc != 6 || (strcmp(argv[3], "create") && strcmp(argv[3], "moved"))) {
		fprintf(stderr, "usage: kill_on DIR NAME create|moved PID SECONDS\n");
		return 2;
	}
	mask = strcmp(argv[3], "create") ? IN_MOVED_FROM : IN_CREATE;
	ms = atoi(argv[5]) * 1000;
	if ((fd = inotify_init1(IN_CLOEXEC)) < 0 || inotify_add_watch(fd, argv[1], mask) < 0) {
		perror("inotify");
		return 2;
	}
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;
		char *q;

		if (poll(&p, 1, ms) <= 0)
			return 1;
		if ((n = read(fd, buf, sizeof(buf))) <= 0)
			return 2;
		for (q = buf; q < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)(void *)q;

			if ((e->mask & mask) && e->len && !strcmp(e->name, argv[2])) {
				kill((pid_t)atoi(argv[4]), SIGKILL);
				puts("killed");
				return 0;
			}
			q += sizeof(*e) + e->len;
		}
	}
}
