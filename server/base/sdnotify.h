/*
 * sdnotify.h - tell the service manager how the server is doing, by
 * systemd's notification protocol: one datagram of "KEY=VALUE" lines to the
 * AF_UNIX socket named by $NOTIFY_SOCKET (a path, or "@name" in the
 * abstract namespace). A unit with Type=notify waits for "READY=1" before
 * it counts the service as started (docs/operations.md, "The systemd
 * unit"). Without $NOTIFY_SOCKET it does nothing, so a developer's or a
 * container's server behaves as before.
 *
 * The protocol is the one libsystemd's sd_notify(3) speaks, which systemd
 * documents as stable for programs that implement it themselves; these few
 * lines spare the build a libsystemd-dev dependency (and the arm64 cross
 * build its :arm64 twin). Sends a datagram, so it belongs to the I/O
 * shell; any thread, no state.
 */
#ifndef SDNOTIFY_H
#define SDNOTIFY_H

/*
 * Send state (e.g. "READY=1\nSTATUS=listening on 127.0.0.1:8080") to
 * $NOTIFY_SOCKET. Returns 1 when sent, 0 when $NOTIFY_SOCKET is unset or
 * empty (nothing to tell), or a negative ERR_* (ERR_INVAL: an address this
 * code cannot use, such as systemd 254's "vsock:"; ERR_IO: socket or
 * sendto failed, errno says why).
 */
int sdnotify(const char *state);

#endif
