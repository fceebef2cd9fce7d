/*
 * json_dom.h: jansson values from a JSON text without jansson's lexer, for
 * the text jansson would accept.
 *
 * jansson reads its input a byte at a time through a stream with a
 * look-ahead buffer, checks each string's UTF-8 on the way in and copies it
 * twice: for the seeds' four-word request its json_loadb is about 12,000
 * instructions, a sixth of all attnd does for that request beyond
 * libmicrohttpd. json_dom_parse reads the same grammar straight from the
 * buffer and builds the same values with jansson's own constructors (so the
 * rest of the API reads them as before): what json_loadb(text, len,
 * JSON_REJECT_DUPLICATES, ...) returns, the same types, values and key
 * order.
 *
 * It never reports an error. It returns NULL at anything it does not take
 * (then the caller asks jansson, whose message, line and column are the
 * ones a client sees): any syntax error, a top-level value other than an
 * object or array, a duplicate key, a control character or invalid UTF-8 in
 * a string, \u0000 or a lone surrogate escape, an integer literal of more
 * than 18 digits, a number token longer than JSON_DOM_MAX_NUMBER bytes, a
 * real that overflows a double, nesting deeper than JSON_DOM_MAX_DEPTH, or
 * an allocation that fails. Each of those jansson either rejects or decides
 * itself. So a text means the same whichever parser read it; the twin suite
 * (tests/api/check_json_dom.c) holds the two to that on a corpus and on
 * random mutations of it.
 *
 * Ownership: the returned value is the caller's (json_decref). The text is
 * only read, during the call; it need not end in a NUL.
 */
#ifndef API_JSON_DOM_H
#define API_JSON_DOM_H

#include <jansson.h>
#include <stddef.h>

enum { JSON_DOM_MAX_DEPTH = 64, JSON_DOM_MAX_NUMBER = 63 };

json_t *json_dom_parse(const char *text, size_t len);

#endif
