// SPDX-License-Identifier: MIT
/*
 * Several vrdma processes in one domain (MPI ranks): the toolstack gives
 * the domain devices 0..N-1 (`vrdmactl attach <domid> <devid>`), and each
 * process claims one by writing <FE>/owner = "<pid> <start time>" with a
 * compare-and-swap.  vfe_close() gives it back; the claim of a process
 * that died is taken over by the next one (its pid is gone, or now names
 * a process started at another time).  VRDMA_DEVICE=<devid> asks for one.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "front.h"
#include "log.h"

#define VFE_CLASS	"device/vrdma"
#define VFE_MAX_DEVS	64

/* Field 22 of /proc/<pid>/stat (after the ")" ending the name): 0 if
 * unreadable. */
static unsigned long long vfe_start_time(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	size_t n;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	for (i = 0; p && i < 20; i++)
		p = strchr(p + 1, ' ');
	if (p)
		t = strtoull(p + 1, NULL, 10);
	return t;
}

/* A claim whose process is gone (or whose pid was reused). */
static bool vfe_claim_stale(const char *owner)
{
	unsigned long long start;
	long pid;

	if (sscanf(owner, "%ld %llu", &pid, &start) != 2 || pid <= 0)
		return true;	/* not ours to trust: written by a crashed writer */
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return true;
	return vfe_start_time(pid) != start;
}

static int vfe_try(struct vfe_dev *d, uint32_t devid)
{
	char key[64], cur[64];
	int rc;

	snprintf(key, sizeof(key), VFE_CLASS "/%u/owner", devid);
	rc = vplat_key_cas(d->plat, key, NULL, d->owner);
	if (rc != -EEXIST)
		goto out;
	rc = vplat_key_read(d->plat, key, cur, sizeof(cur));
	if (rc == -ENOENT)
		rc = vplat_key_cas(d->plat, key, NULL, d->owner);	/* freed meanwhile */
	else if (!rc && vfe_claim_stale(cur))
		rc = vplat_key_cas(d->plat, key, cur, d->owner);
	else if (!rc)
		rc = -EBUSY;
out:
	if (!rc) {
		d->devid = devid;
		snprintf(d->fdir, sizeof(d->fdir), VFE_CLASS "/%u", devid);
	}
	return rc;
}

/* The domain's device numbers, sorted; 0 while the toolstack made none. */
static unsigned vfe_devids(struct vfe_dev *d, uint32_t *ids)
{
	char buf[VFE_MAX_DEVS * 12], *p, *end;
	unsigned count = 0, n = 0, i, j;
	unsigned long v;

	if (vplat_key_list(d->plat, VFE_CLASS, buf, sizeof(buf), &count))
		return 0;
	for (p = buf, i = 0; i < count && *p && n < VFE_MAX_DEVS; i++, p += strlen(p) + 1) {
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || *end || v > UINT32_MAX || *p < '0' || *p > '9')
			continue;
		for (j = n; j > 0 && ids[j - 1] > v; j--)
			ids[j] = ids[j - 1];
		ids[j] = (uint32_t)v;
		n++;
	}
	return n;
}

int vfe_claim(struct vfe_dev *d, int64_t deadline)
{
	const char *want = getenv("VRDMA_DEVICE");
	uint32_t ids[VFE_MAX_DEVS];
	unsigned n, i;
	int rc = -EBUSY;

	snprintf(d->owner, sizeof(d->owner), "%ld %llu", (long)getpid(),
		 vfe_start_time((long)getpid()));
	if (want && *want) {
		char *end;
		unsigned long v = strtoul(want, &end, 10);

		if (*end || v > UINT32_MAX)
			return -EINVAL;
		ids[0] = (uint32_t)v;
		n = 1;
	} else {
		/* The toolstack (plain host: vrdmad) may add our device just
		 * after we connected: poll for one, bounded. */
		while (!(n = vfe_devids(d, ids))) {
			struct timespec ts = { 0, 5000000 };

			if (vplat_now_ms() >= deadline)
				return -ETIMEDOUT;
			nanosleep(&ts, NULL);
		}
	}
	for (i = 0; i < n && rc; i++)
		rc = vfe_try(d, ids[i]);
	if (rc == -EBUSY || rc == -EEXIST) {
		vlog_err("vrdma: all %u vrdma devices of this domain are in use "
			 "(the toolstack adds more: vrdmactl attach <domid> <devid>)", n);
		rc = -EBUSY;
	}
	return rc;
}

void vfe_unclaim(struct vfe_dev *d)
{
	char key[64], cur[64];

	if (!d->fdir[0])
		return;
	snprintf(key, sizeof(key), "%s/owner", d->fdir);
	/* Only ours.  Nobody else writes a live process's claim (only a
	 * dead one's is taken over), so read, compare, remove is safe; an
	 * intermediate value would look stale to a claimer and be taken. */
	if (vplat_key_read(d->plat, key, cur, sizeof(cur)) == 0 && !strcmp(cur, d->owner))
		vplat_key_rm(d->plat, key);
	d->fdir[0] = 0;
}
