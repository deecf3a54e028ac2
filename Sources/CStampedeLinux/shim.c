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
