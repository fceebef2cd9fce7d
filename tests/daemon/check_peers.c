/*
 * check_peers.c: server/peers.c (--per-ip-limit's count of open connections
 * per address) and server/metrics.c's model label table, without a daemon:
 * the connection past the limit is marked over and the others are not;
 * addresses are counted apart (IPv4, IPv6, an IPv4-mapped IPv6 address as
 * its IPv4 one); closing frees the place; other families are never counted.
 * Model labels: a name seen again is the same series; past
 * METRICS_MODELS_MAX names the rest share "other", so the label set stays
 * bounded. The boot time under process_start_time_seconds: /proc/stat's
 * btime line found past tens of KiB of CPU lines and interrupt counts, as
 * on a large machine, and read whole where an earlier 16 KiB read cut it.
 */
#include <check.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "server/metrics.h"
#include "server/peers.h"
#include "server/proc_metrics.h"

#include "tests/lib/suite_main.h"

static struct sockaddr_in v4(const char *text)
{
	struct sockaddr_in a = {.sin_family = AF_INET};

	ck_assert_int_eq(inet_pton(AF_INET, text, &a.sin_addr), 1);
	return a;
}

static struct sockaddr_in6 v6(const char *text)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6};

	ck_assert_int_eq(inet_pton(AF_INET6, text, &a.sin6_addr), 1);
	return a;
}

#define SA(a) ((const struct sockaddr *)(const void *)&(a))

START_TEST(test_limit_per_address)
{
	struct peers *p = peers_new(2);
	struct sockaddr_in a = v4("127.0.0.2"), b = v4("127.0.0.3");
	struct sockaddr_in6 c = v6("::1"), mapped = v6("::ffff:127.0.0.2");
	struct peer_conn *a1, *a2, *a3, *b1, *c1, *c2, *c3, *m;

	ck_assert_ptr_nonnull(p);
	a1 = peers_connect(p, SA(a));
	a2 = peers_connect(p, SA(a));
	a3 = peers_connect(p, SA(a));
	ck_assert(!peer_conn_over(a1) && !peer_conn_over(a2));
	ck_assert(peer_conn_over(a3));
	b1 = peers_connect(p, SA(b));
	ck_assert(!peer_conn_over(b1));
	c1 = peers_connect(p, SA(c));
	c2 = peers_connect(p, SA(c));
	c3 = peers_connect(p, SA(c));
	ck_assert(!peer_conn_over(c1) && !peer_conn_over(c2) && peer_conn_over(c3));
	/* ::ffff:127.0.0.2 is 127.0.0.2: three open there already */
	m = peers_connect(p, SA(mapped));
	ck_assert(peer_conn_over(m));
	peers_disconnect(p, m);
	/* closing frees the places: two closed, the next is under the limit */
	peers_disconnect(p, a3);
	peers_disconnect(p, a1);
	a1 = peers_connect(p, SA(a));
	ck_assert(!peer_conn_over(a1));
	peers_disconnect(p, a1);
	peers_disconnect(p, a2);
	peers_disconnect(p, b1);
	peers_disconnect(p, c1);
	peers_disconnect(p, c2);
	peers_disconnect(p, c3);
	peers_disconnect(p, NULL);
	peers_free(p);
}
END_TEST

START_TEST(test_other_families_uncounted)
{
	struct peers *p = peers_new(1);
	struct sockaddr_un u = {.sun_family = AF_UNIX};

	ck_assert_ptr_null(peers_connect(p, SA(u)));
	ck_assert_ptr_null(peers_connect(p, NULL));
	ck_assert(!peer_conn_over(NULL));
	peers_free(p);
	peers_free(NULL);
}
END_TEST

START_TEST(test_model_labels_bounded)
{
	struct metrics *m = metrics_new();
	struct buf out;
	char name[32];
	size_t tiny;

	ck_assert_ptr_nonnull(m);
	tiny = metrics_model(m, "tiny");
	ck_assert_uint_eq(metrics_model(m, "tiny"), tiny);
	for (int i = 0; i < METRICS_MODELS_MAX + 10; i++) {
		snprintf(name, sizeof name, "m%d", i);
		metrics_model_request(m, metrics_model(m, name), OUTCOME_OK, 0.001, 0.002);
	}
	/* "tiny" and the first 63 names have their own series; the rest "other" */
	ck_assert_uint_eq(metrics_model(m, "m70"), METRICS_MODELS_MAX);
	buf_init(&out, 8 << 20);
	ck_assert_int_eq(metrics_render(m, &out), 0);
	buf_putc(&out, '\0');
	ck_assert_ptr_nonnull(
	    strstr(out.data, "attnd_model_requests_total{model=\"m62\",outcome=\"ok\"} 1\n"));
	ck_assert_ptr_null(strstr(out.data, "model=\"m63\""));
	ck_assert_ptr_nonnull(
	    strstr(out.data, "attnd_model_requests_total{model=\"other\",outcome=\"ok\"} 11\n"));
	ck_assert_ptr_nonnull(strstr(
	    out.data, "attnd_compute_duration_seconds_bucket{model=\"m0\",le=\"0.0025\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(
	    out.data, "attnd_compute_duration_seconds_bucket{model=\"m0\",le=\"0.001\"} 0\n"));
	buf_release(&out);
	metrics_free(m);
}
END_TEST

/* A /proc/stat of a machine with `cpus` CPUs and `irqs` interrupt lines,
 * its btime line after them, in a temporary file read from its start. */
static FILE *proc_stat_of(int cpus, int irqs, long long btime)
{
	FILE *f = tmpfile();

	ck_assert_ptr_nonnull(f);
	fprintf(f, "cpu  123456789 1234 98765432 1234567890 123456 0 765432 0 0 0\n");
	for (int c = 0; c < cpus; c++)
		fprintf(f, "cpu%d 12345678 123 9876543 123456789 12345 0 76543 0 0 0\n", c);
	fprintf(f, "intr 1234567890");
	for (int i = 0; i < irqs; i++)
		fprintf(f, " %d", i % 7 == 0 ? 123456 : 0);
	fprintf(f, "\nctxt 9876543210\nbtime %lld\nprocesses 123456\nprocs_running 3\n", btime);
	rewind(f);
	return f;
}

START_TEST(test_boot_time_on_a_large_machine)
{
	FILE *f = proc_stat_of(192, 4000, 1764921600LL);
	FILE *own = fopen("/proc/stat", "r");

	/* about 35 KiB before btime */
	ck_assert_int_eq(proc_boot_time(f), 1764921600LL);
	fclose(f);
	/* about 16 KiB before btime: a 16 KiB read would end inside its line
	 * for some of these counts, and read a part of the number */
	for (int irqs = 0; irqs < 500; irqs++) {
		f = proc_stat_of(270, irqs, 1764921600LL);
		ck_assert_int_eq(proc_boot_time(f), 1764921600LL);
		fclose(f);
	}
	f = proc_stat_of(2, 10, 1764921600LL);
	ck_assert_int_eq(proc_boot_time(f), 1764921600LL);
	fclose(f);
	ck_assert_ptr_nonnull(own);
	ck_assert_int_gt(proc_boot_time(own), 0);
	fclose(own);
}
END_TEST

static Suite *peers_suite(void)
{
	Suite *s = suite_create("peers");
	TCase *tc = tcase_create("peers");

	tcase_add_test(tc, test_limit_per_address);
	tcase_add_test(tc, test_other_families_uncounted);
	tcase_add_test(tc, test_model_labels_bounded);
	tcase_add_test(tc, test_boot_time_on_a_large_machine);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, peers_suite, NULL);
}
