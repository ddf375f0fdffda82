/*
 * framing-cost: what MPA framing alone costs a loopback TCP stream's CPU.
 *
 * Software iWARP moves an RDMA Write or a Read Response of 1 MiB as FPDUs
 * of 65 518 payload octets: a 16-octet header (MPA length, DDP and RDMAP
 * header) before each payload, 6 octets after it (MPA pad and CRC). Both
 * ends scatter and gather: the payload comes straight from the source and
 * goes straight into the target, the framing octets from and into a small
 * scratch area. So between consecutive payloads the stream carries 22
 * octets that neither buffer holds, and the distance between where the
 * kernel keeps a payload octet and where the receiver wants it moves by 22
 * octets from one FPDU to the next, modulo the page size. The plain stream
 * it is compared with writes 1 MiB at a time and reads into 1 MiB at a
 * time, at a fixed distance.
 *
 * This program times both, with no RPC, no RDMA semantics and nothing of
 * ours in between: one sender thread and one receiver thread in one
 * process, over 127.0.0.1, the receiver filling `BUFFERS` page-aligned
 * 1 MiB buffers in turn (as eight READs outstanding expose eight 1 MiB
 * Write chunks). Runs alternate plain and framed; the figure is the
 * process's CPU time per MiB (both threads), and its median over runs.
 * docs/performance.md ("MPA framing's own cost, and the goals without
 * pacing") says what it measured.
 *
 * Build and run (pinned, so the CPU time is the whole cost):
 *   gcc -O2 -pthread -o /tmp/framing-cost scripts/framing-cost.c
 *   taskset -c 0 /tmp/framing-cost [RUNS [MIB_PER_RUN [BUFFERS]]]
 * Defaults: 8 runs of each, 2000 MiB per run, 8 buffers.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MIB (1 << 20)
#define PAYLOAD 65518 /* payload octets per FPDU, as software iWARP's */
#define HEAD 16       /* MPA length + DDP/RDMAP tagged header */
#define TAIL 6        /* MPA pad (2) + CRC (4) */
#define MAX_IOV 64
#define MAX_RUNS 64

struct run {
	int framed, buffers, port;
	long mib;
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* The iovecs of one 1 MiB message: framing from `frame`, payload at `data`. */
static int message_iov(struct iovec *iov, char *data, char *frame, int framed)
{
	if (!framed) {
		iov[0] = (struct iovec){ data, MIB };
		return 1;
	}
	int k = 0;
	size_t off = 0;
	iov[k++] = (struct iovec){ frame, HEAD };
	while (off < MIB) {
		size_t p = MIB - off < PAYLOAD ? MIB - off : PAYLOAD;
		iov[k++] = (struct iovec){ data + off, p };
		off += p;
		/* pad and CRC, then the next FPDU's header if there is one */
		iov[k++] = (struct iovec){ frame + 64, off < MIB ? TAIL + HEAD : TAIL };
	}
	return k;
}

/* Moves the whole of `iov` with `op` (writev or readv), resuming after short transfers. */
static void all(int fd, struct iovec *iov, int n, ssize_t (*op)(int, const struct iovec *, int))
{
	int i = 0;
	while (i < n) {
		ssize_t got = op(fd, iov + i, n - i > 1024 ? 1024 : n - i);
		if (got <= 0)
			die(op == writev ? "writev" : "readv");
		while (i < n && (size_t)got >= iov[i].iov_len)
			got -= iov[i++].iov_len;
		if (i < n) {
			iov[i].iov_base = (char *)iov[i].iov_base + got;
			iov[i].iov_len -= got;
		}
	}
}

static void *sender(void *arg)
{
	struct run *r = arg;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(r->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa))
		die("connect");
	int one = 1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	char *data = aligned_alloc(4096, MIB);
	static char frame[4096];
	if (!data)
		die("aligned_alloc");
	memset(data, 7, MIB);
	for (long m = 0; m < r->mib; m++) {
		struct iovec iov[MAX_IOV];
		int n = message_iov(iov, data, frame, r->framed);
		all(s, iov, n, writev);
	}
	close(s);
	free(data);
	return NULL;
}

static double cpu_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* One run; returns the process's CPU milliseconds per MiB. */
static double one_run(int framed, long mib, int buffers, char **bufs)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof sa;
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sa, &len))
		die("listen");
	struct run r = { framed, buffers, ntohs(sa.sin_port), mib };
	double t0 = cpu_seconds();
	pthread_t t;
	if (pthread_create(&t, NULL, sender, &r))
		die("pthread_create");
	int c = accept(l, NULL, NULL);
	if (c < 0)
		die("accept");
	static char frame[4096];
	for (long m = 0; m < mib; m++) {
		struct iovec iov[MAX_IOV];
		int n = message_iov(iov, bufs[m % buffers], frame, framed);
		all(c, iov, n, readv);
	}
	pthread_join(t, NULL);
	double ms = (cpu_seconds() - t0) * 1e3 / mib;
	close(c);
	close(l);
	return ms;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 8;
	long mib = argc > 2 ? atol(argv[2]) : 2000;
	int buffers = argc > 3 ? atoi(argv[3]) : 8;
	if (runs < 1 || runs > MAX_RUNS || mib < 1 || buffers < 1) {
		fprintf(stderr, "usage: %s [RUNS (1-%d) [MIB_PER_RUN [BUFFERS]]]\n", argv[0], MAX_RUNS);
		return 2;
	}
	char **bufs = malloc(sizeof(char *) * buffers);
	for (int i = 0; bufs && i < buffers; i++) {
		bufs[i] = aligned_alloc(4096, MIB);
		if (!bufs[i])
			die("aligned_alloc");
		memset(bufs[i], 0, MIB); /* faulted in before any run is timed */
	}
	if (!bufs)
		die("malloc");
	double ms[2][MAX_RUNS];
	for (int i = 0; i < runs; i++)
		for (int framed = 0; framed < 2; framed++) {
			ms[framed][i] = one_run(framed, mib, buffers, bufs);
			printf("run %d %-6s %.3f ms of CPU per MiB\n", i + 1, framed ? "framed" : "plain",
			       ms[framed][i]);
		}
	for (int framed = 0; framed < 2; framed++)
		qsort(ms[framed], runs, sizeof(double), cmp);
	double p = ms[0][runs / 2], f = ms[1][runs / 2];
	printf("median over %d runs of %ld MiB into %d buffers: plain %.3f, framed %.3f ms of CPU "
	       "per MiB (framed/plain %.2f)\n",
	       runs, mib, buffers, p, f, f / p);
	return 0;
}
