/*
 * cutoff.c: an answer written to the socket mid-body (cutoff.h says why).
 */
#include "cutoff.h"

#include <microhttpd.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

enum { HEAD_MAX = 2048 };

/* Appends "name: value\r\n" at head[*at]; -1 when it does not fit. */
static int put_header(char *head, size_t *at, const char *name, const char *value)
{
	int n = snprintf(head + *at, HEAD_MAX - *at, "%s: %s\r\n", name, value);

	if (n < 0 || (size_t)n >= HEAD_MAX - *at)
		return -1;
	*at += (size_t)n;
	return 0;
}

/* Date, as libmicrohttpd writes it on the answers it sends (RFC 9110
 * requires one on a 4xx from a server with a clock); day and month names
 * are the C locale's, attnd never calling setlocale. */
static int put_date(char *head, size_t *at)
{
	char date[40];
	time_t now = time(NULL);
	struct tm tm;

	if (gmtime_r(&now, &tm) == NULL ||
	    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm) == 0)
		return 0; /* no clock: no Date */
	return put_header(head, at, "Date", date);
}

static int build_head(char *head, size_t *at, int status, const struct answer_header *h, size_t n,
		      const char *content_type, size_t len)
{
	const char *reason = MHD_get_reason_phrase_for((unsigned)status);
	char length[24];
	int k = snprintf(head, HEAD_MAX, "HTTP/1.1 %d %s\r\n", status, reason);

	if (k < 0 || k >= HEAD_MAX)
		return -1;
	*at = (size_t)k;
	if (put_date(head, at) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (put_header(head, at, h[i].name, h[i].value) != 0)
			return -1;
	}
	snprintf(length, sizeof length, "%zu", len);
	if (put_header(head, at, "Content-Type", content_type) != 0 ||
	    put_header(head, at, "Content-Length", length) != 0 ||
	    put_header(head, at, "Connection", "close") != 0 || *at + 2 >= HEAD_MAX)
		return -1;
	memcpy(head + *at, "\r\n", 2);
	*at += 2;
	return 0;
}

int cutoff_send(int fd, int status, const struct answer_header *h, size_t n,
		const char *content_type, const char *body, size_t len)
{
	char head[HEAD_MAX];
	size_t head_len = 0;
	struct msghdr msg;
	struct iovec iov[2];
	ssize_t sent;

	if (fd < 0 || build_head(head, &head_len, status, h, n, content_type, len) != 0)
		return -1;
	if (body == NULL)
		len = 0; /* a HEAD answer: its head says the length, no body follows */
	iov[0] = (struct iovec){head, head_len};
	/* sendmsg only reads the body; the cast through uintptr_t drops const for
	 * struct iovec */
	iov[1] = (struct iovec){(void *)(uintptr_t)body, len};
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = iov;
	msg.msg_iovlen = len > 0 ? 2 : 1;
	do
		sent = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (sent < 0 && errno == EINTR);
	return sent == (ssize_t)(head_len + len) ? 0 : -1;
}
