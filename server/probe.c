/*
 * probe.c: one HTTP/1.0 GET over a plain socket, status line parsed.
 */
#include "probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

struct probe_url {
	char host[64];
	unsigned port;
	char path[512];
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
	colon = strchr(p, ':');
	if (colon == NULL || (size_t)(colon - p) >= sizeof u->host)
		return -1;
	memcpy(u->host, p, (size_t)(colon - p));
	u->host[colon - p] = '\0';
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

static int connect_to(const struct probe_url *u)
{
	struct sockaddr_in addr;
	struct timeval tv = {5, 0};
	int fd;

	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)u->port);
	if (inet_pton(AF_INET, u->host, &addr.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
	    connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
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
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s:%u\r\n\r\n", u->path,
			 u->host, u->port);
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
	int fd;
	int status;

	if (parse_url(url, &u) != 0) {
		fprintf(stderr, "attnd --probe: '%s' is not http://IPV4:PORT/path\n", url);
		return 1;
	}
	fd = connect_to(&u);
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
