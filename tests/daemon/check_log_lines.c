/*
 * check_log_lines.c: the error log's lines as server/log.c (linked in)
 * writes them, the writer thread not started, so that each line goes to
 * stderr at once (log_writer.h): stderr is a file here, read back.
 *
 * libmicrohttpd quotes a request's path, percent-decoded, in its messages
 * ("Failed to send the response headers for the request for `PATH'...",
 * when a client resets before its answer goes out), and attnd logs them as
 * error lines. A path of /x%1b[31mRED%07%09 must reach neither a text log
 * nor a JSON one as an ESC sequence, a BEL or a tab:
 *   text  every control byte written '?' (UTF-8 kept), the line cut at the
 *         message's first newline
 *   json  the message a JSON string with the bytes escaped
 * (check_access_log covers the access lines' own fields.)
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/log.h"
#include "tests/lib/suite_main.h"

#define CLIENT_PATH "/x\x1b[31mRED\x07\x09\xc3\xa9"

/* Logs one error line quoting CLIENT_PATH in format f; returns the bytes
 * written to stderr (the caller frees them). */
static char *error_line(enum log_format f)
{
	char name[] = "/tmp/check_log_lines.XXXXXX";
	int fd = mkstemp(name), saved = dup(STDERR_FILENO);
	char *text = calloc(1, 4096);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	ck_assert_ptr_nonnull(text);
	unlink(name);
	ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
	log_set_format(f);
	log_error("Failed to send the response headers for the request for `%s'. Error: %s\n",
		  CLIENT_PATH, "The connection was forcibly closed by remote peer");
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	n = pread(fd, text, 4095, 0);
	close(fd);
	ck_assert_int_gt(n, 0);
	return text;
}

START_TEST(test_text_line_has_no_control_byte)
{
	char *text = error_line(LOG_TEXT);
	size_t len = strlen(text);

	ck_assert_msg(len > 1 && text[len - 1] == '\n' && strchr(text, '\n') == text + len - 1,
		      "not one line: %s", text);
	for (size_t i = 0; i + 1 < len; i++)
		ck_assert_msg((unsigned char)text[i] >= 0x20 && text[i] != 0x7f,
			      "byte 0x%02x at %zu of %s", (unsigned char)text[i], i, text);
	ck_assert_msg(strstr(text, " error Failed to send the response headers for the request "
				   "for `/x?[31mRED??\xc3\xa9'. Error: The connection was forcibly "
				   "closed by remote peer\n") != NULL,
		      "%s", text);
	free(text);
}
END_TEST

START_TEST(test_json_line_escapes_them)
{
	char *text = error_line(LOG_JSON);
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);
	const char *msg = json_string_value(json_object_get(j, "msg"));

	ck_assert_msg(j != NULL, "not JSON (%s): %s", jerr.text, text);
	ck_assert_str_eq(json_string_value(json_object_get(j, "level")), "error");
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, "`" CLIENT_PATH "'") != NULL, "%s", text);
	ck_assert_msg(strchr(text, '\x1b') == NULL && strchr(text, '\x07') == NULL, "%s", text);
	json_decref(j);
	free(text);
}
END_TEST

static Suite *log_lines_suite(void)
{
	Suite *s = suite_create("log_lines");
	TCase *tc = tcase_create("error lines");

	tcase_add_test(tc, test_text_line_has_no_control_byte);
	tcase_add_test(tc, test_json_line_escapes_them);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, log_lines_suite, NULL);
}
