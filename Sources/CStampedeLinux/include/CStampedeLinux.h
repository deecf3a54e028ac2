// The few Linux facilities Glibc's Swift overlay does not expose (epoll, eventfd, timerfd)
// plus small wrappers for macros and packed structs Swift cannot use directly.
#ifndef C_STAMPEDE_LINUX_H
#define C_STAMPEDE_LINUX_H


#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/// epoll_ctl with the event built here: `struct epoll_event` is packed on x86_64, so Swift must
/// never take a pointer to its `data.u64` field.
static inline int cs_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

/// Size of one `struct epoll_event`, for allocating the wait buffer.
static inline size_t cs_epoll_event_size(void) { return sizeof(struct epoll_event); }

static inline int cs_epoll_wait(int epfd, void *events, int maxevents, int timeout_ms) {
    return epoll_wait(epfd, (struct epoll_event *)events, maxevents, timeout_ms);
}

/// epoll_pwait2 (Linux 5.11): epoll_wait with a relative timeout in nanoseconds, so the next
/// timer's deadline can be the wait's own timeout (negative: no limit). Called as a raw system
/// call, because a C library may not wrap it; -1 with ENOSYS where the kernel, a seccomp filter
/// or the headers lack it (the loop then keeps its timerfd).
static inline int cs_epoll_wait_ns(int epfd, void *events, int maxevents, int64_t timeout_ns) {
#ifdef SYS_epoll_pwait2
    struct timespec ts;
    const struct timespec *timeout = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000);
        ts.tv_nsec = (long)(timeout_ns % 1000000000);
        timeout = &ts;
    }
    return (int)syscall(SYS_epoll_pwait2, epfd, events, maxevents, timeout, NULL, (size_t)8);
#else
    errno = ENOSYS;
    return -1;
#endif
}

static inline uint32_t cs_epoll_event_events(const void *events, int i) {
    return ((const struct epoll_event *)events)[i].events;
}

static inline uint64_t cs_epoll_event_data(const void *events, int i) {
    return ((const struct epoll_event *)events)[i].data.u64;
}

static inline int cs_errno(void) { return errno; }

/// CLOCK_MONOTONIC in nanoseconds: shared by every process of a host, never steps.
static inline uint64_t cs_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t cs_realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/// CPU time used by the whole process, in nanoseconds.
static inline uint64_t cs_process_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/// CPU time used by the calling thread, in nanoseconds.
static inline uint64_t cs_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int cs_timerfd_create(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

/// Arms a monotonic timerfd to fire once at an absolute deadline (0 disarms).
static inline int cs_timerfd_arm_absolute(int fd, uint64_t deadline_ns) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof(spec));
    spec.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ull);
    spec.it_value.tv_nsec = (long)(deadline_ns % 1000000000ull);
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

static inline int cs_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

static inline int cs_socket_tcp(int family) {
    return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC (defined in shim.c, which needs _GNU_SOURCE).
int cs_accept(int fd);

/// Names the calling thread (at most 15 bytes), for top -H and debuggers.
int cs_set_thread_name(const char *name);

/// Sets the calling thread's timer slack (PR_SET_TIMERSLACK), in nanoseconds. The kernel lets a
/// timed wait end up to the slack late (50 µs by default) to batch wake-ups; a loop whose timers
/// are intended send times wants 1 ns.
static inline int cs_set_timer_slack_ns(unsigned long ns) {
    return prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0);
}

static inline int cs_set_int_option(int fd, int level, int name, int value) {
    return setsockopt(fd, level, name, &value, sizeof(value));
}

/// Pending error of a non-blocking connect (SO_ERROR), or -errno if getsockopt itself failed.
static inline int cs_socket_error(int fd) {
    int value = 0;
    socklen_t len = sizeof(value);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &len) != 0) return -errno;
    return value;
}

/// Closes with RST instead of FIN (SO_LINGER 0): how a client "crashes".
static inline int cs_close_with_reset(int fd) {
    struct linger l = { 1, 0 };
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    return close(fd);
}

static inline int cs_connect_ipv4(int fd, uint32_t addr_be, uint16_t port) {
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = addr_be;
    return connect(fd, (struct sockaddr *)&sa, sizeof(sa));
}

static inline int cs_bind_ipv4(int fd, uint32_t addr_be, uint16_t port) {
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = addr_be;
    return bind(fd, (struct sockaddr *)&sa, sizeof(sa));
}

static inline int cs_connect_ipv6_loopback(int fd, uint16_t port) {
    struct sockaddr_in6 sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(port);
    sa.sin6_addr = in6addr_loopback;
    return connect(fd, (struct sockaddr *)&sa, sizeof(sa));
}

/// Fills a sockaddr_in6 from the address's 16 bytes given as two host-order halves (`high` is
/// bytes 0 to 7, most significant first), a port and a scope id: no buffer to pass from Swift.
static inline void cs_fill_sockaddr_in6(struct sockaddr_in6 *sa, uint64_t high, uint64_t low, uint16_t port, uint32_t scope_id) {
    memset(sa, 0, sizeof(*sa));
    sa->sin6_family = AF_INET6;
    sa->sin6_port = htons(port);
    for (int i = 0; i < 8; i++) {
        sa->sin6_addr.s6_addr[i] = (uint8_t)(high >> (56 - 8 * i));
        sa->sin6_addr.s6_addr[8 + i] = (uint8_t)(low >> (56 - 8 * i));
    }
    sa->sin6_scope_id = scope_id;
}

static inline int cs_connect_ipv6(int fd, uint64_t high, uint64_t low, uint16_t port, uint32_t scope_id) {
    struct sockaddr_in6 sa;
    cs_fill_sockaddr_in6(&sa, high, low, port, scope_id);
    return connect(fd, (struct sockaddr *)&sa, sizeof(sa));
}

static inline int cs_bind_ipv6(int fd, uint64_t high, uint64_t low, uint16_t port, uint32_t scope_id) {
    struct sockaddr_in6 sa;
    cs_fill_sockaddr_in6(&sa, high, low, port, scope_id);
    return bind(fd, (struct sockaddr *)&sa, sizeof(sa));
}

/// Port a bound socket got (for listeners bound to port 0).
static inline int cs_local_port(int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return -1;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

static inline ssize_t cs_send_nosignal(int fd, const void *buf, size_t len) {
    return send(fd, buf, len, MSG_NOSIGNAL);
}

static inline int cs_getrandom(void *buf, size_t len) { return (int)getrandom(buf, len, 0); }

static inline long cs_max_open_files(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
    return (long)rl.rlim_cur;
}

/// Raises the soft open-files limit to the hard one; returns the new soft limit.
static inline long cs_raise_open_files_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
    return (long)rl.rlim_cur;
}

/// Asks the kernel to send `sig` to this process when the thread that started it ends
/// (PR_SET_PDEATHSIG), so a server process of `stampede serve --processes` never outlives its
/// supervisor, however the supervisor ends (defined in shim.c).
int cs_die_with_parent(int sig);

/// A blocking, close-on-exec Unix-domain stream socket at `path`: listening (backlog
/// `backlog`) when `backlog` > 0, else connected to it. -1 with errno set on failure
/// (ENAMETOOLONG for a path longer than sun_path). Defined in shim.c.
int cs_unix_stream(const char *path, int backlog);

/// `stampede serve --max-connections`: a counter of open connections that every server process
/// of a `--processes` group shares, in one page of the file at `path` mapped MAP_SHARED (the
/// supervisor creates the file, `create` 1; its processes map the same one, `create` 0). NULL
/// with errno set when the file cannot be opened or mapped.
static inline int64_t *cs_shared_counter(const char *path, int create) {
    int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), 0600);
    if (fd < 0) return NULL;
    if (create && ftruncate(fd, 4096) != 0) { int e = errno; close(fd); errno = e; return NULL; }
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) { errno = e; return NULL; }
    return (int64_t *)p;
}

/// Takes one of `limit` slots counted at `*count` (atomically, whichever process shares it):
/// 1, or 0 when all are taken. A compare-and-swap loop, so the count never passes `limit`.
static inline int cs_slot_acquire(int64_t *count, int64_t limit) {
    int64_t n = __atomic_load_n(count, __ATOMIC_RELAXED);
    while (n < limit) {
        if (__atomic_compare_exchange_n(count, &n, n + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return 1;
    }
    return 0;
}

/// Gives back a slot `cs_slot_acquire` took.
static inline void cs_slot_release(int64_t *count) { __atomic_fetch_sub(count, 1, __ATOMIC_ACQ_REL); }

/// Slots taken now.
static inline int64_t cs_slot_count(const int64_t *count) { return __atomic_load_n(count, __ATOMIC_RELAXED); }

#endif
