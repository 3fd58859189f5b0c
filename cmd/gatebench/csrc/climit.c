// climit: gatebench's "limit" column. Ping-pong or bulk over one loopback
// TCP connection with BOTH ends in this one thread, around one epoll
// instance (level-triggered): every wait is the thread's own, so no thread
// or process switch happens per message. It is the floor of the system
// calls a round trip needs (2 writes, 2 reads, 2 epoll_waits), what a Go
// poller adds its scheduling to.
//
//	climit pingpong SIZE MILLISECONDS
//	climit bulk SIZE MILLISECONDS
//
// prints one line: "ops bytes seconds cpu_ns" (cpu: getrusage user+sys),
// for the measured part after a warm-up; exit status 1 on an error.
#define _GNU_SOURCE
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
#include <fcntl.h>
#include <arpa/inet.h>

static int ep;

static void die(const char *what) {
	perror(what);
	exit(1);
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long long cpu_ns(void) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

// waitfor blocks in epoll_wait until fd reports one of events.
static void waitfor(int fd, unsigned events) {
	struct epoll_event ev[4];
	for (;;) {
		int n = epoll_wait(ep, ev, 4, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		for (int i = 0; i < n; i++)
			if (ev[i].data.fd == fd && (ev[i].events & (events | EPOLLERR | EPOLLHUP)))
				return;
	}
}

static void setmask(int fd, unsigned events) {
	struct epoll_event ev = {.events = events, .data.fd = fd};
	if (epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev) < 0)
		die("epoll_ctl");
}

static void readfull(int fd, char *buf, size_t n) {
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);
		if (k > 0) {
			got += k;
		} else if (k == 0) {
			fprintf(stderr, "unexpected EOF\n");
			exit(1);
		} else if (errno == EAGAIN) {
			waitfor(fd, EPOLLIN);
		} else if (errno != EINTR) {
			die("read");
		}
	}
}

static void writefull(int fd, const char *buf, size_t n) {
	size_t put = 0;
	while (put < n) {
		ssize_t k = write(fd, buf + put, n - put);
		if (k >= 0) {
			put += k;
		} else if (errno == EAGAIN) {
			setmask(fd, EPOLLIN | EPOLLOUT);
			waitfor(fd, EPOLLOUT);
			setmask(fd, EPOLLIN);
		} else if (errno != EINTR) {
			die("write");
		}
	}
}

// pair connects c to a listener on 127.0.0.1 and accepts a; both end up
// non-blocking, TCP_NODELAY (as Go's are), registered with ep for EPOLLIN.
static void pair(int *c, int *a) {
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof sa;
	int one = 1;
	int ln = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ln < 0)
		die("socket");
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(ln, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ln, 1) < 0 ||
	    getsockname(ln, (struct sockaddr *)&sa, &len) < 0)
		die("listen");
	*c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*c < 0 || connect(*c, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("connect");
	*a = accept4(ln, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (*a < 0)
		die("accept");
	close(ln);
	fcntl(*c, F_SETFL, fcntl(*c, F_GETFL) | O_NONBLOCK);
	int fds[2] = {*c, *a};
	for (int i = 0; i < 2; i++) {
		setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0)
			die("epoll_ctl");
	}
}

static void pingpong(int c, int a, size_t size, double secs) {
	char *msg = calloc(1, size), *buf = malloc(size);
	for (int i = 0; i < 1000; i++) { // warm up
		writefull(c, msg, size);
		readfull(a, buf, size);
		writefull(a, buf, size);
		readfull(c, buf, size);
	}
	long long ops = 0, cpu0 = cpu_ns();
	double t0 = now(), t;
	do {
		for (int i = 0; i < 64; i++) {
			writefull(c, msg, size); // the client's message
			readfull(a, buf, size);  // the server reads it (epoll_wait on EAGAIN)
			writefull(a, buf, size); // and echoes it
			readfull(c, buf, size);  // the client reads the echo
			ops++;
		}
		t = now();
	} while (t - t0 < secs);
	printf("%lld %lld %.9f %lld\n", ops, ops * (long long)size, t - t0, cpu_ns() - cpu0);
}

// bulk writes size-byte chunks on c and reads them on a with a size-byte
// buffer, switching whenever one side would block.
static void bulk(int c, int a, size_t size, double secs) {
	char *chunk = calloc(1, size), *buf = malloc(size);
	long long writes = 0, got = 0, cpu0 = 0;
	size_t off = 0;
	double t0 = 0, t = 0;
	int warm = 256, measuring = 0;
	setmask(c, EPOLLOUT);
	for (;;) {
		int progress = 0;
		ssize_t k = write(c, chunk + off, size - off);
		if (k > 0) {
			progress = 1;
			off += k;
			if (off == size) {
				off = 0;
				if (!measuring && --warm == 0) {
					measuring = 1;
					got = 0;
					cpu0 = cpu_ns();
					t0 = now();
				} else if (measuring && ++writes % 16 == 0 && (t = now()) - t0 >= secs) {
					break;
				}
			}
		} else if (k < 0 && errno != EAGAIN && errno != EINTR) {
			die("write");
		}
		for (;;) {
			ssize_t r = read(a, buf, size);
			if (r > 0) {
				progress = 1;
				got += r;
			} else if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
				break;
			} else {
				die("read");
			}
		}
		if (!progress) {
			struct epoll_event ev[4];
			if (epoll_wait(ep, ev, 4, -1) < 0 && errno != EINTR)
				die("epoll_wait");
		}
	}
	// The bytes written in the measured part (the warm-up still buffered
	// balances the tail left in the buffers, as in the Go bulk workload).
	printf("%lld %lld %.9f %lld\n", writes, writes * (long long)size, t - t0, cpu_ns() - cpu0);
	(void)got;
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: climit pingpong|bulk SIZE MILLISECONDS\n");
		return 2;
	}
	size_t size = strtoul(argv[2], NULL, 10);
	double secs = strtod(argv[3], NULL) / 1000;
	if (size < 1 || secs <= 0) {
		fprintf(stderr, "climit: bad size or duration\n");
		return 2;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	int c, a;
	pair(&c, &a);
	if (strcmp(argv[1], "pingpong") == 0)
		pingpong(c, a, size, secs);
	else if (strcmp(argv[1], "bulk") == 0)
		bulk(c, a, size, secs);
	else {
		fprintf(stderr, "climit: unknown mode %s\n", argv[1]);
		return 2;
	}
	return 0;
}
