// accept4 is a GNU extension: declared only under _GNU_SOURCE, which must not leak into the
// header Swift imports (it would make Glibc's and this module's definitions differ).
#define _GNU_SOURCE
#include <stddef.h>
#include <sys/socket.h>

int cs_accept(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

#include <pthread.h>

int cs_set_thread_name(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <unistd.h>

int cs_die_with_parent(int sig) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0, 0, 0);
}

int cs_unix_stream(const char *path, int backlog) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n >= sizeof(sa.sun_path)) { errno = ENAMETOOLONG; return -1; }
    memcpy(sa.sun_path, path, n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int r = backlog > 0 ? bind(fd, (struct sockaddr *)&sa, sizeof(sa)) : connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    if (r == 0 && backlog > 0) r = listen(fd, backlog);
    if (r != 0) { int e = errno; close(fd); errno = e; return -1; }
    return fd;
}
