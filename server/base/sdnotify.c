/*
 * sdnotify.c - systemd's readiness notification (see sdnotify.h).
 */
#include "sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "err.h"

/* Fill *sa from NOTIFY_SOCKET's text; *len its length. */
static int notify_addr(const char *path, struct sockaddr_un *sa, socklen_t *len)
{
	size_t n = strlen(path);

	if ((path[0] != '/' && path[0] != '@') || n < 2 || n >= sizeof(sa->sun_path))
		return ERR_INVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, n);
	if (path[0] == '@')
		sa->sun_path[0] = 0; /* abstract: the length ends the name, no NUL */
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '/'));
	return 0;
}

int sdnotify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t len;
	ssize_t sent;
	int fd, rc, saved;

	if (!state)
		return ERR_INVAL;
	if (!path || !path[0])
		return 0;
	if ((rc = notify_addr(path, &sa, &len)) < 0)
		return rc;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ERR_IO;
	sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	saved = errno;
	close(fd);
	errno = saved;
	return sent == (ssize_t)strlen(state) ? 1 : ERR_IO;
}
