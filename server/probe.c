/*
 * probe.c: one HTTP/1.0 GET over a plain socket, status line parsed. The
 * host is a numeric IPv4 address, IPv6 in brackets (http://[::1]:8080/), or
 * localhost, taken as 127.0.0.1 (RFC 6761 section 6.3: it is always the
 * loopback); no other name is looked up, so a probe needs no resolver.
 */
#include "probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

struct probe_url {
	char host[64]; /* without an IPv6 address's brackets */
	unsigned port;
	char path[512];
};

union probe_addr {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

static int parse_url(const char *url, struct probe_url *u)
{
	const char *scheme = "http://";
	const char *p = url;
	const char *colon, *slash;
	char *end = NULL;
	unsigned long port;

	if (strncmp(p, scheme, strlen(scheme)) != 0)
		return -1;
	p += strlen(scheme);
	if (*p == '[') { /* [IPv6]:port */
		const char *close = strchr(++p, ']');

		colon = close != NULL && close[1] == ':' ? close + 1 : NULL;
		if (colon == NULL || (size_t)(close - p) >= sizeof u->host)
			return -1;
		memcpy(u->host, p, (size_t)(close - p));
		u->host[close - p] = '\0';
	} else {
		colon = strchr(p, ':');
		if (colon == NULL || (size_t)(colon - p) >= sizeof u->host)
			return -1;
		memcpy(u->host, p, (size_t)(colon - p));
		u->host[colon - p] = '\0';
	}
	port = strtoul(colon + 1, &end, 10);
	if (end == colon + 1 || port == 0 || port > 65535 || (*end != '/' && *end != '\0'))
		return -1;
	u->port = (unsigned)port;
	slash = *end == '/' ? end : "/";
	if (strlen(slash) >= sizeof u->path || strpbrk(slash, " \r\n") != NULL)
		return -1;
	snprintf(u->path, sizeof u->path, "%s", slash);
	return 0;
}

/* The host (numeric, or localhost) and port as a socket address: its
 * length, or 0. */
static socklen_t address_of(const struct probe_url *u, union probe_addr *a)
{
	const char *host = strcasecmp(u->host, "localhost") == 0 ? "127.0.0.1" : u->host;

	memset(a, 0, sizeof *a);
	if (inet_pton(AF_INET, host, &a->in4.sin_addr) == 1) {
		a->in4.sin_family = AF_INET;
		a->in4.sin_port = htons((uint16_t)u->port);
		return sizeof a->in4;
	}
	if (inet_pton(AF_INET6, host, &a->in6.sin6_addr) == 1) {
		a->in6.sin6_family = AF_INET6;
		a->in6.sin6_port = htons((uint16_t)u->port);
		return sizeof a->in6;
	}
	return 0;
}

static int connect_to(const union probe_addr *addr, socklen_t len)
{
	struct timeval tv = {5, 0};
	int fd = socket(addr->sa.sa_family, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
	    connect(fd, &addr->sa, len) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends the request and reads the status code; -1 on any failure. */
static int get_status(int fd, const struct probe_url *u)
{
	char req[700];
	char resp[64];
	size_t got = 0;
	int v6 = strchr(u->host, ':') != NULL; /* Host names it in brackets */
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s%s%s:%u\r\n\r\n", u->path,
			 v6 ? "[" : "", u->host, v6 ? "]" : "", u->port);
	int status = -1;

	if (n < 0 || (size_t)n >= sizeof req || send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
		return -1;
	while (got < sizeof resp - 1) {
		ssize_t r = recv(fd, resp + got, sizeof resp - 1 - got, 0);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	resp[got] = '\0';
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	return status;
}

int probe_run(const char *url)
{
	struct probe_url u;
	union probe_addr addr;
	socklen_t len = 0;
	int fd;
	int status;

	/* a host name other than localhost is never looked up: refused with
	 * the forms taken, not reported as a daemon that did not answer */
	if (parse_url(url, &u) == 0)
		len = address_of(&u, &addr);
	if (len == 0) {
		fprintf(stderr,
			"attnd --probe: '%s' is not http://IPV4:PORT/path, "
			"http://[IPV6]:PORT/path or http://localhost:PORT/path\n",
			url);
		return 1;
	}
	fd = connect_to(&addr, len);
	if (fd < 0) {
		fprintf(stderr, "attnd --probe: cannot connect to %s:%u\n", u.host, u.port);
		return 1;
	}
	status = get_status(fd, &u);
	close(fd);
	if (status < 200 || status > 299) {
		fprintf(stderr, "attnd --probe: %s answered %d\n", url, status);
		return 1;
	}
	return 0;
}
