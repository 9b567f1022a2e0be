// SPDX-License-Identifier: MIT
/* rsockets (librdmacm's socket API): not provided; each call fails
 * EOPNOTSUPP so rstream/riostream say so instead of failing to load. */
#include <errno.h>
#include <stdarg.h>

#include <rdma/rsocket.h>

#define VCM_NOSYS(ret) do { errno = EOPNOTSUPP; return (ret); } while (0)

int rsocket(int d, int t, int p) { (void)d; (void)t; (void)p; VCM_NOSYS(-1); }
int rbind(int s, const struct sockaddr *a, socklen_t l) { (void)s; (void)a; (void)l; VCM_NOSYS(-1); }
int rlisten(int s, int b) { (void)s; (void)b; VCM_NOSYS(-1); }
int raccept(int s, struct sockaddr *a, socklen_t *l) { (void)s; (void)a; (void)l; VCM_NOSYS(-1); }
int rconnect(int s, const struct sockaddr *a, socklen_t l) { (void)s; (void)a; (void)l; VCM_NOSYS(-1); }
int rshutdown(int s, int h) { (void)s; (void)h; VCM_NOSYS(-1); }
int rclose(int s) { (void)s; VCM_NOSYS(-1); }
ssize_t rrecv(int s, void *b, size_t n, int f) { (void)s; (void)b; (void)n; (void)f; VCM_NOSYS(-1); }
ssize_t rrecvfrom(int s, void *b, size_t n, int f, struct sockaddr *a, socklen_t *l)
{ (void)s; (void)b; (void)n; (void)f; (void)a; (void)l; VCM_NOSYS(-1); }
ssize_t rrecvmsg(int s, struct msghdr *m, int f) { (void)s; (void)m; (void)f; VCM_NOSYS(-1); }
ssize_t rsend(int s, const void *b, size_t n, int f) { (void)s; (void)b; (void)n; (void)f; VCM_NOSYS(-1); }
ssize_t rsendto(int s, const void *b, size_t n, int f, const struct sockaddr *a, socklen_t l)
{ (void)s; (void)b; (void)n; (void)f; (void)a; (void)l; VCM_NOSYS(-1); }
ssize_t rsendmsg(int s, const struct msghdr *m, int f) { (void)s; (void)m; (void)f; VCM_NOSYS(-1); }
ssize_t rread(int s, void *b, size_t n) { (void)s; (void)b; (void)n; VCM_NOSYS(-1); }
ssize_t rreadv(int s, const struct iovec *v, int c) { (void)s; (void)v; (void)c; VCM_NOSYS(-1); }
ssize_t rwrite(int s, const void *b, size_t n) { (void)s; (void)b; (void)n; VCM_NOSYS(-1); }
ssize_t rwritev(int s, const struct iovec *v, int c) { (void)s; (void)v; (void)c; VCM_NOSYS(-1); }
int rpoll(struct pollfd *f, nfds_t n, int t) { (void)f; (void)n; (void)t; VCM_NOSYS(-1); }
int rselect(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{ (void)n; (void)r; (void)w; (void)e; (void)t; VCM_NOSYS(-1); }
int rgetpeername(int s, struct sockaddr *a, socklen_t *l) { (void)s; (void)a; (void)l; VCM_NOSYS(-1); }
int rgetsockname(int s, struct sockaddr *a, socklen_t *l) { (void)s; (void)a; (void)l; VCM_NOSYS(-1); }
int rsetsockopt(int s, int lv, int o, const void *v, socklen_t l)
{ (void)s; (void)lv; (void)o; (void)v; (void)l; VCM_NOSYS(-1); }
int rgetsockopt(int s, int lv, int o, void *v, socklen_t *l)
{ (void)s; (void)lv; (void)o; (void)v; (void)l; VCM_NOSYS(-1); }
int rfcntl(int s, int c, ...) { (void)s; (void)c; VCM_NOSYS(-1); }
off_t riomap(int s, void *b, size_t n, int p, int f, off_t o)
{ (void)s; (void)b; (void)n; (void)p; (void)f; (void)o; VCM_NOSYS(-1); }
int riounmap(int s, void *b, size_t n) { (void)s; (void)b; (void)n; VCM_NOSYS(-1); }
size_t riowrite(int s, const void *b, size_t n, off_t o, int f)
{ (void)s; (void)b; (void)n; (void)o; (void)f; errno = EOPNOTSUPP; return 0; }
