/*
 * test_sdnotify.c - systemd's notification protocol (server/base/sdnotify.c):
 * the state arrives whole, as one datagram, at a socket named by a path or
 * in the abstract namespace; without NOTIFY_SOCKET nothing is sent; an
 * address it cannot use and a socket nobody listens on are errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/sdnotify.h"
#include "err.h"

/* A datagram socket bound at name ("@x": abstract); its descriptor. */
static int listener(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	memcpy(sa.sun_path, name, n);
	if (name[0] == '@')
		sa.sun_path[0] = 0;
	assert_int_equal(bind(fd, (struct sockaddr *)&sa,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)), 0);
	return fd;
}

/* The next datagram at fd, NUL-terminated in buf; its length. */
static ssize_t receive(int fd, char *buf, size_t len)
{
	ssize_t n = recv(fd, buf, len - 1, MSG_DONTWAIT);

	if (n >= 0)
		buf[n] = 0;
	return n;
}

static void test_sdnotify_sends_the_state_to_a_path(void **state)
{
	char path[64], buf[256];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/test_sdnotify.%ld", (long)getpid());
	unlink(path);
	fd = listener(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(sdnotify("READY=1\nSTATUS=listening on 127.0.0.1:8080"), 1);
	assert_int_equal(receive(fd, buf, sizeof(buf)), 42);
	assert_string_equal(buf, "READY=1\nSTATUS=listening on 127.0.0.1:8080");
	assert_int_equal(sdnotify("STOPPING=1"), 1);
	assert_int_equal(receive(fd, buf, sizeof(buf)), 10);
	assert_string_equal(buf, "STOPPING=1");
	close(fd);
	unlink(path);
	/* nobody listens there any more */
	assert_int_equal(sdnotify("READY=1"), ERR_IO);
	unsetenv("NOTIFY_SOCKET");
}

static void test_sdnotify_sends_to_an_abstract_name(void **state)
{
	char name[64], buf[64];
	int fd;

	(void)state;
	snprintf(name, sizeof(name), "@test_sdnotify.%ld", (long)getpid());
	fd = listener(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(sdnotify("READY=1"), 1);
	assert_int_equal(receive(fd, buf, sizeof(buf)), 7);
	assert_string_equal(buf, "READY=1");
	close(fd);
	unsetenv("NOTIFY_SOCKET");
}

static void test_sdnotify_does_nothing_without_a_socket(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(sdnotify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(sdnotify("READY=1"), 0);
	unsetenv("NOTIFY_SOCKET");
}

static void test_sdnotify_rejects_addresses_it_cannot_use(void **state)
{
	char longpath[200];

	(void)state;
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = 0;
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	assert_int_equal(sdnotify("READY=1"), ERR_INVAL);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	assert_int_equal(sdnotify("READY=1"), ERR_INVAL);
	setenv("NOTIFY_SOCKET", "@", 1);
	assert_int_equal(sdnotify("READY=1"), ERR_INVAL);
	setenv("NOTIFY_SOCKET", longpath, 1);
	assert_int_equal(sdnotify("READY=1"), ERR_INVAL);
	assert_int_equal(sdnotify(NULL), ERR_INVAL);
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sdnotify_sends_the_state_to_a_path),
		cmocka_unit_test(test_sdnotify_sends_to_an_abstract_name),
		cmocka_unit_test(test_sdnotify_does_nothing_without_a_socket),
		cmocka_unit_test(test_sdnotify_rejects_addresses_it_cannot_use),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
