/*
 * bench_tokenizer.c: one tokenizer's speed, load cost and worst inputs
 * (tokenizer/tokenizer.h, api/tokenizer_file.h), on one thread.
 *
 *   bench_tokenizer [--runs N] [--load-runs N] [--chunk-lines N]
 *                   [--stress-limit S] [--no-stress] SPEC [NAME=FILE]...
 *
 * SPEC is gpt2:DIR (DIR/vocab.json and DIR/merges.txt) or a tokenizer.json.
 * bench/tokenizer_bench.py runs it for each tokenizer and makes the table.
 * Three kinds of row, TSV on stdout (`#` lines are notes):
 *
 *   speed   NAME bytes units tokens attnd_MB/s ceiling_MB/s of_ceiling runs
 *     FILE is encoded in units of 64 lines (--chunk-lines; a line with its
 *     newline), one tok_encode call a unit, add_special_tokens off: what
 *     the oracle's tests/tokenizer/oracle/speed.mjs does, so both count the
 *     same tokens. MB = 10^6 bytes of UTF-8 text. The ceiling is one scalar
 *     pass that decodes every code point of the same text: the least work
 *     any tokenizer does, at this machine's speed (the best of 5 passes, as
 *     a pass takes milliseconds). Ceiling and encoding alternate in rounds
 *     after a warm-up (the machine has 2 cores and other people's jobs):
 *     the speeds are medians over the rounds, of_ceiling the median over
 *     rounds of the ratio of the two timed seconds apart.
 *   load    ms peak_MB kept_MB runs
 *     Reading the file(s) and building the tokenizer, as the server does:
 *     read, parse into a spec, free the file's bytes, build. Each run is a
 *     forked child that first resets its peak RSS (`5` into
 *     /proc/self/clear_refs), so peak_MB = VmHWM after the load - VmRSS
 *     before it, kept_MB = VmRSS after - VmRSS before (the built tokenizer
 *     and what malloc keeps). MB = 10^6 bytes. Medians of the runs.
 *   stress  NAME bytes tokens ms
 *     Inputs that break a tokenizer that is not linear, each one tok_encode
 *     call (median of 3, or one run when it takes over a second): `word`
 *     1 MiB of pseudo-random lowercase letters with no space; `repeat`
 *     1 MiB of "a"; `zwj` 100,000 emoji ZWJ sequences back to back (a family
 *     of four and a woman technologist with a skin tone, alternating). Each
 *     runs in a forked child stopped after S seconds (default 10): such a
 *     row reads `-` tokens and `>S000` ms.
 *
 * Exit status 0 unless the bench itself fails (a file, the tokenizer, an
 * encoding error); nothing here judges a speed.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/tokenizer_file.h"
#include "bench/timing.h"
#include "tokenizer/tokenizer.h"

enum { RUNS_DEFAULT = 5, LOAD_RUNS_DEFAULT = 5, STRESS_RUNS = 3, MAX_RUNS = 25 };

/* A stress input still encoding after this long is stopped (--stress-limit). */
enum { STRESS_LIMIT_S = 10 };

/* Lines a tok_encode call (--chunk-lines): speed.mjs's unit. */
enum { CHUNK_LINES = 64 };

/* Ceiling passes a round, the best taken. */
enum { CEILING_PASSES = 5 };

/* A run slower than this (the warm-up says) cuts the rounds to 3. */
#define SLOW_RUN_S 3.0

static volatile size_t sink; /* keeps results alive */

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "bench_tokenizer: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
	exit(EXIT_FAILURE);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		die("out of memory", NULL);
	return p;
}

/* The whole of a file (malloc'd, NUL-terminated), or NULL. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	long n = -1;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		data = xmalloc((size_t)n + 1);
		if (fread(data, 1, (size_t)n, f) != (size_t)n) {
			free(data);
			data = NULL;
		} else {
			data[n] = '\0';
			*len = (size_t)n;
		}
	}
	fclose(f);
	return data;
}

/* ---- loading ----------------------------------------------------------------- */

/* Reads and builds the tokenizer SPEC names: read, spec, free the bytes, build
 * (the order the server keeps, so the file and the built tables never peak
 * together). NULL with the message in err. */
static struct tokenizer *load_spec(const char *spec, char *err, size_t errlen)
{
	struct tokenizer *t = NULL;
	struct tok_spec ts;
	char vpath[4096], mpath[4096];
	char *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0;
	int rc;

	memset(&ts, 0, sizeof ts);
	if (strncmp(spec, "gpt2:", 5) == 0) {
		snprintf(vpath, sizeof vpath, "%s/vocab.json", spec + 5);
		snprintf(mpath, sizeof mpath, "%s/merges.txt", spec + 5);
		a = slurp(vpath, &alen);
		b = slurp(mpath, &blen);
		if (a == NULL || b == NULL) {
			snprintf(err, errlen, "cannot read %s/vocab.json or merges.txt", spec + 5);
			goto out;
		}
		rc = api_tokenizer_spec_gpt2(&ts, a, alen, vpath, b, blen, mpath, err, errlen);
	} else {
		a = slurp(spec, &alen);
		if (a == NULL) {
			snprintf(err, errlen, "cannot read %s", spec);
			goto out;
		}
		rc = api_tokenizer_spec_json(&ts, a, alen, spec, err, errlen);
	}
	free(a);
	free(b);
	a = b = NULL;
	if (rc == 0 && api_tokenizer_build(&ts, spec, &t, err, errlen) != 0)
		t = NULL;
out:
	free(a);
	free(b);
	return t;
}

/* A "VmRSS:" or "VmHWM:" line of /proc/self/status, in KiB; -1 if absent. */
static long status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t klen = strlen(key);
	long v = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, key, klen) == 0) {
			v = strtol(line + klen, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* Resets this process's peak RSS to its current RSS (Linux >= 4.0). */
static int reset_peak_rss(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	int ok;

	if (f == NULL)
		return -1;
	ok = fputs("5", f) >= 0;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

struct load_result {
	double seconds;
	long peak_kib, kept_kib; /* growth over the RSS before the load */
	int ok, peak_reset;
};

/* One load in a forked child; the child reports through a pipe. */
static struct load_result load_once(const char *spec)
{
	struct load_result r;
	int fd[2];
	pid_t pid;
	int status;

	memset(&r, 0, sizeof r);
	if (pipe(fd) != 0)
		die("pipe", NULL);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork", NULL);
	if (pid == 0) {
		struct tokenizer *t;
		char err[1024];
		long rss0;
		double t0;

		close(fd[0]);
		r.peak_reset = reset_peak_rss() == 0;
		rss0 = status_kib("VmRSS:");
		t0 = bench_now_s();
		t = load_spec(spec, err, sizeof err);
		r.seconds = bench_now_s() - t0;
		r.peak_kib = status_kib("VmHWM:") - rss0;
		r.kept_kib = status_kib("VmRSS:") - rss0;
		r.ok = t != NULL;
		if (t == NULL)
			fprintf(stderr, "bench_tokenizer: %s\n", err);
		if (write(fd[1], &r, sizeof r) != (ssize_t)sizeof r)
			_exit(1);
		_exit(0); /* the tokenizer goes with the process */
	}
	close(fd[1]);
	if (read(fd[0], &r, sizeof r) != (ssize_t)sizeof r)
		r.ok = 0;
	close(fd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		r.ok = 0;
	return r;
}

static void bench_load(const char *spec, int runs)
{
	double sec[MAX_RUNS], peak[MAX_RUNS], kept[MAX_RUNS];
	int reset = 1;
	int i;

	for (i = 0; i < runs; i++) {
		struct load_result r = load_once(spec);

		if (!r.ok)
			die("loading failed", spec);
		sec[i] = r.seconds;
		peak[i] = (double)r.peak_kib * 1024.0 / 1e6;
		kept[i] = (double)r.kept_kib * 1024.0 / 1e6;
		reset = reset && r.peak_reset;
	}
	if (!reset)
		printf("# load: clear_refs refused: peak_MB includes the parent's peak\n");
	printf("load\t%.1f\t%.1f\t%.1f\t%d\n", 1e3 * bench_median(sec, (size_t)runs),
	       bench_median(peak, (size_t)runs), bench_median(kept, (size_t)runs), runs);
}

/* ---- speed ------------------------------------------------------------------- */

struct text {
	const char *name;
	char *bytes; /* [len] */
	size_t len;
	size_t *unit_start; /* [nunits + 1]: unit i is [unit_start[i], unit_start[i + 1]) */
	size_t nunits;
};

/* NAME=FILE read whole and cut into units of chunk_lines lines (a line ends
 * after its newline, or at the end of the file), as speed.mjs cuts it. */
static void text_load(struct text *tx, char *arg, size_t chunk_lines)
{
	char *eq = strchr(arg, '=');
	size_t i, n, lines;

	if (eq == NULL)
		die("a text is NAME=FILE", arg);
	*eq = '\0';
	tx->name = arg;
	tx->bytes = slurp(eq + 1, &tx->len);
	if (tx->bytes == NULL || tx->len == 0)
		die("cannot read", eq + 1);
	tx->unit_start = xmalloc((tx->len / chunk_lines + 2) * sizeof *tx->unit_start);
	tx->unit_start[0] = 0;
	for (n = 0, lines = 0, i = 0; i < tx->len; i++) {
		if (tx->bytes[i] == '\n' && ++lines == chunk_lines) {
			tx->unit_start[++n] = i + 1;
			lines = 0;
		}
	}
	if (tx->unit_start[n] < tx->len)
		tx->unit_start[++n] = tx->len;
	tx->nunits = n;
}

static void text_release(struct text *tx)
{
	free(tx->bytes);
	free(tx->unit_start);
}

/* The ceiling: decodes every code point of the text, scalar, and sums them.
 * Lead bytes are taken as valid (the text is checked by the encoder). */
static double time_ceiling(const struct text *tx)
{
	const unsigned char *p = (const unsigned char *)tx->bytes;
	const unsigned char *end = p + tx->len;
	uint64_t sum = 0;
	double t0 = bench_now_s();

	while (p < end) {
		uint32_t c = *p;

		if (c < 0x80) {
			p += 1;
		} else if (c < 0xe0 && p + 1 < end) {
			c = ((c & 0x1f) << 6) | (p[1] & 0x3f);
			p += 2;
		} else if (c < 0xf0 && p + 2 < end) {
			c = ((c & 0x0f) << 12) | ((uint32_t)(p[1] & 0x3f) << 6) | (p[2] & 0x3f);
			p += 3;
		} else if (p + 3 < end) {
			c = ((c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3f) << 12) |
			    ((uint32_t)(p[2] & 0x3f) << 6) | (p[3] & 0x3f);
			p += 4;
		} else {
			p += 1;
		}
		sum += c;
	}
	sink += (size_t)sum;
	return bench_now_s() - t0;
}

/* The ceiling's best of CEILING_PASSES passes: one pass takes a few ms, which
 * one preemption on a shared machine would double. */
static double time_ceiling_best(const struct text *tx)
{
	double best = time_ceiling(tx);
	int k;

	for (k = 1; k < CEILING_PASSES; k++) {
		double s = time_ceiling(tx);

		if (s < best)
			best = s;
	}
	return best;
}

/* Encodes the text unit by unit; *tokens gets the count. */
static double time_encode(const struct tokenizer *t, const struct text *tx, size_t *tokens)
{
	struct tok_encoding enc;
	size_t total = 0, bad = 0, i;
	double t0 = bench_now_s();
	double t1;

	for (i = 0; i < tx->nunits; i++) {
		size_t a = tx->unit_start[i];
		size_t b = tx->unit_start[i + 1];

		if (tok_encode(t, tx->bytes + a, b - a, 0, &enc, &bad) != TOK_OK)
			die("tok_encode failed on", tx->name);
		total += enc.n;
		tok_encoding_release(&enc);
	}
	t1 = bench_now_s();
	*tokens = total;
	return t1 - t0;
}

static void bench_speed(const struct tokenizer *t, const struct text *tx, int runs)
{
	double enc_s[MAX_RUNS], ceil_s[MAX_RUNS], ratio[MAX_RUNS];
	size_t tokens = 0;
	double mb = (double)tx->len / 1e6;
	int r;

	/* warm-up: caches, page faults, the allocator's arenas */
	time_ceiling(tx);
	if (time_encode(t, tx, &tokens) > SLOW_RUN_S && runs > 3)
		runs = 3;
	for (r = 0; r < runs; r++) {
		ceil_s[r] = time_ceiling_best(tx);
		enc_s[r] = time_encode(t, tx, &tokens);
		ratio[r] = ceil_s[r] / enc_s[r]; /* (MB / enc_s) / (MB / ceil_s) */
	}
	printf("speed\t%s\t%zu\t%zu\t%zu\t%.2f\t%.1f\t%.4f\t%d\n", tx->name, tx->len, tx->nunits,
	       tokens, mb / bench_median(enc_s, (size_t)runs),
	       mb / bench_median(ceil_s, (size_t)runs), bench_median(ratio, (size_t)runs), runs);
	fflush(stdout);
}

/* ---- stress ------------------------------------------------------------------ */

enum { STRESS_BYTES = 1 << 20, ZWJ_SEQUENCES = 100000 };

/* U+1F468 ZWJ U+1F469 ZWJ U+1F467 ZWJ U+1F466: a family of four (25 bytes) */
static const char family[] = "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d"
			     "\xf0\x9f\x91\xa7\xe2\x80\x8d\xf0\x9f\x91\xa6";
/* U+1F469 U+1F3FD ZWJ U+1F4BB: a woman technologist, medium skin tone (15 bytes) */
static const char technologist[] = "\xf0\x9f\x91\xa9\xf0\x9f\x8f\xbd\xe2\x80\x8d\xf0\x9f\x92\xbb";

/* The stress input `name` (malloc'd); its length in *len. */
static char *stress_input(const char *name, size_t *len)
{
	char *s;
	size_t i;

	if (strcmp(name, "zwj") == 0) {
		size_t fl = sizeof family - 1, tl = sizeof technologist - 1, n = 0;

		s = xmalloc((ZWJ_SEQUENCES / 2 + 1) * (fl + tl));
		for (i = 0; i < ZWJ_SEQUENCES; i++) {
			const char *seq = (i % 2) ? technologist : family;
			size_t sl = (i % 2) ? tl : fl;

			memcpy(s + n, seq, sl);
			n += sl;
		}
		*len = n;
		return s;
	}
	s = xmalloc(STRESS_BYTES);
	if (strcmp(name, "repeat") == 0) {
		memset(s, 'a', STRESS_BYTES);
	} else {
		uint64_t x = 0x9e3779b97f4a7c15u; /* xorshift64 */

		for (i = 0; i < STRESS_BYTES; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			s[i] = (char)('a' + (x >> 32) % 26);
		}
	}
	*len = STRESS_BYTES;
	return s;
}

struct stress_result {
	size_t tokens;
	double seconds;
	int ok;
};

/* The median of up to STRESS_RUNS encodings of s (one when it takes over a
 * second), in this process. */
static struct stress_result stress_time(const struct tokenizer *t, const char *s, size_t len)
{
	struct stress_result res;
	struct tok_encoding enc;
	double sec[STRESS_RUNS];
	size_t bad = 0;
	int r;

	memset(&res, 0, sizeof res);
	for (r = 0; r < STRESS_RUNS; r++) {
		double t0 = bench_now_s();

		if (tok_encode(t, s, len, 0, &enc, &bad) != TOK_OK)
			return res;
		sec[r] = bench_now_s() - t0;
		res.tokens = enc.n;
		tok_encoding_release(&enc);
		if (sec[r] > 1.0) {
			r++;
			break;
		}
	}
	res.seconds = bench_median(sec, (size_t)r);
	res.ok = 1;
	return res;
}

/* Each stress input in a forked child that SIGALRM stops after limit_s
 * seconds, so a tokenizer that is not linear shows as a row, not a hang. */
static void bench_stress(const struct tokenizer *t, unsigned limit_s)
{
	static const char *const names[] = {"word", "repeat", "zwj"};
	size_t k;

	for (k = 0; k < sizeof names / sizeof names[0]; k++) {
		struct stress_result res;
		size_t len = 0;
		char *s = stress_input(names[k], &len);
		int fd[2], status;
		pid_t pid;

		memset(&res, 0, sizeof res);
		if (pipe(fd) != 0)
			die("pipe", NULL);
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			die("fork", NULL);
		if (pid == 0) {
			close(fd[0]);
			alarm(limit_s);
			res = stress_time(t, s, len);
			_exit(write(fd[1], &res, sizeof res) == (ssize_t)sizeof res ? 0 : 1);
		}
		close(fd[1]);
		if (read(fd[0], &res, sizeof res) != (ssize_t)sizeof res)
			res.ok = 0;
		close(fd[0]);
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid", NULL);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
			printf("stress\t%s\t%zu\t-\t>%u000\n", names[k], len, limit_s);
		else if (!res.ok)
			die("tok_encode failed on stress input", names[k]);
		else
			printf("stress\t%s\t%zu\t%zu\t%.1f\n", names[k], len, res.tokens,
			       1e3 * res.seconds);
		fflush(stdout);
		free(s);
	}
}

/* ---- main -------------------------------------------------------------------- */

/* An option's count in [1, max]. */
static int parse_count(const char *s, int max)
{
	int n = atoi(s);

	if (n < 1 || n > max)
		die("a count out of range", s);
	return n;
}

static void print_machine(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	char line[128];

	if (f != NULL && fgets(line, sizeof line, f) != NULL)
		printf("# load average: %s", line);
	if (f != NULL)
		fclose(f);
	printf("# nproc: %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
}

int main(int argc, char **argv)
{
	int runs = RUNS_DEFAULT, load_runs = LOAD_RUNS_DEFAULT, stress = 1;
	unsigned stress_limit = STRESS_LIMIT_S;
	size_t chunk_lines = CHUNK_LINES;
	struct tokenizer *t;
	const char *spec;
	char err[1024];
	int i = 1;

	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = parse_count(argv[++i], MAX_RUNS);
		else if (strcmp(argv[i], "--load-runs") == 0 && i + 1 < argc)
			load_runs = parse_count(argv[++i], MAX_RUNS);
		else if (strcmp(argv[i], "--chunk-lines") == 0 && i + 1 < argc)
			chunk_lines = (size_t)parse_count(argv[++i], 1 << 30);
		else if (strcmp(argv[i], "--stress-limit") == 0 && i + 1 < argc)
			stress_limit = (unsigned)parse_count(argv[++i], 3600);
		else if (strcmp(argv[i], "--no-stress") == 0)
			stress = 0;
		else
			die("unknown option", argv[i]);
	}
	if (i >= argc) {
		fprintf(stderr,
			"usage: bench_tokenizer [--runs N] [--load-runs N] [--chunk-lines N] "
			"[--stress-limit S] [--no-stress] SPEC [NAME=FILE]...\n");
		return 2;
	}
	spec = argv[i++];
	print_machine();
	printf("# tokenizer: %s\n", spec);
	bench_load(spec, load_runs);

	t = load_spec(spec, err, sizeof err);
	if (t == NULL)
		die(err, NULL);
	for (; i < argc; i++) {
		struct text tx;

		text_load(&tx, argv[i], chunk_lines);
		bench_speed(t, &tx, runs);
		text_release(&tx);
	}
	if (stress)
		bench_stress(t, stress_limit);
	tok_free(t);
	return 0;
}
