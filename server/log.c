/*
 * log.c: formats each line into a buf, then writes it whole.
 */
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"

enum { LOG_LINE_MAX = 8192 };

static enum log_format log_format_chosen = LOG_TEXT;

void log_set_format(enum log_format format)
{
	log_format_chosen = format;
}

/* RFC 3339 UTC time with milliseconds: 2024-05-01T12:00:00.123Z */
static void put_timestamp(struct buf *b)
{
	struct timespec ts;
	struct tm tm;
	char text[40];

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || gmtime_r(&ts.tv_sec, &tm) == NULL) {
		buf_puts(b, "-");
		return;
	}
	if (strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		buf_puts(b, "-");
		return;
	}
	buf_printf(b, "%s.%03ldZ", text, ts.tv_nsec / 1000000L);
}

/* Writes b plus a newline in one write(2); drops the line on failure. */
static void emit(struct buf *b)
{
	ssize_t n;

	if (buf_putc(b, '\n') != 0 || b->failed)
		return;
	n = write(STDERR_FILENO, b->data, b->len);
	(void)n; /* nowhere left to report a failed log write */
}

static void log_line(const char *level, const char *fmt, va_list ap)
{
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
		api_json_string(&b, msg);
		buf_putc(&b, '}');
	} else {
		put_timestamp(&b);
		buf_printf(&b, " %s %s", level, msg);
	}
	emit(&b);
	buf_release(&b);
}

void log_verror(const char *fmt, va_list ap)
{
	log_line("error", fmt, ap);
}

void log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("error", fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("info", fmt, ap);
	va_end(ap);
}

static void access_json(struct buf *b, const struct access_entry *e)
{
	buf_puts(b, "{\"ts\":\"");
	put_timestamp(b);
	buf_puts(b, "\",\"method\":");
	api_json_string(b, e->method);
	buf_puts(b, ",\"path\":");
	api_json_string(b, e->path);
	buf_printf(b, ",\"status\":%d,\"bytes_in\":%zu,\"bytes_out\":%zu,\"ms\":%.3f", e->status,
		   e->bytes_in, e->bytes_out, e->ms);
	buf_puts(b, ",\"request_id\":");
	api_json_string(b, e->request_id);
	buf_putc(b, '}');
}

static void access_text(struct buf *b, const struct access_entry *e)
{
	put_timestamp(b);
	buf_printf(b, " %s ", e->method);
	/* the path is as the client sent it (unescaped): keep the line one line */
	for (const char *p = e->path; *p != '\0'; p++)
		buf_putc(b, (*p > ' ' && *p < 0x7f) ? *p : '?');
	buf_printf(b, " %d %zu %zu %.3f %s", e->status, e->bytes_in, e->bytes_out, e->ms,
		   e->request_id);
}

void log_access(const struct access_entry *e)
{
	struct buf b;

	buf_init(&b, LOG_LINE_MAX);
	if (log_format_chosen == LOG_JSON)
		access_json(&b, e);
	else
		access_text(&b, e);
	emit(&b);
	buf_release(&b);
}
