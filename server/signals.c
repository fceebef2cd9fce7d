/*
 * signals.c: see signals.h.
 */
#include "signals.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* The signals main waits for. */
static const int stop_signals[] = {SIGTERM, SIGINT, SIGHUP};

enum { N_STOP_SIGNALS = sizeof stop_signals / sizeof stop_signals[0] };

/* The self-pipe, for a thread started before main; the signalfd, for every
 * other. -1 until signals_start. */
static int signal_pipe[2] = {-1, -1};
static int signal_fd = -1;

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	ssize_t n = write(signal_pipe[1], &b, 1);

	(void)n; /* a full pipe already holds a wake-up */
	errno = saved;
}

static void stop_set(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < N_STOP_SIGNALS; i++)
		sigaddset(set, stop_signals[i]);
}

static int install_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < N_STOP_SIGNALS; i++)
		if (sigaction(stop_signals[i], &sa, NULL) != 0)
			return -1;
	return signal(SIGPIPE, SIG_IGN) == SIG_ERR ? -1 : 0;
}

int signals_start(void)
{
	sigset_t set;
	int rc;

	stop_set(&set);
	if (pipe(signal_pipe) != 0 || fcntl(signal_pipe[1], F_SETFL, O_NONBLOCK) != 0 ||
	    install_handlers() != 0)
		return -1;
	rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return signal_fd < 0 ? -1 : 0;
}

/* One signal's number from fd (the signalfd when from_fd, else the pipe);
 * 0 when there was none after all, -1 when the read fails. */
static int take(int from_fd)
{
	struct signalfd_siginfo info;
	unsigned char b;
	ssize_t n = from_fd ? read(signal_fd, &info, sizeof info) : read(signal_pipe[0], &b, 1);

	if (n > 0)
		return from_fd ? (int)info.ssi_signo : b;
	return n < 0 && (errno == EINTR || errno == EAGAIN) ? 0 : -1;
}

int signals_next(int timeout_ms)
{
	struct pollfd pfd[2] = {{signal_fd, POLLIN, 0}, {signal_pipe[0], POLLIN, 0}};
	int ready = poll(pfd, 2, timeout_ms);

	if (ready == 0 || (ready < 0 && errno == EINTR))
		return 0;
	if (ready < 0)
		return -1;
	return take(pfd[0].revents != 0);
}
