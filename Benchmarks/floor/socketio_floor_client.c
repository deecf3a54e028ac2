/* The floor for Socket.IO: the least CPU a paced Socket.IO client can spend per acknowledged emit
   on this machine. C, epoll (level-triggered), one thread, epoll_pwait2's nanosecond timeout as
   the pacing clock (no timerfd). The same exchange as Benchmarks/socketio-vs-python.sh asks of
   every generator:
     N clients each open a WebSocket to /socket.io/?EIO=4&transport=websocket, connect the
     namespace "/" ("40"), join room-{i % ROOMS} with an ack ("420[...]" -> "430[true]"),
     then together emit RATE `say` events per second with an ack ("42<id>[\"say\",{...}]"),
     round-robin over the clients at fixed intended send times (an open model); the server
     answers "43<id>[true]" and sends "42[\"said\",{...}]" to both clients of the room.
   Server pings ("2") are answered ("3"). No JSON parsing: a frame is classified by its first bytes.
   CPU (getrusage, user+sys) is taken over the emit window only (first emit to the last emit's
   intended time), as the Python generators measure themselves.
   usage: socketio_floor_client PORT CLIENTS RATE SECONDS
     -> one JSON line: {"tool":"c-floor-socketio", clients, emits, acks, said, cpu_s, cpu_us_per_ack}
   Loopback only (127.0.0.1). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CONN_BUF 16384
struct conn { int fd; size_t have; unsigned char buf[CONN_BUF]; unsigned id; };

static long long now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
static double cpu(void) { struct rusage r; getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6; }
static void die(const char *what) { perror(what); exit(1); }

/* One masked text frame (key 1,2,3,4) around p[0..n). */
static void send_text(int fd, const char *p, size_t n) {
  unsigned char f[512]; size_t l = 0; static const unsigned char key[4] = {1, 2, 3, 4};
  if (n > 400) { fprintf(stderr, "frame too long\n"); exit(1); }
  f[l++] = 0x81;
  if (n < 126) f[l++] = 0x80 | (unsigned char)n; else { f[l++] = 0x80 | 126; f[l++] = n >> 8; f[l++] = n & 255; }
  memcpy(f + l, key, 4); l += 4;
  for (size_t i = 0; i < n; i++) f[l++] = p[i] ^ key[i & 3];
  if (write(fd, f, l) != (ssize_t)l) die("write");
}

static long acks, said, pongs, others;

/* Consumes whole server frames (unmasked) from c->buf; returns the first byte(s) of the last
   text payload seen in *kind (0 when none). */
static int consume(struct conn *c, char *kind) {
  size_t off = 0; int frames = 0;
  while (c->have - off >= 2) {
    unsigned char *h = c->buf + off; size_t len = h[1] & 127, hl = 2;
    if (len == 126) { if (c->have - off < 4) break; len = (h[2] << 8) | h[3]; hl = 4; }
    else if (len == 127) { fprintf(stderr, "64-bit frame\n"); exit(1); }
    if (c->have - off < hl + len) break;
    const char *p = (const char *)h + hl;
    if ((h[0] & 15) == 1 && len > 0) {
      if (p[0] == '2' && len == 1) { send_text(c->fd, "3", 1); pongs++; }
      else if (len >= 2 && p[0] == '4' && p[1] == '3') acks++;
      else if (len >= 4 && p[0] == '4' && p[1] == '2' && p[2] == '[') said++;
      else others++;
      if (kind) { kind[0] = p[0]; kind[1] = len > 1 ? p[1] : 0; kind[2] = len > 2 ? p[2] : 0; }
    }
    off += hl + len; frames++;
  }
  memmove(c->buf, c->buf + off, c->have - off); c->have -= off;
  return frames;
}

static void read_some(struct conn *c) {
  ssize_t r = read(c->fd, c->buf + c->have, CONN_BUF - c->have);
  if (r <= 0) { fprintf(stderr, "read %zd (errno %d)\n", r, errno); exit(1); }
  c->have += r;
}

/* Blocking until a text frame starting with `want` has been consumed. */
static void await_frame(struct conn *c, const char *want) {
  for (;;) {
    char kind[3] = {0};
    if (consume(c, kind) && strncmp(kind, want, strlen(want)) == 0) return;
    read_some(c);
  }
}

int main(int argc, char **argv) {
  if (argc < 5) { fprintf(stderr, "usage: %s PORT CLIENTS RATE SECONDS\n", argv[0]); return 2; }
  int port = atoi(argv[1]), n = atoi(argv[2]); double rate = atof(argv[3]), secs = atof(argv[4]);
  if (port <= 0 || n <= 0 || rate <= 0 || secs <= 0) { fprintf(stderr, "bad arguments\n"); return 2; }
  int rooms = n / 2 > 0 ? n / 2 : 1;
  struct conn *cs = calloc(n, sizeof *cs);
  int ep = epoll_create1(0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)}; a.sin_addr.s_addr = htonl(0x7f000001);
  char req[512]; int rl = snprintf(req, sizeof req,
    "GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
    "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", port);
  for (int i = 0; i < n; i++) {
    struct conn *c = &cs[i];
    c->fd = socket(AF_INET, SOCK_STREAM, 0); int one = 1; setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, 4);
    if (connect(c->fd, (void *)&a, sizeof a)) die("connect");
    if (write(c->fd, req, rl) != rl) die("write");
    for (;;) { read_some(c); unsigned char *e = memmem(c->buf, c->have, "\r\n\r\n", 4);
      if (e) { size_t h = e + 4 - c->buf; memmove(c->buf, c->buf + h, c->have - h); c->have -= h; break; } }
    await_frame(c, "0{");
    send_text(c->fd, "40", 2); await_frame(c, "40");
    char j[64]; int jl = snprintf(j, sizeof j, "420[\"join\",\"room-%d\"]", i % rooms);
    send_text(c->fd, j, jl); await_frame(c, "43");
    c->id = 1;
    struct epoll_event e = {.events = EPOLLIN, .data.u32 = i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e)) die("epoll_ctl");
  }
  acks = said = 0;
  long long interval = (long long)(1e9 / rate), t0 = now_ns(), next = t0, end = t0 + (long long)(secs * 1e9);
  double c0 = cpu(); long emits = 0; int who = 0; struct epoll_event ev[512];
  while (next < end) {
    long long t = now_ns();
    while (next <= t && next < end) {
      struct conn *c = &cs[who]; char m[128];
      int ml = snprintf(m, sizeof m, "42%u[\"say\",{\"room\":\"room-%d\",\"text\":\"%d:%lld\"}]", c->id++, who % rooms, who, next);
      send_text(c->fd, m, ml); emits++; next += interval; who = (who + 1) % n;
    }
    long long wait = next - now_ns(); if (wait < 0) wait = 0;
    struct timespec ts = {.tv_sec = wait / 1000000000LL, .tv_nsec = wait % 1000000000LL};
    int k = epoll_pwait2(ep, ev, 512, &ts, NULL);
    if (k < 0 && errno != EINTR) die("epoll_pwait2");
    for (int x = 0; x < k; x++) { struct conn *c = &cs[ev[x].data.u32]; read_some(c); consume(c, NULL); }
  }
  double c1 = cpu();
  /* Drain for up to 2 s, outside the CPU window, so the ack count covers the window's emits. */
  long long stop = now_ns() + 2000000000LL;
  while (acks < emits && now_ns() < stop) {
    struct timespec ts = {0, 50000000};
    int k = epoll_pwait2(ep, ev, 512, &ts, NULL);
    for (int x = 0; x < k; x++) { struct conn *c = &cs[ev[x].data.u32]; read_some(c); consume(c, NULL); }
  }
  printf("{\"tool\":\"c-floor-socketio\",\"clients\":%d,\"emits\":%ld,\"acks\":%ld,\"said\":%ld,\"pongs\":%ld,"
         "\"cpu_s\":%.3f,\"cpu_us_per_ack\":%.1f}\n",
         n, emits, acks, said, pongs, c1 - c0, (c1 - c0) * 1e6 / (acks ? acks : 1));
  return acks == emits ? 0 : 1;
}
