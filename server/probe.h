/*
 * probe.h: `attnd --probe URL`, a health check for containers without curl.
 *
 * Nothing is allocated; the socket is closed before returning.
 */
#ifndef SERVER_PROBE_H
#define SERVER_PROBE_H

/* GETs url (http://NUMERIC-IPV4:PORT/path only) with a 5 s timeout.
 * Returns 0 on a 2xx status, 1 otherwise (a message goes to stderr). */
int probe_run(const char *url);

#endif
