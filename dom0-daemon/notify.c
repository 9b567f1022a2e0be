// SPDX-License-Identifier: MIT
/*
 * Readiness for systemd (Type=notify): sd_notify(3)'s protocol, one
 * datagram of "KEY=value" lines to the socket named by $NOTIFY_SOCKET.
 * Written out rather than linked from libsystemd: a dozen lines, and
 * vrdmad keeps running where there is no libsystemd (the rigs' dom0s).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "vrdmad.h"

int vd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	ssize_t n;
	int fd;

	if (!path || !*path)
		return 0;	/* not started by systemd */
	len = strlen(path);
	/* a path, or '@' for the abstract namespace; no vsock */
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return -EAFNOSUPPORT;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* never wait on systemd from the event loop */
	n = sendto(fd, state, strlen(state), MSG_NOSIGNAL | MSG_DONTWAIT,
		   (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
	if (n < 0)
		n = -errno;
	close(fd);
	return n < 0 ? (int)n : 0;
}
