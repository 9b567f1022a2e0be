// SPDX-License-Identifier: MIT
/*
 * The sysfs view: what middleware reads beside the verbs calls, in a tree
 * laid out as the kernel's /sys (class/infiniband/vrdma0/ with the port's
 * state, rate, GIDs and their types; class/infiniband_verbs/<dev_name>/).
 * Open MPI's openib BTL takes no device unless ibv_get_sysfs_path()'s
 * class/infiniband is a directory; ibv_devinfo reads board_id under
 * ibdev_path.  vrdma has no kernel device, so this library writes the tree
 * itself, one per process: ibv_get_sysfs_path() makes its root,
 * ibv_get_device_list() the device's files, from what libvrdma reports
 * through the functions ibv_query_device and ibv_query_port use.
 *
 * Where: mkdtemp() in $XDG_RUNTIME_DIR, else $TMPDIR, else /tmp (the first
 * that is a directory of ours or root's in which no one else can rename
 * our entries), so the root is new, ours and 0700: a tree someone else
 * made, or one left from before, is never used.  The process holds a
 * shared flock on its root for its life (forked children share it); at
 * exit or unload the last holder removes the tree.  The tree of a process
 * killed before that stays unlocked: the next process that makes a tree
 * there removes the ones of ours unlocked and a minute old (the minute
 * covers the moment between another's mkdtemp() and its flock).
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vvb.h"

#define VS_PREFIX	"vrdma-sysfs."
#define VS_STALE_S	60	/* an unlocked tree this old: its process died */
#define VS_DEPTH	8	/* deeper than any tree made here */
/* room for the longest path handed out: root + "/class/infiniband_verbs/" +
 * dev_name inside IBV_SYSFS_PATH_MAX */
#define VS_PARENT_MAX	(IBV_SYSFS_PATH_MAX - 64)
#define VS_UVERBS_ABI	6	/* the kernel's uverbs ABI (class attribute) */
#define VS_DEV_ABI	1	/* a provider's (per-device attribute) */
_Static_assert(VVB_PORT == 1, "the view's files name port 1");

static struct {
	pthread_mutex_t lock;
	int tried;			/* the root was attempted */
	int dev_tried;			/* the device's files were attempted */
	int fd;				/* the root, flocked; -1 */
	dev_t dev;			/* ... its inode, so that a program */
	ino_t ino;			/* that closed fd is seen at exit */
	char root[IBV_SYSFS_PATH_MAX];	/* "" without a tree */
} vs = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

/* Empties directory @dfd, @depth levels at most: 0 or the first -errno. */
static int vs_empty(int dfd, int depth)
{
	struct dirent *e;
	DIR *d;
	int fd, sub, r, rc = 0;

	if (depth <= 0)
		return -ELOOP;
	fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			continue;
		if (errno != EISDIR) {
			rc = rc ? rc : -errno;
			continue;
		}
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			rc = rc ? rc : -errno;
			continue;
		}
		r = vs_empty(sub, depth - 1);
		close(sub);
		if (!r && unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR))
			r = -errno;
		rc = rc ? rc : r;
	}
	closedir(d);
	return rc;
}

/* Removes tree @name of @parent (open as @fd) unless a process holds it:
 * 0, -EWOULDBLOCK (held) or -errno. */
static int vs_remove(int parent, const char *name, int fd)
{
	int rc;

	if (flock(fd, LOCK_EX | LOCK_NB))
		return -errno;
	rc = vs_empty(fd, VS_DEPTH);
	if (!rc && unlinkat(parent, name, AT_REMOVEDIR))
		rc = -errno;
	return rc;
}

/* Trees of ours in @parent whose processes died without removing them. */
static void vs_sweep(const char *parent)
{
	struct stat st, fst;
	struct dirent *e;
	time_t now = time(NULL);
	DIR *d = opendir(parent);
	int fd;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, VS_PREFIX, strlen(VS_PREFIX)))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
		    st.st_mtime > now - VS_STALE_S)
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* one that stays (held, or a failure) waits for the next sweep */
		if (fstat(fd, &fst) == 0 && fst.st_ino == st.st_ino && fst.st_dev == st.st_dev)
			(void)vs_remove(dirfd(d), e->d_name, fd);
		close(fd);
	}
	closedir(d);
}

/* A parent we may make the root in: absolute, short enough, a directory
 * of ours or root's, and none but its owner can rename entries there. */
static int vs_parent_ok(const char *p)
{
	struct stat st;

	if (!p || p[0] != '/' || strlen(p) > VS_PARENT_MAX)
		return 0;
	if (stat(p, &st) || !S_ISDIR(st.st_mode))
		return 0;
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return 0;
	return !(st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_mode & S_ISVTX);
}

/* Directory @path under @dfd, 0755 whatever the umask (the files of
 * the tree go in after it); EEXIST passes. */
static int vs_mkdir(int dfd, const char *path)
{
	if (mkdirat(dfd, path, 0755) && errno != EEXIST)
		return -errno;
	return fchmodat(dfd, path, 0755, 0) ? -errno : 0;
}

/* "a/b/c" under @dfd, each as needed. */
static int vs_mkdirs(int dfd, const char *path)
{
	char p[IBV_SYSFS_PATH_MAX];
	char *s, c;
	int rc;

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	for (s = p;; s++) {
		if (*s && *s != '/')
			continue;
		c = *s;
		*s = '\0';
		rc = vs_mkdir(dfd, p);
		if (rc)
			return rc;
		if (!c)
			return 0;
		*s = c;
	}
}

/* One file: the value and a newline, as sysfs shows it. */
__attribute__((format(printf, 3, 4)))
static int vs_put(int dfd, const char *path, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	ssize_t w;
	int n, fd, rc = 0;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(buf) - 1)
		return -EOVERFLOW;
	buf[n++] = '\n';
	fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0444))			/* whatever the umask */
		rc = -errno;
	w = rc ? 0 : write(fd, buf, (size_t)n);
	if (!rc && w != n)
		rc = w < 0 ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	return rc;
}

/* The root's skeleton in @path (just made by mkdtemp), flocked in *fd. */
static int vs_fill_root(const char *path, int *fdp, struct stat *st)
{
	int fd, rc;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* 0700 whatever the umask; the flock says "in use" to sweepers */
	if (fstat(fd, st) || fchmod(fd, 0700) || flock(fd, LOCK_SH)) {
		rc = -errno;
		goto err;
	}
	rc = st->st_uid == geteuid() ? 0 : -EPERM;
	if (!rc)
		rc = vs_mkdirs(fd, "class/infiniband");
	if (!rc)
		rc = vs_mkdirs(fd, "class/infiniband_verbs");
	if (!rc)
		rc = vs_put(fd, "class/infiniband_verbs/abi_version", "%d", VS_UVERBS_ABI);
	if (rc)
		goto err;
	*fdp = fd;
	return 0;

err:
	if (vs_empty(fd, VS_DEPTH) == 0 && rmdir(path))
		rc = rc ? rc : -errno;
	close(fd);
	return rc;
}

/* vs.lock held.  The first call makes the root; 0 or -errno. */
static int vs_root_locked(void)
{
	const char *cand[] = {
		secure_getenv("XDG_RUNTIME_DIR"), secure_getenv("TMPDIR"), "/tmp",
	};
	char path[IBV_SYSFS_PATH_MAX];
	struct stat st;
	unsigned int i;
	int rc = -ENOENT, fd = -1;

	if (vs.tried)
		return vs.root[0] ? 0 : -ENOENT;
	vs.tried = 1;
	for (i = 0; i < sizeof(cand) / sizeof(cand[0]); i++) {
		if (!vs_parent_ok(cand[i]))
			continue;
		/* (vs_parent_ok checked the length) */
		if (snprintf(path, sizeof(path), "%s/" VS_PREFIX "XXXXXX",
			     cand[i]) >= (int)sizeof(path))
			continue;
		if (!mkdtemp(path)) {
			rc = -errno;
			continue;
		}
		rc = vs_fill_root(path, &fd, &st);
		if (rc)
			continue;
		vs_sweep(cand[i]);
		memcpy(vs.root, path, sizeof(vs.root));
		vs.fd = fd;
		vs.dev = st.st_dev;
		vs.ino = st.st_ino;
		return 0;
	}
	fprintf(stderr, "vrdma verbs: no sysfs view (%s): middleware that looks for "
		"class/infiniband there will not take " VVB_DEV_NAME "\n", strerror(-rc));
	return rc;
}

static const char *vs_state(unsigned int s)
{
	static const char *const n[] = { "NOP", "DOWN", "INIT", "ARMED", "ACTIVE",
					 "ACTIVE_DEFER" };

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "UNKNOWN";
}

static const char *vs_phys_state(unsigned int s)
{
	static const char *const n[] = { "<unknown>", "Sleep", "Polling", "Disabled",
					 "PortConfigurationTraining", "LinkUp",
					 "LinkErrorRecovery", "Phy Test" };

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "<unknown>";
}

/* ports/N/rate as the kernel writes it: "100 Gb/sec (4X EDR)". */
static int vs_rate(int dfd, const char *path, const struct ibv_port_attr *p)
{
	static const struct { uint8_t code; uint16_t tenths; const char *name; } speeds[] = {
		{ 2, 50, " DDR" }, { 4, 100, " QDR" }, { 8, 100, " FDR10" },
		{ 16, 140, " FDR" }, { 32, 250, " EDR" }, { 64, 500, " HDR" },
		{ 128, 1000, " NDR" },
	};
	unsigned int tenths = 25, width, i;	/* SDR */
	const char *name = "";

	for (i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].code == p->active_speed) {
			tenths = speeds[i].tenths;
			name = speeds[i].name;
		}
	switch (p->active_width) {
	case 2: width = 4; break;
	case 4: width = 8; break;
	case 8: width = 12; break;
	case 16: width = 2; break;
	default: width = 1; break;
	}
	tenths *= width;
	return vs_put(dfd, path, "%u%s Gb/sec (%uX%s)", tenths / 10,
		      tenths % 10 ? ".5" : "", width, name);
}

static void vs_guid(char *s, size_t n, __be64 g)
{
	uint64_t h = be64toh(g);

	snprintf(s, n, "%04x:%04x:%04x:%04x", (unsigned int)(h >> 48) & 0xffff,
		 (unsigned int)(h >> 32) & 0xffff, (unsigned int)(h >> 16) & 0xffff,
		 (unsigned int)h & 0xffff);
}

/* class/infiniband/<name>/: the device and its port, in directory @fd. */
static int vs_ibdev(int fd, struct vrdma_device *d, const struct ibv_device *dev)
{
	static const char *const dirs[] = { "device", "ports/1/gids", "ports/1/pkeys",
					    "ports/1/gid_attrs/types" };
	struct vrdma_device_attr da;
	struct ibv_device_attr a;
	struct ibv_port_attr p;
	uint8_t gid[VRDMA_GID_LEN];
	char guid[32], desc[64];
	const char *node;
	unsigned int i;
	int rc;

	rc = vrdma_query_device(d, &da);
	if (!rc)
		rc = vrdma_query_gid(d, gid);
	if (rc)
		return -rc;
	vvb_device_attr(&da, gid, &a);
	vvb_port_attr(&da, &p);
	/* node_desc as rdma-ndd writes it: "<host> <device>" */
	node = vrdma_node_name(d);
	if (snprintf(desc, sizeof(desc), "%s%s%s", node && *node ? node : "",
		     node && *node ? " " : "", dev->name) < 0)
		return -EINVAL;			/* (cut at 64 bytes, as the kernel's) */
	vs_guid(guid, sizeof(guid), a.node_guid);

	for (i = 0; !rc && i < sizeof(dirs) / sizeof(dirs[0]); i++)
		rc = vs_mkdirs(fd, dirs[i]);
	rc = rc ? rc : vs_put(fd, "node_type", "%d: CA", IBV_NODE_CA);
	rc = rc ? rc : vs_put(fd, "node_guid", "%s", guid);
	rc = rc ? rc : vs_put(fd, "sys_image_guid", "%s", guid);
	rc = rc ? rc : vs_put(fd, "fw_ver", "%s", a.fw_ver);
	rc = rc ? rc : vs_put(fd, "hca_type", "vrdma");
	rc = rc ? rc : vs_put(fd, "hw_rev", "0x%x", a.hw_ver);
	rc = rc ? rc : vs_put(fd, "board_id", "vrdma");
	rc = rc ? rc : vs_put(fd, "node_desc", "%s", desc);
	/* no PCI function: no NUMA node, as sysfs says for one without */
	rc = rc ? rc : vs_put(fd, "device/numa_node", "-1");
	rc = rc ? rc : vs_put(fd, "device/vendor", "0x%04x", a.vendor_id);
	rc = rc ? rc : vs_put(fd, "device/device", "0x%04x", a.vendor_part_id);

	rc = rc ? rc : vs_put(fd, "ports/1/state", "%d: %s", p.state, vs_state(p.state));
	rc = rc ? rc : vs_put(fd, "ports/1/phys_state", "%u: %s", p.phys_state,
			      vs_phys_state(p.phys_state));
	rc = rc ? rc : vs_rate(fd, "ports/1/rate", &p);
	rc = rc ? rc : vs_put(fd, "ports/1/link_layer", "%s",
			      p.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
	rc = rc ? rc : vs_put(fd, "ports/1/lid", "0x%x", p.lid);
	rc = rc ? rc : vs_put(fd, "ports/1/sm_lid", "0x%x", p.sm_lid);
	rc = rc ? rc : vs_put(fd, "ports/1/lmc", "%u", p.lmc);
	rc = rc ? rc : vs_put(fd, "ports/1/sm_sl", "%u", p.sm_sl);
	rc = rc ? rc : vs_put(fd, "ports/1/cap_mask", "0x%08x", p.port_cap_flags);
	/* the GID table: one entry (ibv_query_gid), RoCE v2 (ibv_query_gid_type);
	 * no gid_attrs/ndevs: there is no netdev behind it */
	rc = rc ? rc : vs_put(fd, "ports/1/gids/0",
			      "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
			      gid[0], gid[1], gid[2], gid[3], gid[4], gid[5], gid[6], gid[7],
			      gid[8], gid[9], gid[10], gid[11], gid[12], gid[13], gid[14], gid[15]);
	rc = rc ? rc : vs_put(fd, "ports/1/gid_attrs/types/0", "RoCE v2");
	rc = rc ? rc : vs_put(fd, "ports/1/pkeys/0", "0xffff");
	return rc;
}

/* The device's two directories under the root (vs.lock held). */
static int vs_device_locked(struct vrdma_device *d, const struct ibv_device *dev)
{
	char path[IBV_SYSFS_PATH_MAX];
	int fd, rc;

	snprintf(path, sizeof(path), "class/infiniband/%s", dev->name);
	if (mkdirat(vs.fd, path, 0755) || fchmodat(vs.fd, path, 0755, 0))
		return -errno;
	fd = openat(vs.fd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = vs_ibdev(fd, d, dev);
	close(fd);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "class/infiniband_verbs/%s", dev->dev_name);
	if (mkdirat(vs.fd, path, 0755) || fchmodat(vs.fd, path, 0755, 0))
		return -errno;
	fd = openat(vs.fd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = vs_put(fd, "ibdev", "%s", dev->name);
	rc = rc ? rc : vs_put(fd, "abi_version", "%d", VS_DEV_ABI);
	close(fd);
	return rc;
}

void vvb_sysfs_device(struct vrdma_device *d, struct ibv_device *dev)
{
	char ib[IBV_SYSFS_PATH_MAX], uv[IBV_SYSFS_PATH_MAX];
	int rc;

	pthread_mutex_lock(&vs.lock);
	if (vs.dev_tried || vs_root_locked())
		goto out;
	vs.dev_tried = 1;
	rc = vs_device_locked(d, dev);
	/* EEXIST: a forked parent or child of ours wrote it */
	if (rc && rc != -EEXIST) {
		fprintf(stderr, "vrdma verbs: sysfs view of %s in %s: %s\n", dev->name,
			vs.root, strerror(-rc));
		goto out;
	}
	/* (VS_PARENT_MAX leaves room for both) */
	if (snprintf(ib, sizeof(ib), "%s/class/infiniband/%s", vs.root,
		     dev->name) >= (int)sizeof(ib) ||
	    snprintf(uv, sizeof(uv), "%s/class/infiniband_verbs/%s", vs.root,
		     dev->dev_name) >= (int)sizeof(uv))
		goto out;
	memcpy(dev->ibdev_path, ib, sizeof(dev->ibdev_path));
	memcpy(dev->dev_path, uv, sizeof(dev->dev_path));
out:
	pthread_mutex_unlock(&vs.lock);
}

const char *ibv_get_sysfs_path(void)
{
	const char *p;

	pthread_mutex_lock(&vs.lock);
	p = vs_root_locked() ? "/sys" : vs.root;
	pthread_mutex_unlock(&vs.lock);
	return p;
}

/*
 * At exit or unload: drop our flock, then remove the tree unless a forked
 * child still holds it (it removes the tree at its own exit).  Runs after
 * the program's threads are done with verbs, so without vs.lock.
 */
__attribute__((destructor)) static void vs_fini(void)
{
	struct stat st;
	int fd;

	if (vs.fd < 0)
		return;
	/* a program that closed our fd may have its own under that number */
	if (fstat(vs.fd, &st) == 0 && st.st_dev == vs.dev && st.st_ino == vs.ino)
		close(vs.fd);
	vs.fd = -1;
	fd = open(vs.root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	/* held by a child, or a failure: left to it or to the next sweep */
	(void)vs_remove(AT_FDCWD, vs.root, fd);
	close(fd);
}

/* A real file read, so programs probing sysfs get the usual answers. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char *path;
	ssize_t len;
	int fd;

	if (!dir || !file || !buf || !size) {
		errno = EINVAL;
		return -1;
	}
	if (asprintf(&path, "%s/%s", dir, file) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len <= 0)
		return -1;
	if ((size_t)len == size)
		len--;				/* truncated: room for the NUL */
	buf[len] = '\0';
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	return (int)len;
}
