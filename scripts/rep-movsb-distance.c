/*
 * rep-movsb-distance: how fast `rep movsb` copies 64 KiB blocks as a
 * function of the distance between destination and source modulo 4096.
 *
 * The kernel copies socket data to and from user space with `rep movsb`
 * on CPUs with fast short rep movsb (the `fsrm` flag). On some CPUs that
 * copy is several times slower when the destination lies a few octets past
 * the source modulo the page size. docs/performance.md ("The raw stream's
 * buffer, aligned") says what that did to the raw TCP baseline.
 *
 * Build and run (one CPU, so the figures are the copy's alone):
 *   gcc -O2 -o /tmp/rep-movsb-distance scripts/rep-movsb-distance.c
 *   taskset -c 0 /tmp/rep-movsb-distance
 * Prints, for a few source offsets within a page, GB/s per distance.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK (64 * 1024)
#define SPAN (1 << 20)
#define TOTAL (1UL << 28)

static void copy_movsb(void *dst, const void *src, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

static double seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
	char *src = aligned_alloc(1 << 21, 1 << 21);
	char *dst = aligned_alloc(1 << 21, (1 << 21) + 8192);
	if (!src || !dst) {
		perror("aligned_alloc");
		return 1;
	}
	memset(src, 1, 1 << 21);
	memset(dst, 2, (1 << 21) + 8192);
	printf("GB/s of 64 KiB rep movsb copies by (destination - source) mod 4096\n");
	for (int so = 0; so < 64; so += 16) {
		printf("source at page offset %2d:", so);
		for (int dist = -8; dist <= 72; dist += 4) {
			int doff = (so + dist + 4096) % 4096;
			double t = seconds();
			for (size_t done = 0; done < TOTAL; done += BLOCK)
				copy_movsb(dst + doff + done % SPAN, src + so + done % SPAN, BLOCK);
			printf(" %d:%.0f", dist, TOTAL / (seconds() - t) / 1e9);
		}
		printf("\n");
	}
	return 0;
}
