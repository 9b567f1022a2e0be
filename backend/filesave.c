// SPDX-License-Identifier: MIT
/*
 * A file vrdmad keeps (the connect policy, the settings) is replaced
 * whole or not at all: written to a temporary beside it, fsynced, renamed
 * over it, then its directory fsynced so the rename survives a power cut.
 * Once renamed the new file is what a restart loads, so a directory that
 * cannot be synced is only a warning: the caller's change stands.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "vbe.h"

static int vbe_sync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[VBE_FILE_PATH_MAX];
	int fd, err = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		err = -errno;
	close(fd);
	return err;
}

int vbe_file_replace(const char *path, const char *what,
		     int (*fill)(FILE *f, void *arg), void *arg)
{
	char tmp[VBE_FILE_PATH_MAX + 8];
	FILE *f;
	int err;

	if (strlen(path) >= VBE_FILE_PATH_MAX)
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	err = fill(f, arg);
	errno = 0;
	if (!err && (fflush(f) || ferror(f) || fsync(fileno(f))))
		err = errno ? -errno : -EIO;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	err = vbe_sync_dir_of(path);
	if (err)
		vlog_warn("%s: %s written, but its directory not synced: %s", what, path,
			  strerror(-err));
	return 0;
}
