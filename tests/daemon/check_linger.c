/*
 * check_linger.c: server/linger.c's lingering close (linger.h) on loopback
 * TCP pairs, without a daemon: which closes it takes (only a socket whose
 * sending side is shut while its client may still send), that a client
 * still sending is read and never reset and its close ends the lingering,
 * and the bounds: LINGER_MAX sockets at once (past it: not taken, counted
 * "full"), LINGER_SECONDS each (counted "time").
 *
 * Each pair is a connected client socket and the server's accepted one,
 * which the test hands over as libmicrohttpd does (shut for writing, then
 * lingerer_on_close, then its own close). Every wait is bounded by WAIT_MS.
 */
#define _GNU_SOURCE /* struct tcp_info, TCP_INFO */
#include <check.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/linger.h"
#include "server/metrics.h"

#include "tests/lib/suite_main.h"

enum { WAIT_MS = 5000 };

struct tcp_pair {
	int client, server;
};

/* A connected loopback pair; the listener is closed again. */
static struct tcp_pair tcp_pair(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct tcp_pair p;

	ck_assert_int_ge(l, 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(listen(l, 4), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
	p.client = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(p.client, (struct sockaddr *)&a, sizeof a), 0);
	p.server = accept(l, NULL, NULL);
	ck_assert_int_ge(p.server, 0);
	close(l);
	return p;
}

static int tcp_state(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;

	memset(&ti, 0, sizeof ti);
	ck_assert_int_eq(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
	return ti.tcpi_state;
}

/* What libmicrohttpd does when it closes a connection: shut for writing,
 * tell the lingerer, close. Returns lingerer_on_close's answer. */
static int server_closes(struct lingerer *l, int fd)
{
	int taken;

	shutdown(fd, SHUT_WR);
	taken = lingerer_on_close(l, fd);
	close(fd);
	return taken;
}

/* Waits until the lingerer holds n sockets; 1 when it did within WAIT_MS. */
static int wait_count(struct lingerer *l, size_t n)
{
	const struct timespec tick = {0, 10 * 1000 * 1000};

	for (int i = 0; i < WAIT_MS / 10; i++) {
		if (lingerer_count(l) == n)
			return 1;
		nanosleep(&tick, NULL);
	}
	return 0;
}

/* The sample `series` ("name{labels} ") of /metrics, as rendered: the line
 * that starts with it (not its # HELP line). */
static double sample(struct metrics *m, const char *series)
{
	struct buf b;
	char line[160];
	const char *at;
	double v = -1;

	snprintf(line, sizeof line, "\n%s", series);
	buf_init(&b, 1 << 20);
	ck_assert_int_eq(metrics_render(m, &b), 0);
	buf_putc(&b, '\0');
	at = strstr(b.data, line);
	if (at != NULL)
		v = strtod(at + strlen(line), NULL);
	buf_release(&b);
	return v;
}

/* Reads what fd holds until EOF; the bytes read, or -1 on an error (a reset). */
static long read_to_eof(int fd)
{
	char buf[4096];
	long total = 0;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, WAIT_MS) != 1)
			return -1;
		n = recv(fd, buf, sizeof buf, 0);
		if (n == 0)
			return total;
		if (n < 0)
			return -1;
		total += n;
	}
}

START_TEST(test_open_connection_not_taken)
{
	struct metrics *m = metrics_new();
	char err[128];
	struct lingerer *l = lingerer_new(m, err, sizeof err);
	struct tcp_pair p = tcp_pair();

	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(send(p.client, "abc", 3, 0), 3);
	/* not shut: a keep-alive connection, never the lingerer's */
	ck_assert_int_eq(lingerer_on_close(l, p.server), 0);
	/* the client closed first: it sends nothing more */
	close(p.client);
	ck_assert(wait_count(l, 0));
	shutdown(p.server, SHUT_WR);
	ck_assert_int_ne(tcp_state(p.server), TCP_FIN_WAIT1);
	ck_assert_int_eq(lingerer_on_close(l, p.server), 0);
	close(p.server);
	lingerer_free(l);
	metrics_free(m);
}
END_TEST

START_TEST(test_sending_client_read_until_it_closes)
{
	static char data[256 << 10];
	struct metrics *m = metrics_new();
	char err[128];
	struct lingerer *l = lingerer_new(m, err, sizeof err);
	struct tcp_pair p = tcp_pair();

	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(send(p.server, "answer", 6, 0), 6);
	ck_assert_int_eq(send(p.client, data, 1000, 0), 1000); /* unread at the close */
	ck_assert_int_eq(server_closes(l, p.server), 1);
	ck_assert_uint_eq(lingerer_count(l), 1);
	/* the client sends on after the close: read, not reset */
	for (size_t sent = 0; sent < sizeof data;) {
		ssize_t n = send(p.client, data + sent, sizeof data - sent, 0);

		ck_assert_int_gt(n, 0);
		sent += (size_t)n;
	}
	ck_assert_int_eq(read_to_eof(p.client), 6);
	ck_assert_int_eq(tcp_state(p.client), TCP_CLOSE_WAIT);
	close(p.client);
	ck_assert(wait_count(l, 0));
	ck_assert_double_eq(sample(m, "attnd_lingering_closes_total{end=\"client_closed\"} "), 1);
	ck_assert_double_eq(sample(m, "attnd_connections_lingering "), 0);
	lingerer_free(l);
	metrics_free(m);
}
END_TEST

/* A client that sends on without end is read LINGER_BYTES, then closed: a
 * fast sender ends by bytes, long before LINGER_SECONDS. */
START_TEST(test_bounded_in_bytes)
{
	static char data[256 << 10];
	struct metrics *m = metrics_new();
	char err[128];
	struct lingerer *l = lingerer_new(m, err, sizeof err);
	struct tcp_pair p = tcp_pair();
	size_t sent = 0;

	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(send(p.client, "x", 1, 0), 1);
	ck_assert_int_eq(server_closes(l, p.server), 1);
	/* sends until the lingerer closes (an error): the bound and what the
	 * two sockets buffer, well under 4 times the bound */
	while (sent < 4 * (size_t)LINGER_BYTES) {
		ssize_t n = send(p.client, data, sizeof data, MSG_NOSIGNAL);

		if (n <= 0)
			break;
		sent += (size_t)n;
	}
	ck_assert_msg(sent >= (size_t)LINGER_BYTES && sent < 4 * (size_t)LINGER_BYTES,
		      "sent %zu bytes before the close", sent);
	ck_assert(wait_count(l, 0));
	ck_assert_double_eq(sample(m, "attnd_lingering_closes_total{end=\"bytes\"} "), 1);
	close(p.client);
	lingerer_free(l);
	metrics_free(m);
}
END_TEST

START_TEST(test_bounded_in_count_and_time)
{
	struct metrics *m = metrics_new();
	char err[128];
	struct lingerer *l = lingerer_new(m, err, sizeof err);
	struct tcp_pair p[LINGER_MAX + 1];
	struct timespec t0, t1;
	double took;

	ck_assert_ptr_nonnull(l);
	for (size_t i = 0; i <= LINGER_MAX; i++) {
		p[i] = tcp_pair();
		ck_assert_int_eq(send(p[i].client, "x", 1, 0), 1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < LINGER_MAX; i++)
		ck_assert_int_eq(server_closes(l, p[i].server), 1);
	/* one past the bound: closed at once, counted */
	ck_assert_int_eq(server_closes(l, p[LINGER_MAX].server), 0);
	ck_assert_double_eq(sample(m, "attnd_lingering_closes_total{end=\"full\"} "), 1);
	ck_assert_double_eq(sample(m, "attnd_connections_lingering "), LINGER_MAX);
	/* the clients stay open and silent: each lingers LINGER_SECONDS */
	ck_assert(wait_count(l, 0));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	ck_assert_msg(took >= LINGER_SECONDS - 0.1 && took < LINGER_SECONDS + 2.0,
		      "lingered %.2f s", took);
	ck_assert_double_eq(sample(m, "attnd_lingering_closes_total{end=\"time\"} "), LINGER_MAX);
	for (size_t i = 0; i <= LINGER_MAX; i++)
		close(p[i].client);
	lingerer_free(l);
	metrics_free(m);
}
END_TEST

START_TEST(test_free_closes_what_lingers)
{
	struct metrics *m = metrics_new();
	char err[128];
	struct lingerer *l = lingerer_new(m, err, sizeof err);
	struct tcp_pair p = tcp_pair();

	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(send(p.client, "x", 1, 0), 1);
	ck_assert_int_eq(server_closes(l, p.server), 1);
	lingerer_free(l); /* stops at once, the socket closed */
	ck_assert_int_eq(read_to_eof(p.client), 0);
	ck_assert_double_eq(sample(m, "attnd_lingering_closes_total{end=\"stopped\"} "), 1);
	close(p.client);
	metrics_free(m);
}
END_TEST

static Suite *linger_suite(void)
{
	Suite *s = suite_create("linger");
	TCase *tc = tcase_create("linger");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_open_connection_not_taken);
	tcase_add_test(tc, test_sending_client_read_until_it_closes);
	tcase_add_test(tc, test_bounded_in_bytes);
	tcase_add_test(tc, test_bounded_in_count_and_time);
	tcase_add_test(tc, test_free_closes_what_lingers);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, linger_suite, NULL);
}
