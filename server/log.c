/*
 * log.c: formats each line into a buf, then hands it whole to log_writer.c.
 */
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "api/error.h"
#include "common/fmt.h"
#include "log_writer.h"
#include "common/jsonstr.h"

enum { LOG_LINE_MAX = 8192, ACCESS_LINE_GUESS = 512 };

static enum log_format log_format_chosen = LOG_TEXT;

void log_set_format(enum log_format format)
{
	log_format_chosen = format;
}

/* The text of the current second, "2024-05-01T12:00:00", per thread: gmtime
 * and strftime run once a second, not once a line. */
struct second_text {
	time_t sec;
	size_t len; /* 0: nothing cached yet */
	char text[32];
};

static _Thread_local struct second_text second_cache;

/* RFC 3339 UTC time with milliseconds: 2024-05-01T12:00:00.123Z */
static void put_timestamp(struct buf *b)
{
	struct second_text *c = &second_cache;
	struct timespec ts;
	struct tm tm;
	long ms;
	char frac[5];

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
		buf_puts(b, "-");
		return;
	}
	if (c->len == 0 || c->sec != ts.tv_sec) {
		c->len = 0;
		if (gmtime_r(&ts.tv_sec, &tm) != NULL)
			c->len = strftime(c->text, sizeof c->text, "%Y-%m-%dT%H:%M:%S", &tm);
		if (c->len == 0) {
			buf_puts(b, "-");
			return;
		}
		c->sec = ts.tv_sec;
	}
	ms = ts.tv_nsec / 1000000L;
	frac[0] = '.';
	frac[1] = (char)('0' + ms / 100);
	frac[2] = (char)('0' + ms / 10 % 10);
	frac[3] = (char)('0' + ms % 10);
	frac[4] = 'Z';
	buf_append(b, c->text, c->len);
	buf_append(b, frac, sizeof frac);
}

/* " %d" of a status, without printf. */
static void put_status(struct buf *b, int status)
{
	if (status < 0) {
		buf_putc(b, '-');
		buf_put_u64(b, 0ULL - (unsigned long long)status);
		return;
	}
	buf_put_u64(b, (unsigned long long)status);
}

/* "%.3f" of milliseconds, without printf (fmt_fixed is exact). */
static void put_ms(struct buf *b, double ms)
{
	char text[FMT_FIXED_MAX];

	buf_append(b, text, fmt_fixed(text, ms, 3));
}

/* Set on the thread that must not wait for the log (log_never_wait). */
static _Thread_local int never_wait;

void log_never_wait(void)
{
	never_wait = 1;
}

/* Hands b plus a newline to the writer (log_writer.h) as one line, waiting
 * for room only when wait is set and the thread may wait; 0, or -1 when the
 * line was dropped: not formatted, or no room on a thread that never waits. */
static int emit(struct buf *b, int wait)
{
	if (buf_putc(b, '\n') != 0 || b->failed)
		return -1;
	if (never_wait || !wait)
		return log_writer_try_put(b->data, b->len);
	log_writer_put(b->data, b->len);
	return 0;
}

static int log_line(const char *level, int wait, const char *fmt, va_list ap)
{
	int rc;
	char msg[2048];
	struct buf b;

	vsnprintf(msg, sizeof msg, fmt, ap);
	/* MHD's messages end in a newline; one line per event */
	msg[strcspn(msg, "\r\n")] = '\0';
	buf_init(&b, LOG_LINE_MAX);
	if (log_format_chosen == LOG_JSON) {
		buf_puts(&b, "{\"ts\":\"");
		put_timestamp(&b);
		buf_printf(&b, "\",\"level\":\"%s\",\"msg\":", level);
		jsonstr_put(&b, msg);
		buf_putc(&b, '}');
	} else {
		/* libmicrohttpd's messages quote the client's path as sent
		 * ("Failed to send the response headers for the request for
		 * `/x\x1b[31m...'"): no control byte of a client's reaches the
		 * terminal or the collector of a text log, as in put_field */
		for (char *p = msg; *p != '\0'; p++) {
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		}
		put_timestamp(&b);
		buf_printf(&b, " %s %s", level, msg);
	}
	rc = emit(&b, wait);
	buf_release(&b);
	return rc;
}

void log_verror(const char *fmt, va_list ap)
{
	(void)log_line("error", 1, fmt, ap);
}

void log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)log_line("error", 1, fmt, ap);
	va_end(ap);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)log_line("warn", 1, fmt, ap);
	va_end(ap);
}

int log_warn_try(const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = log_line("warn", 0, fmt, ap);
	va_end(ap);
	return rc;
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)log_line("info", 1, fmt, ap);
	va_end(ap);
}

int log_info_try(const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = log_line("info", 0, fmt, ap);
	va_end(ap);
	return rc;
}

static void access_json(struct buf *b, const struct access_entry *e)
{
	buf_puts(b, "{\"ts\":\"");
	put_timestamp(b);
	buf_puts(b, "\",\"method\":");
	jsonstr_put(b, e->method);
	buf_puts(b, ",\"path\":");
	jsonstr_put(b, e->path);
	buf_puts(b, ",\"status\":");
	put_status(b, e->status);
	buf_puts(b, ",\"bytes_in\":");
	buf_put_u64(b, e->bytes_in);
	buf_puts(b, ",\"bytes_out\":");
	buf_put_u64(b, e->bytes_out);
	buf_puts(b, ",\"ms\":");
	put_ms(b, e->ms);
	buf_puts(b, ",\"request_id\":");
	jsonstr_put(b, e->request_id);
	buf_putc(b, '}');
}

/* One field of a text line: a byte that is not printable ASCII, or a space
 * (which would make two fields of one), is written '?'. */
static void put_field(struct buf *b, const char *text)
{
	size_t n = strlen(text);
	char *p = buf_reserve(b, n);

	if (p == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		p[i] = (text[i] > ' ' && text[i] < 0x7f) ? text[i] : '?';
	buf_commit(b, n);
}

static void access_text(struct buf *b, const struct access_entry *e)
{
	put_timestamp(b);
	buf_putc(b, ' ');
	put_field(b, e->method); /* any token libmicrohttpd took, control bytes too */
	buf_putc(b, ' ');
	/* the path is as the client sent it (unescaped): keep the line one line */
	put_field(b, e->path);
	buf_putc(b, ' ');
	put_status(b, e->status);
	buf_putc(b, ' ');
	buf_put_u64(b, e->bytes_in);
	buf_putc(b, ' ');
	buf_put_u64(b, e->bytes_out);
	buf_putc(b, ' ');
	put_ms(b, e->ms);
	buf_putc(b, ' ');
	/* a client's X-Request-Id may hold spaces (headers.c takes printable ASCII) */
	put_field(b, e->request_id);
}

void log_access(const struct access_entry *e)
{
	struct buf b;

	buf_init(&b, LOG_LINE_MAX);
	buf_reserve(&b, ACCESS_LINE_GUESS); /* one allocation for a usual line */
	if (log_format_chosen == LOG_JSON)
		access_json(&b, e);
	else
		access_text(&b, e);
	(void)emit(&b, 1);
	buf_release(&b);
}
