// SPDX-License-Identifier: MIT
/*
 * A file vrdmad keeps (the connect policy, the settings) is replaced
 * whole or not at all: written to a temporary beside it, fsynced, renamed
 * over it, then its directory fsynced so the rename survives a power cut.
 * Once renamed the new file is what a restart loads, so a directory that
 * cannot be synced is only a warning: the caller's change stands.
 *
 * The temporary is made fresh (O_EXCL, O_NOFOLLOW) with mode 0600, so the
 * file is 0600 too: nothing planted at FILE.new is written through, and
 * tenant names and VM settings are not for every local user to read.
 *
 * FILE.lock, flocked for vrdmad's life (vbe_files_lock), makes the file
 * one vrdmad's: a second one (another run dir, the same -P or
 * --state-dir) is refused at start instead of removing the first one's
 * FILE.new mid-write and each overwriting the other's changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "../vbe.h"

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
	int fd, err;

	if (strlen(path) >= VBE_FILE_PATH_MAX)
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	/* A FILE.new still there is a crash's leftover (ours are removed
	 * below).  It sits beside a file only vrdmad writes (its state dir,
	 * or the policy file it was given), so it is ours to remove; unlink
	 * removes a symlink, never its target, and whatever appears there
	 * again before the open fails it (EEXIST) instead of being followed. */
	if (!unlink(tmp))
		vlog_info("%s: removed %s, left by an earlier run", what, tmp);
	else if (errno != ENOENT)
		vlog_warn("%s: cannot remove %s: %s", what, tmp, strerror(errno));
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		goto err_unlink;
	}
	err = fill(f, arg);
	errno = 0;
	if (!err && (fflush(f) || ferror(f) || fsync(fileno(f))))
		err = errno ? -errno : -EIO;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		goto err_unlink;
	err = vbe_sync_dir_of(path);
	if (err)
		vlog_warn("%s: %s written, but its directory not synced: %s", what, path,
			  strerror(-err));
	return 0;

err_unlink:
	unlink(tmp);
	return err;
}

/*
 * FILE.lock, flocked until vbe_files_unlock.  flock needs no write
 * access, so an existing lock on a read-only mount is opened read-only.
 * One that cannot be made at all (no such directory, a read-only one) is
 * only warned of: such a file cannot be written either, so there is no
 * write to guard.
 */
static int vbe_file_lock(const char *path, const char *what, int *lock)
{
	char lk[VBE_FILE_PATH_MAX + 8];
	struct stat st;
	int fd, why;

	*lock = -1;
	if (strlen(path) >= VBE_FILE_PATH_MAX)
		return -ENAMETOOLONG;
	snprintf(lk, sizeof(lk), "%s.lock", path);
	/* O_NONBLOCK: a FIFO planted there never holds up the start. */
	fd = open(lk, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	why = errno;
	if (fd < 0 && (why == EROFS || why == EACCES)) {
		fd = open(lk, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno != ENOENT)
			why = errno;
	}
	if (fd < 0) {
		vlog_warn("%s: cannot open %s: %s: not guarded against a second vrdmad",
			  what, lk, strerror(why));
		return 0;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		vlog_warn("%s: %s is not a regular file: not guarded against a second vrdmad",
			  what, lk);
		close(fd);
		return 0;
	}
	if (!flock(fd, LOCK_EX | LOCK_NB)) {
		*lock = fd;
		return 0;
	}
	if (errno != EWOULDBLOCK) {
		vlog_warn("%s: cannot lock %s: %s: not guarded against a second vrdmad",
			  what, lk, strerror(errno));
		close(fd);
		return 0;
	}
	vlog_err("%s: %s is another vrdmad's (it holds %s)", what, path, lk);
	close(fd);
	return -EBUSY;
}

/* The same name, or (both there) the same file under another name. */
static bool vbe_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !strcmp(a, b) || (!stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
				 sa.st_ino == sb.st_ino);
}

int vbe_files_lock(const char *policy_path, const char *state_dir, struct vbe_files *l)
{
	char path[VBE_FILE_PATH_MAX];
	int err = 0;

	l->fd[0] = l->fd[1] = -1;
	if (state_dir && *state_dir) {
		if (snprintf(path, sizeof(path), "%s/" VBE_STORE_NAME, state_dir) >=
		    (int)sizeof(path))
			return -ENAMETOOLONG;
		/* Else its own locks would blame "another vrdmad". */
		if (policy_path && vbe_same_file(policy_path, path)) {
			vlog_err("policy: %s is the settings file of the state dir too",
				 policy_path);
			return -EINVAL;
		}
		/* Made now (as vbe_store_open would), so that a policy
		 * file inside it gets its lock too. */
		if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
			vlog_warn("settings: cannot create %s: %s", state_dir, strerror(errno));
		err = vbe_file_lock(path, "settings", &l->fd[0]);
	}
	if (!err && policy_path && *policy_path)
		err = vbe_file_lock(policy_path, "policy", &l->fd[1]);
	if (err)
		vbe_files_unlock(l);
	return err;
}

void vbe_files_unlock(struct vbe_files *l)
{
	unsigned i;

	for (i = 0; i < 2; i++) {
		if (l->fd[i] >= 0)
			close(l->fd[i]);
		l->fd[i] = -1;
	}
}
