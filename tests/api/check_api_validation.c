/*
 * check_api_validation.c: bad requests to /v1/attention and /v1/sdpa, through
 * api_handle on the built-in models (api_harness.h): a table of bodies with
 * the status, error code and JSON pointer each must give, and a few cases
 * that need more than a row.
 *
 * Ownership: whatever a test allocates is in the harness's arena.
 */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/api_harness.h"
#include "tests/lib/suite_main.h"

struct bad_request {
	const char *name;
	enum api_route route;
	const char *body;
	int status;
	const char *code;
	const char *pointer; /* "" = none, NULL = not checked */
};

/* 95 zero bytes: the 128 characters of 96, one byte short of [3, 8] */
#define B64_95 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

/* 100 zeros: 1 Z100 Z100 Z100 Z100 is 10^400 written whole */
#define Z10 "0000000000"
#define Z100 Z10 Z10 Z10 Z10 Z10 Z10 Z10 Z10 Z10 Z10

/* a 100-byte key: 10 x "kkkkkkkkkk" */
#define K10 "kkkkkkkkkk"
#define K100 K10 K10 K10 K10 K10 K10 K10 K10 K10 K10

#define A API_ROUTE_ATTENTION
#define S API_ROUTE_SDPA

static const struct bad_request bad_requests[] = {
    /* malformed JSON and duplicate keys: 400 */
    {"truncated", A, "{\"model\":", 400, "malformed_json", ""},
    {"trailing garbage", A, "{} x", 400, "malformed_json", ""},
    {"empty body", A, "", 400, "malformed_json", ""},
    {"invalid UTF-8 in a key", A, "{\"te\xffxt\":\"a\"}", 400, "malformed_json", ""},
    {"invalid UTF-8 in another field", A, "{\"model\":\"\xff\",\"text\":\"a\"}", 400,
     "malformed_json", ""},
    {"NUL in a string", A, "{\"text\":\"a\\u0000b\"}", 400, "malformed_json", ""},
    {"duplicate key", A, TINY EMB1 "," EMB1 "}", 400, "duplicate_key", ""},
    {"duplicate nested key", A, TINY EMB1 ",\"mask\":{\"causal\":true,\"causal\":false}}", 400,
     "duplicate_key", ""},
    {"sdpa duplicate key", S, SDPA_QKV ",\"q\":" SQ "}", 400, "duplicate_key", ""},
    {"top-level array", A, "[1,2]", 422, "invalid_type", ""},
    {"bare string (JSON, not an object)", A, "\"x\"", 422, "invalid_type", ""},
    {"bare number", S, "1", 422, "invalid_type", ""},
    {"sdpa top-level array", S, "[]", 422, "invalid_type", ""},
    /* unknown fields, at every level */
    {"unknown top-level field", A, TINY EMB1 ",\"xyz\":1}", 422, "unknown_field", "/xyz"},
    {"unknown mask field", A, TINY EMB1 ",\"mask\":{\"xyz\":1}}", 422, "unknown_field",
     "/mask/xyz"},
    {"unknown positional field", A, TINY EMB1 ",\"positional\":{\"xyz\":1}}", 422, "unknown_field",
     "/positional/xyz"},
    {"unknown model field", A, "{\"model\":{\"d_model\":8,\"num_heads\":2,\"xyz\":1}," EMB1 "}",
     422, "unknown_field", "/model/xyz"},
    {"pointer escapes / and ~", A, TINY EMB1 ",\"a/b~c\":1}", 422, "unknown_field", "/a~1b~0c"},
    {"unknown tensor field", A,
     TINY "\"embeddings\":{\"shape\":[1,8],\"data\":" R0 ",\"extra\":1}}", 422, "unknown_field",
     "/embeddings/extra"},
    {"sdpa unknown field", S, SDPA_QKV ",\"xyz\":1}", 422, "unknown_field", "/xyz"},
    /* wrong types */
    {"model a number", A, "{\"model\":5," EMB1 "}", 422, "invalid_type", "/model"},
    {"model an array", A, "{\"model\":[]," EMB1 "}", 422, "invalid_type", "/model"},
    {"embeddings a string", A, TINY "\"embeddings\":\"x\"}", 422, "invalid_type", "/embeddings"},
    {"tokens a string", A, TINY "\"tokens\":\"abc\"}", 422, "invalid_type", "/tokens"},
    {"text a number", A, TINY "\"text\":5}", 422, "invalid_type", "/text"},
    {"text item a number", A, TINY "\"text\":[\"a b\",5]}", 422, "invalid_type", "/text/1"},
    {"text not UTF-8", A, TINY "\"text\":\"ab\xff\xfe\"}", 422, "invalid_utf8", "/text"},
    {"text item not UTF-8", A, TINY "\"text\":[\"a b\",\"c\xff\"]}", 422, "invalid_utf8",
     "/text/1"},
    /* a route that reads no text: bad bytes in a "text" are the body's */
    {"sdpa: a text field not UTF-8", S, "{\"text\":\"a\xff\"}", 400, "malformed_json", ""},
    /* a U+FDD0 the client wrote (as \ufdd0) is not taken for the bad bytes */
    {"text with \\ufdd0, a bad byte elsewhere", A,
     TINY "\"text\":\"a\\ufdd0b\",\"weights\":\"\xff\"}", 400, "malformed_json", ""},
    {"text item with \\ufdd0, the next not UTF-8", A,
     TINY "\"text\":[\"a \\ufdd0 b\",\"x\xff" "y\"]}", 422, "invalid_utf8", "/text/1"},
    {"tokens mixed depth", A, TINY "\"tokens\":[[1,2],3]}", 422, "invalid_type", "/tokens/1"},
    {"tokens nested item", A, TINY "\"tokens\":[1,[2]]}", 422, "invalid_type", "/tokens/1"},
    {"token true", A, TINY "\"tokens\":[true]}", 422, "invalid_type", "/tokens/0"},
    {"token 1.5", A, TINY "\"tokens\":[1.5]}", 422, "invalid_type", "/tokens/0"},
    {"causal a string", A, TINY EMB1 ",\"mask\":{\"causal\":\"yes\"}}", 422, "invalid_type",
     "/mask/causal"},
    {"mask a number", A, TINY EMB1 ",\"mask\":5}", 422, "invalid_value", "/mask"},
    {"head_outputs a number", A, TINY EMB1 ",\"head_outputs\":1}", 422, "invalid_type",
     "/head_outputs"},
    {"mask an unknown name", A, TINY EMB1 ",\"mask\":\"diagonal\"}", 422, "invalid_value", "/mask"},
    {"alignment unknown", A, TINY EMB1 ",\"mask\":{\"alignment\":\"center\"}}", 422,
     "invalid_value", "/mask/alignment"},
    {"window 1.5", A, TINY EMB1 ",\"mask\":{\"window\":1.5}}", 422, "invalid_type", "/mask/window"},
    {"lengths a string", A, TINY EMB1 ",\"mask\":{\"lengths\":\"2\"}}", 422, "invalid_type",
     "/mask/lengths"},
    {"allow numbers", A, TINY EMB1 ",\"mask\":{\"allow\":[[1]]}}", 422, "invalid_type",
     "/mask/allow/0/0"},
    {"bias booleans", A, TINY EMB1 ",\"mask\":{\"bias\":[[true]]}}", 422, "invalid_type",
     "/mask/bias/0/0"},
    {"bias \"-inf\"", A, TINY EMB1 ",\"mask\":{\"bias\":[[\"-inf\"]]}}", 422, "invalid_number",
     "/mask/bias/0/0"},
    {"positional a number", A, TINY EMB1 ",\"positional\":5}", 422, "invalid_value", "/positional"},
    {"positional type unknown", A, TINY EMB1 ",\"positional\":{\"type\":\"xpos\"}}", 422,
     "invalid_value", "/positional/type"},
    {"theta a string", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"theta\":\"big\"}}", 422,
     "invalid_type", "/positional/theta"},
    /* a field the type does not read, not at its default */
    {"theta with alibi", A, TINY EMB1 ",\"positional\":{\"type\":\"alibi\",\"theta\":500}}", 422,
     "invalid_input", "/positional/theta"},
    {"style with sinusoidal", A,
     TINY EMB1 ",\"positional\":{\"type\":\"sinusoidal\",\"style\":\"half\"}}", 422,
     "invalid_input", "/positional/style"},
    {"positions without a type", A, TINY EMB1 ",\"positional\":{\"positions\":[0]}}", 422,
     "invalid_input", "/positional/positions"},
    {"positions a string", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"positions\":\"0\"}}",
     422, "invalid_type", "/positional/positions"},
    {"weights unknown", A, TINY EMB1 ",\"weights\":\"all\"}", 422, "invalid_value", "/weights"},
    {"scores unknown", A, TINY EMB1 ",\"scores\":\"logits\"}", 422, "invalid_value", "/scores"},
    {"precision with base64", A, TINY EMB1 ",\"encoding\":\"base64\",\"precision\":4}", 422,
     "invalid_input", "/precision"},
    {"encoding unknown", A, TINY EMB1 ",\"encoding\":\"hex\"}", 422, "invalid_value", "/encoding"},
    {"scale a string", A, TINY EMB1 ",\"scale\":\"1\"}", 422, "invalid_type", "/scale"},
    {"softcap a bool", A, TINY EMB1 ",\"softcap\":true}", 422, "invalid_type", "/softcap"},
    {"precision 2.5", A, TINY EMB1 ",\"precision\":2.5}", 422, "invalid_type", "/precision"},
    {"bias flag a string", A,
     "{\"model\":{\"d_model\":8,\"num_heads\":2,\"bias\":\"no\"}," EMB1 "}", 422, "invalid_type",
     "/model/bias"},
    {"d_model a string", A, "{\"model\":{\"d_model\":\"8\",\"num_heads\":2}," EMB1 "}", 422,
     "invalid_type", "/model/d_model"},
    {"sdpa q a string", S, "{\"q\":\"x\",\"k\":" SQ ",\"v\":" SQ "}", 422, "invalid_type", "/q"},
    {"sdpa is_causal 1", S, SDPA_QKV ",\"is_causal\":1}", 422, "invalid_type", "/is_causal"},
    {"sdpa num_heads a string", S,
     "{\"q\":[[[1,0,0,1]]],\"k\":[[[1,0,0,1]]],\"v\":[[[1,0,0,1]]],\"num_heads\":\"2\"}", 422,
     "invalid_type", "/num_heads"},
    /* ragged arrays where not allowed, mixed depth */
    {"ragged [L, E] rows", A, TINY "\"embeddings\":[" R0 ",[1,2,3,4,5,6,7]]}", 422, "ragged_array",
     "/embeddings/1"},
    {"ragged [Lk, E] key rows", A, TINY EMB1 ",\"key\":[" R0 ",[1,2,3]]}", 422, "ragged_array",
     "/key/1"},
    {"ragged row inside a batch item", A, TINY "\"embeddings\":[[" R0 "," R0 "],[[1,2]]]}", 422,
     "ragged_array", "/embeddings/1/0"},
    {"ragged allow", A,
     TINY "\"embeddings\":[" R0 "," R1 "],\"mask\":{\"allow\":[[true,true],"
	  "[true]]}}",
     422, "ragged_array", "/mask/allow/1"},
    {"ragged in_proj_weight", A,
     "{\"model\":{\"d_model\":8,\"num_heads\":2,\"in_proj_weight\":[[1,2],[3]]}," EMB1 "}", 422,
     "ragged_array", "/model/in_proj_weight/1"},
    {"ragged sdpa q", S, "{\"q\":[[[[1,0],[0]]]],\"k\":" SQ ",\"v\":" SQ "}", 422, "ragged_array",
     "/q/0/0/1"},
    {"number after a row", A, TINY "\"embeddings\":[" R0 ",0.5]}", 422, "invalid_shape",
     "/embeddings/1"},
    {"row after a batch item", A, TINY "\"embeddings\":[[" R0 "]," R0 "]}", 422, "invalid_shape",
     "/embeddings/1/0"},
    {"array in place of a number", A, TINY "\"embeddings\":[[1,2,3,4,5,6,7,[8]]]}", 422,
     "invalid_shape", "/embeddings/0/7"},
    {"rank 1 embeddings", A, TINY "\"embeddings\":" R0 "}", 422, "invalid_shape", "/embeddings"},
    {"rank 4 embeddings", A, TINY "\"embeddings\":[[[" R0 "]]]}", 422, "invalid_shape",
     "/embeddings"},
    {"rank 1 bias", A, TINY EMB1 ",\"mask\":{\"bias\":[0]}}", 422, "invalid_shape", "/mask/bias"},
    /* numbers outside float32, non-finite, strings for numbers */
    {"1e39", A, TINY "\"embeddings\":[[1e39,0,0,0,0,0,0,0]]}", 422, "out_of_range",
     "/embeddings/0/0"},
    {"-1e39", A, TINY "\"embeddings\":[" R0 ",[0,0,0,0,0,-1e39,0,0]]}", 422, "out_of_range",
     "/embeddings/1/5"},
    /* 2^128 - 2^103, half an ulp past FLT_MAX: a tie that rounds to infinity */
    {"float32 tie", A, TINY "\"embeddings\":[[3.4028235677973366e38,0,0,0,0,0,0,0]]}", 422,
     "out_of_range", "/embeddings/0/0"},
    {"-float32 tie in bias", A, TINY EMB1 ",\"mask\":{\"bias\":[[-3.4028235677973366e38]]}}", 422,
     "out_of_range", "/mask/bias/0/0"},
    {"1e39 in data", A, TINY "\"embeddings\":{\"shape\":[1,8],\"data\":[0,0,1e39,0,0,0,0,0]}}", 422,
     "out_of_range", "/embeddings/data/2"},
    {"1e39 in key", A, TINY EMB1 ",\"key\":[" R0 ",[0,0,1e39,0,0,0,0,0]]}", 422, "out_of_range",
     "/key/1/2"},
    {"-1e39 in value", A, TINY EMB1 ",\"key\":[" R0 "],\"value\":[[0,-1e39,0,0,0,0,0,0]]}", 422,
     "out_of_range", "/value/0/1"},
    {"1e39 in bias", A, TINY EMB1 ",\"mask\":{\"bias\":[[1e39]]}}", 422, "out_of_range",
     "/mask/bias/0/0"},
    {"1e39 in positions", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"positions\":[1e39]}}",
     422, "out_of_range", "/positional/positions/0"},
    {"1e39 in sdpa q", S, "{\"q\":[[[[1e39,0],[0,1]]]],\"k\":" SQ ",\"v\":" SQ "}", 422,
     "out_of_range", "/q/0/0/0/0"},
    {"-1e39 in sdpa mask", S, SDPA_QKV ",\"attn_mask\":[[0,-1e39],[0,0]]}", 422, "out_of_range",
     "/attn_mask/0/1"},
    /* valid JSON that jansson cannot hold: a field error at the value, as 1e39 */
    {"1e400", A, TINY "\"embeddings\":[[1e400,0,0,0,0,0,0,0]]}", 422, "out_of_range",
     "/embeddings/0/0"},
    {"-1E+400 in scale", A, TINY EMB1 ",\"scale\":-1E+400}", 422, "out_of_range", "/scale"},
    {"1e400 after brackets in strings and empty containers", A,
     TINY "\"x\":[[],{},\"]}[{\\\"\",[1,[2]]],\"a/b\":{\"c~d\":[0, 1e400]}}", 422,
     "out_of_range", "/a~1b/c~0d/1"},
    {"token 2^64", A, TINY "\"tokens\":[[1],[2,18446744073709551616]]}", 422,
     "token_out_of_range", "/tokens/1/1"},
    {"10^400 written whole", A, TINY "\"scale\":1" Z100 Z100 Z100 Z100 "}", 422, "out_of_range",
     "/scale"},
    {"1e400 in sdpa q", S, "{\"q\":[[[[1,1e400]]]]}", 422, "out_of_range", "/q/0/0/0/1"},
    {"1e400 under a key with an escape: not placed", A, TINY "\"\\u0061\":1e400}", 400,
     "malformed_json", ""},
    /* a key with an escape off the value's path does not stop the walk */
    {"1e400 after a sibling key with an escape", A, TINY "\"\\u0061\":1,\"scale\":1e400}", 422,
     "out_of_range", "/scale"},
    {"1e400 after an escaped key in an earlier item", A,
     TINY "\"x\":[{\"b\\n\":[1]},{\"c\":1e400}]}", 422, "out_of_range", "/x/1/c"},
    {"lone surrogate after an escaped key", A, TINY "\"\\\"\":0,\"text\":\"\\ud800\"}", 422,
     "invalid_utf8", "/text"},
    /* a key longer than 64 bytes is named whole, not cut */
    {"1e400 under a 100-byte key", A,
     TINY "\"" K100 "\":{\"a\":1e400}}", 422, "out_of_range", "/" K100 "/a"},
    {"lone high surrogate in text", A, TINY "\"text\":\"a \\ud800 b\"}", 422, "invalid_utf8",
     "/text"},
    {"lone low surrogate in a text item", A, TINY "\"text\":[\"a\",\"b \\uDC00\"]}", 422,
     "invalid_utf8", "/text/1"},
    /* jansson's error position counts bytes, as the walk does */
    {"1e400 after multi-byte text", A,
     TINY "\"text\":\"\xeb\x82\x98\xeb\x8a\x94 \xec\x82\xac\",\"scale\":1e400}", 422,
     "out_of_range", "/scale"},
    {"high surrogate before a letter", A, TINY "\"text\":\"\\ud83d\\u0041\"}", 422,
     "invalid_utf8", "/text"},
    {"\"1\" for a number", A, TINY "\"embeddings\":[[0,0,0,0,0,0,0,\"1\"]]}", 422, "invalid_type",
     "/embeddings/0/7"},
    {"\"-Infinity\" in embeddings", A, TINY "\"embeddings\":[[\"-Infinity\",0,0,0,0,0,0,0]]}", 422,
     "invalid_type", "/embeddings/0/0"},
    {"\"NaN\" in key", A, TINY EMB1 ",\"key\":[[0,\"NaN\",0,0,0,0,0,0]]}", 422, "invalid_type",
     "/key/0/1"},
    {"null for a number", A, TINY "\"embeddings\":[[0,0,0,null,0,0,0,0]]}", 422, "invalid_type",
     "/embeddings/0/3"},
    /* an additive mask holds numbers and "-Infinity" only */
    {"\"Infinity\" in bias", A, TINY EMB1 ",\"mask\":{\"bias\":[[\"Infinity\"]]}}", 422,
     "invalid_number", "/mask/bias/0/0"},
    {"\"NaN\" in bias", A, TINY EMB1 ",\"mask\":{\"bias\":[[\"NaN\"]]}}", 422, "invalid_number",
     "/mask/bias/0/0"},
    {"scale 0", A, TINY EMB1 ",\"scale\":0}", 422, "out_of_range", "/scale"},
    {"scale 1e39", A, TINY EMB1 ",\"scale\":1e39}", 422, "out_of_range", "/scale"},
    {"softcap -1", A, TINY EMB1 ",\"softcap\":-1}", 422, "out_of_range", "/softcap"},
    {"precision 0", A, TINY EMB1 ",\"precision\":0}", 422, "out_of_range", "/precision"},
    {"precision 10", A, TINY EMB1 ",\"precision\":10}", 422, "out_of_range", "/precision"},
    /* token ids */
    {"token -1", A, TINY "\"tokens\":[-1]}", 422, "token_out_of_range", "/tokens/0"},
    {"token = vocab", A, TINY "\"tokens\":[0,64]}", 422, "token_out_of_range", "/tokens/1"},
    {"base token 32000", A, "{\"model\":\"base\",\"tokens\":[31999,32000]}", 422,
     "token_out_of_range", "/tokens/1"},
    {"token 2^63 - 1", A, TINY "\"tokens\":[9223372036854775807]}", 422, "token_out_of_range",
     "/tokens/0"},
    {"token -2^63", A, TINY "\"tokens\":[-9223372036854775808]}", 422, "token_out_of_range",
     "/tokens/0"},
    {"token in a batch", A, TINY "\"tokens\":[[1,2],[3,-1]]}", 422, "token_out_of_range",
     "/tokens/1/1"},
    {"token 1e300", A, TINY "\"tokens\":[1,1e300]}", 422, "token_out_of_range", "/tokens/1"},
    {"token -1e19", A, TINY "\"tokens\":[-1e19]}", 422, "token_out_of_range", "/tokens/0"},
    {"no tokens", A, TINY "\"tokens\":[]}", 422, "empty_sequence", "/tokens"},
    {"tokens not an array", A, TINY "\"tokens\":7}", 422, "invalid_type", "/tokens"},
    {"empty batch item", A, TINY "\"tokens\":[[1],[]]}", 422, "empty_sequence", "/tokens/1"},
    {"empty text", A, TINY "\"text\":\"\"}", 422, "empty_sequence", "/text"},
    {"blank text", A, TINY "\"text\":\" \\t\\n \"}", 422, "empty_sequence", "/text"},
    {"blank text item", A, TINY "\"text\":[\"a\",\" \"]}", 422, "empty_sequence", "/text/1"},
    {"no text items", A, TINY "\"text\":[]}", 422, "empty_sequence", "/text"},
    {"tokens without a table", A, "{\"model\":{\"d_model\":8,\"num_heads\":2},\"tokens\":[1]}", 422,
     "no_embedding_table", "/tokens"},
    /* models */
    {"unknown model", A, "{\"model\":\"nope\"," EMB1 "}", 404, "model_not_found", "/model"},
    {"E % H != 0", A, "{\"model\":{\"d_model\":6,\"num_heads\":4},\"embeddings\":[[1,2,3,4,5,6]]}",
     422, "heads_do_not_divide_model_dim", "/model/num_heads"},
    {"H % Hkv != 0", A, "{\"model\":{\"d_model\":8,\"num_heads\":2,\"num_kv_heads\":3}," EMB1 "}",
     422, "kv_heads_do_not_divide_heads", "/model/num_kv_heads"},
    {"d_model 0", A, "{\"model\":{\"d_model\":0,\"num_heads\":2}," EMB1 "}", 422, "out_of_range",
     "/model/d_model"},
    {"num_heads 0", A, "{\"model\":{\"d_model\":8,\"num_heads\":0}," EMB1 "}", 422, "out_of_range",
     "/model/num_heads"},
    {"d_model over the inline limit", A, "{\"model\":{\"d_model\":2048,\"num_heads\":2}," EMB1 "}",
     422, "out_of_range", "/model/d_model"},
    {"num_heads missing", A, "{\"model\":{\"d_model\":8}," EMB1 "}", 422, "missing_field",
     "/model"},
    {"in_proj_weight of the wrong shape", A,
     "{\"model\":{\"d_model\":8,\"num_heads\":2,\"in_proj_weight\":[[1,2]]}," EMB1 "}", 422,
     "dimension_mismatch", "/model/in_proj_weight"},
    {"out_proj_weight alone", A,
     "{\"model\":{\"d_model\":8,\"num_heads\":2,\"out_proj_weight\":{\"shape\":[8,8],"
     "\"data\":[]}}," EMB1 "}",
     422, "invalid_model", NULL},
    /* inputs */
    /* two inputs: the pointer names the second one found */
    {"two inputs", A, TINY EMB1 ",\"tokens\":[1]}", 422, "invalid_input", "/tokens"},
    {"tokens and text", A, TINY "\"text\":\"a\",\"tokens\":[1]}", 422, "invalid_input",
     "/text"},
    {"three inputs", A, TINY EMB1 ",\"tokens\":[1],\"text\":\"a\"}", 422, "invalid_input",
     "/tokens"},
    {"no input", A, "{\"model\":\"tiny\"}", 422, "invalid_input", ""},
    {"empty object", A, "{}", 422, "invalid_input", ""},
    {"value without key", A, TINY EMB1 ",\"value\":[" R0 "]}", 422, "invalid_input", "/value"},
    {"embeddings of the wrong width", A, TINY "\"embeddings\":[[1,2,3,4,5,6,7]]}", 422,
     "dimension_mismatch", "/embeddings"},
    {"key of the wrong width", A, TINY EMB1 ",\"key\":[[1,2,3]]}", 422, "dimension_mismatch",
     "/key"},
    {"value unlike key", A, TINY EMB1 ",\"key\":[" R0 "," R1 "],\"value\":[" R0 "]}", 422,
     "dimension_mismatch", "/value"},
    {"batched key, unbatched query", A, TINY EMB1 ",\"key\":[[" R0 "]]}", 422, "dimension_mismatch",
     "/key"},
    {"key batch of another size", A, TINY "\"embeddings\":[[" R0 "]],\"key\":[[" R0 "],[" R1 "]]}",
     422, "dimension_mismatch", "/key"},
    {"ragged value unlike ragged key", A,
     TINY "\"embeddings\":[[" R0 "],[" R1 "]],\"key\":[[" R0 "," R1 "],[" R2 "," R3
	  "]],\"value\":[[" R0 "," R1 "],[" R2 "]]}",
     422, "dimension_mismatch", "/value/1"},
    {"key_positions without key", A,
     TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"key_positions\":[0]}}", 422, "invalid_value",
     "/positional/key_positions"},
    /* zero and impossible dimensions, tensor objects */
    {"no rows", A, TINY "\"embeddings\":[]}", 422, "invalid_shape", "/embeddings"},
    {"empty row", A, TINY "\"embeddings\":[[]]}", 422, "invalid_shape", "/embeddings"},
    {"shape with 0", A, TINY "\"embeddings\":{\"shape\":[0,8],\"data\":[]}}", 422, "invalid_shape",
     "/embeddings/shape/0"},
    {"shape with -1", A, TINY "\"embeddings\":{\"shape\":[1,-8],\"data\":" R0 "}}", 422,
     "invalid_shape", "/embeddings/shape/1"},
    {"shape missing", A, TINY "\"embeddings\":{\"data\":" R0 "}}", 422, "invalid_shape",
     "/embeddings/shape"},
    {"shape of rank 5", A, TINY "\"embeddings\":{\"shape\":[1,1,1,1,8],\"data\":" R0 "}}", 422,
     "invalid_shape", "/embeddings/shape"},
    {"data of the wrong length", A, TINY "\"embeddings\":{\"shape\":[2,8],\"data\":" R0 "}}", 422,
     "invalid_shape", "/embeddings/data"},
    {"data and base64", A,
     TINY "\"embeddings\":{\"shape\":[1,8],\"data\":" R0 ",\"base64\":\"" R0_B64 "\"}}", 422,
     "invalid_tensor", "/embeddings"},
    {"neither data nor base64", A, TINY "\"embeddings\":{\"shape\":[1,8]}}", 422, "invalid_tensor",
     "/embeddings"},
    {"2^64 elements", A, TINY "\"embeddings\":{\"shape\":[4294967296,4294967296,8],\"data\":[]}}",
     422, "too_large", "/embeddings"},
    {"window 0", A, TINY EMB1 ",\"mask\":{\"window\":0}}", 422, "out_of_range", "/mask/window"},
    {"positions of the wrong count", A,
     TINY EMB3 ",\"positional\":{\"type\":\"rope\",\"positions\":[0,1]}}", 422,
     "dimension_mismatch", "/positional/positions"},
    /* one too many reads as one too few, not as a size limit */
    {"one position too many", A,
     TINY EMB3 ",\"positional\":{\"type\":\"rope\",\"positions\":[0,1,2,3]}}", 422,
     "dimension_mismatch", "/positional/positions"},
    {"one position too many, as a tensor object", A,
     TINY EMB3 ",\"positional\":{\"type\":\"rope\",\"positions\":{\"shape\":[4],"
     "\"data\":[0,1,2,3]}}}",
     422, "dimension_mismatch", "/positional/positions"},
    {"one key position too many", A,
     TINY EMB1 ",\"key\":" X3 ",\"positional\":{\"type\":\"rope\",\"key_positions\":[0,1,2,3]}}",
     422, "dimension_mismatch", "/positional/key_positions"},
    {"odd rotary_dim", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"rotary_dim\":3}}", 422,
     "invalid_rotary_dim", "/positional/rotary_dim"},
    /* no rotary_dim given: the default (the whole head) is what cannot be,
     * so the pointer is the choice of RoPE, not a field the client never sent */
    {"RoPE on an odd head dim", A,
     "{\"model\":{\"d_model\":6,\"num_heads\":2},\"embeddings\":[[1,2,3,4,5,6]],"
     "\"positional\":\"rope\"}",
     422, "invalid_rotary_dim", "/positional"},
    {"rotary_dim over D", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"rotary_dim\":6}}", 422,
     "out_of_range", "/positional/rotary_dim"},
    {"theta 1", A, TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"theta\":1}}", 422,
     "out_of_range", "/positional/theta"},
    /* masks */
    {"allow and bias", A, TINY EMB1 ",\"mask\":{\"allow\":[[true]],\"bias\":[[0]]}}", 422,
     "invalid_mask", "/mask"},
    {"allow of the wrong shape", A, TINY EMB1 ",\"mask\":{\"allow\":[[true,true]]}}", 422,
     "dimension_mismatch", "/mask/allow"},
    {"bias of the wrong batch", A, TINY EMB1 ",\"mask\":{\"bias\":[[[0]],[[0]]]}}", 422,
     "dimension_mismatch", "/mask/bias"},
    {"lengths over Lk", A, TINY EMB1 ",\"mask\":{\"lengths\":[2]}}", 422, "out_of_range",
     "/mask/lengths/0"},
    {"lengths -1", A, TINY EMB1 ",\"mask\":{\"lengths\":[-1]}}", 422, "out_of_range",
     "/mask/lengths/0"},
    {"lengths of the wrong count", A, TINY EMB1 ",\"mask\":{\"lengths\":[1,1]}}", 422,
     "dimension_mismatch", "/mask/lengths"},
    /* base64 */
    {"base64 of the wrong length", A, TINY "\"embeddings\":{\"shape\":[1,8],\"base64\":\"AAAA\"}}",
     422, "invalid_base64", "/embeddings/base64"},
    {"base64 with a bad character", A,
     TINY
     "\"embeddings\":{\"shape\":[1,8],\"base64\":\"AAAAPwAAgL4AAAA+AACAPw!AAAAAIC/AABAPwAAgD4=\"}}",
     422, "invalid_base64", "/embeddings/base64"},
    {"base64 with inner padding", A,
     TINY
     "\"embeddings\":{\"shape\":[1,8],\"base64\":\"AAAAPwAAgL4AAAA+AACAPw==AAAAIC/AABAPwAAgD4=\"}}",
     422, "invalid_base64", "/embeddings/base64"},
    {"boolean mask as base64", A,
     TINY EMB1 ",\"mask\":{\"allow\":{\"shape\":[1,1],\"base64\":\"AAAA\"}}}", 422,
     "invalid_type", "/mask/allow/base64"},
    {"base64 not a string", A, TINY "\"embeddings\":{\"shape\":[1,8],\"base64\":5}}", 422,
     "invalid_type", "/embeddings/base64"},
    /* data of the wrong JSON type is invalid_type too, as base64's; its
     * length is the shape's business */
    {"data not an array", A, TINY "\"embeddings\":{\"shape\":[1,8],\"data\":\"AAAA\"}}", 422,
     "invalid_type", "/embeddings/data"},
    {"sdpa data not an array", S, "{\"q\":{\"shape\":[1,1,2,2],\"data\":{}},\"k\":" SQ ",\"v\":" SQ "}",
     422, "invalid_type", "/q/data"},
    {"mask data not an array", A,
     TINY EMB1 ",\"mask\":{\"allow\":{\"shape\":[1,1],\"data\":true}}}", 422, "invalid_type",
     "/mask/allow/data"},
    {"base64 holding NaN", A,
     TINY "\"embeddings\":{\"shape\":[1,8],\"base64\":"
	  "\"AADAfwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}}",
     422, "out_of_range", "/embeddings/base64"},
    /* /v1/sdpa */
    {"sdpa without q", S, "{\"k\":" SQ ",\"v\":" SQ "}", 422, "invalid_type", "/q"},
    {"sdpa k of another rank", S, "{\"q\":" SQ ",\"k\":[[[1,0]]],\"v\":" SQ "}", 422,
     "dimension_mismatch", "/k"},
    /* k is checked against q, v against k (as /v1/attention's value against
     * its key): the pointer names the tensor that disagrees */
    {"sdpa v of another length than k", S,
     "{\"q\":" SQ ",\"k\":[[[[1,0],[0,1],[1,1]]]],\"v\":" SQ "}", 422, "dimension_mismatch", "/v"},
    {"sdpa k of another head size than q", S, "{\"q\":" SQ ",\"k\":[[[[1,0,0],[0,1,0]]]],\"v\":" SQ "}",
     422, "dimension_mismatch", "/k"},
    {"sdpa v of another batch", S, "{\"q\":" SQ ",\"k\":" SQ ",\"v\":[[[[1,0],[0,1]]],[[[1,0],[0,1]]]]}", 422,
     "dimension_mismatch", "/v"},
    {"sdpa v of other heads", S, "{\"q\":" SQ ",\"k\":" SQ ",\"v\":[[[[1,0],[0,1]],[[1,0],[0,1]]]]}",
     422, "dimension_mismatch", "/v"},
    {"sdpa v of another rank", S, "{\"q\":" SQ ",\"k\":" SQ ",\"v\":[[[1,0]]]}", 422,
     "dimension_mismatch", "/v"},
    {"sdpa 3D num_kv_heads not dividing k", S,
     "{\"q\":[[[1,0,0,1]]],\"k\":[[[1,0,0,1]]],\"v\":[[[1,0,0,1]]],\"num_heads\":2,"
     "\"num_kv_heads\":3}",
     422, "dimension_mismatch", "/num_kv_heads"},
    {"sdpa 3D num_heads not dividing q", S,
     "{\"q\":[[[1,0,0,1]]],\"k\":[[[1,0,0,1]]],\"v\":[[[1,0,0,1]]],\"num_heads\":3,"
     "\"num_kv_heads\":1}",
     422, "dimension_mismatch", "/num_heads"},
    {"sdpa 4D with another num_heads", S, SDPA_QKV ",\"num_heads\":2}", 422,
     "dimension_mismatch", "/num_heads"},
    {"sdpa 4D with another num_kv_heads", S, SDPA_QKV ",\"num_kv_heads\":2}", 422,
     "dimension_mismatch", "/num_kv_heads"},
    {"sdpa 3D without num_heads", S,
     "{\"q\":[[[1,0,0,1]]],\"k\":[[[1,0,0,1]]],\"v\":[[[1,0,0,"
     "1]]]}",
     422, "dimension_mismatch", "/num_heads"},
    {"sdpa H % Hkv != 0", S,
     "{\"q\":[[[[1,0]],[[0,1]],[[1,1]]]],\"k\":[[[[1,0]],[[0,1]]]],\"v\":[[[[1,0]],[[0,1]]]]}", 422,
     "kv_heads_do_not_divide_heads", "/k"},
    {"sdpa past_key alone", S, SDPA_QKV ",\"past_key\":[[[[1,0]]]]}", 422, "invalid_input",
     "/past_value"},
    {"sdpa past of the wrong width", S,
     SDPA_QKV ",\"past_key\":[[[[1,0,0]]]],\"past_value\":[[[[1,0]]]]}", 422, "dimension_mismatch",
     "/past_key"},
    {"sdpa past_value of the wrong width", S,
     SDPA_QKV ",\"past_key\":[[[[1,0]]]],\"past_value\":[[[[1,0,0]]]]}", 422, "dimension_mismatch",
     "/past_value"},
    {"sdpa past_value of another length than past_key", S,
     SDPA_QKV ",\"past_key\":[[[[1,0]]]],\"past_value\":[[[[1,0],[0,1]]]]}", 422,
     "dimension_mismatch", "/past_value"},
    {"sdpa kv_lengths with a past", S,
     SDPA_QKV ",\"past_key\":[[[[1,0]]]],\"past_value\":[[[[1,0]]]],\"kv_lengths\":[1]}", 422,
     "invalid_input", "/kv_lengths"},
    {"sdpa kv_lengths over S", S, SDPA_QKV ",\"kv_lengths\":[3]}", 422, "out_of_range",
     "/kv_lengths/0"},
    {"sdpa kv_lengths of the wrong count", S, SDPA_QKV ",\"kv_lengths\":[1,1]}", 422,
     "dimension_mismatch", "/kv_lengths"},
    {"sdpa mask of the wrong shape", S,
     SDPA_QKV ",\"attn_mask\":[[true,false,true],[true,"
	      "true,true]]}",
     422, "mask_shape", "/attn_mask"},
    {"sdpa mask mixing bool and numbers", S, SDPA_QKV ",\"attn_mask\":[[true,false],[true,1]]}",
     422, "invalid_type", "/attn_mask/1/1"},
    {"sdpa scores unknown", S, SDPA_QKV ",\"scores\":\"logits\"}", 422, "invalid_value", "/scores"},
};

#undef A
#undef S

START_TEST(test_bad_request)
{
	const struct bad_request *r = &bad_requests[_i];
	struct answer a = harness_call(r->route, NULL, r->body);
	const json_t *e = json_object_get(a.json, "error");
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *ptr = json_string_value(json_object_get(e, "pointer"));

	ck_assert_msg(a.status == r->status && code != NULL && strcmp(code, r->code) == 0 &&
			  (r->pointer == NULL || strcmp(ptr ? ptr : "", r->pointer) == 0),
		      "%s: want %d %s at '%s', got %d: %.300s", r->name, r->status, r->code,
		      r->pointer ? r->pointer : "*", a.status, a.text);
}
END_TEST

/* Malformed JSON: the message has the line and the column. */
START_TEST(test_malformed_position)
{
	struct answer a = harness_attention("{\n  \"model\": \"tiny\",\n  \"embeddings\": [1,\n}");
	const char *msg;

	harness_expect_error(&a, 400, "malformed_json", "");
	msg = json_string_value(harness_field(harness_field(a.json, "error"), "message"));
	ck_assert_msg(strstr(msg, "line 4") != NULL && strstr(msg, "column") != NULL,
		      "message without line 4 and a column: %s", msg);
}
END_TEST

/* A \u0000 escape is said as such, where it is, in our words not jansson's
 * (which names its own flag JSON_ALLOW_NUL). */
START_TEST(test_nul_escape_said)
{
	struct answer a = harness_attention(TINY "\n\"text\": \"a\\u0000b\"}");
	const char *msg;

	harness_expect_error(&a, 400, "malformed_json", "");
	msg = json_string_value(harness_field(harness_field(a.json, "error"), "message"));
	ck_assert_msg(strstr(msg, "\\u0000 (NUL)") != NULL && strstr(msg, "line 2") != NULL &&
			  strstr(msg, "JSON_ALLOW_NUL") == NULL,
		      "NUL not said plainly with its line: %s", msg);
}
END_TEST

/* 2^63 does not fit jansson's integer: read as a double, a token id past
 * every vocabulary, at the token. */
START_TEST(test_token_2_pow_63)
{
	struct answer a = harness_attention(TINY "\"tokens\":[9223372036854775808]}");

	harness_expect_error(&a, 422, "token_out_of_range", "/tokens/0");
	harness_expect_message(&a, "token id 9.22337203685478e+18 is past every vocabulary's ids");
}
END_TEST

/* Only the literals past 64 bits become doubles: the body's other integers
 * keep every digit (2^53 + 1 is still no seed), and an error after such a
 * literal is placed in the body as sent. (Readers of ids name such a value
 * as sent, not as its clamped end: check_v2.c for /v2's INT64 data,
 * check_tokenizer_daemon.c for /ids.) */
START_TEST(test_big_literals_alone_are_reals)
{
	struct answer a;
	const char *msg;
	char said[256];

	a = harness_attention("{\"model\":{\"d_model\":8,\"num_heads\":2,\"seed\":9007199254740993},"
			      EMB1 ",\"scale\":100000000000000000000}");
	harness_expect_error(&a, 422, "out_of_range", "/model/seed");
	/* a syntax error after the literal: the line and column of the body sent,
	 * which are those of the same body with a real of the same length there */
	a = harness_attention("{\"model\":\"tiny\",\n\"scale\":100000000000000000000, \"x\":}");
	harness_expect_error(&a, 400, "malformed_json", "");
	msg = json_string_value(harness_field(harness_field(a.json, "error"), "message"));
	snprintf(said, sizeof said, "%s", msg);
	a = harness_attention("{\"model\":\"tiny\",\n\"scale\":1.0000000000000000e20, \"x\":}");
	harness_expect_error(&a, 400, "malformed_json", "");
	msg = json_string_value(harness_field(harness_field(a.json, "error"), "message"));
	ck_assert_str_eq(said, msg);
}
END_TEST

/* Integers past 64 bits as JavaScript writes them (JSON.stringify(-1e20) is
 * "-100000000000000000000"): the numbers they are where floats go, beside
 * the body's integers (offset), which stay integers. */
START_TEST(test_js_whole_floats)
{
	static const struct {
		int sdpa;
		const char *whole, *real;
	} pairs[] = {
	    {1, SDPA_QKV ",\"attn_mask\":[[0,-100000000000000000000],[0,0]]}",
	     SDPA_QKV ",\"attn_mask\":[[0,-1e20],[0,0]]}"},
	    {0, TINY "\"embeddings\":[[18446744073709552000,0,0,0,0,0,0,1]],\"weights\":\"none\"}",
	     TINY "\"embeddings\":[[1.8446744073709552e19,0,0,0,0,0,0,1]],\"weights\":\"none\"}"},
	    {0, TINY EMB1 ",\"scale\":100000000000000000000,\"positional\":{\"type\":"
		"\"sinusoidal\",\"offset\":3}}",
	     TINY EMB1 ",\"scale\":1e20,\"positional\":{\"type\":\"sinusoidal\",\"offset\":3}}"},
	};

	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		struct answer a = pairs[i].sdpa ? harness_sdpa(pairs[i].whole)
						: harness_attention(pairs[i].whole);
		struct answer b = pairs[i].sdpa ? harness_sdpa(pairs[i].real)
						: harness_attention(pairs[i].real);

		harness_expect_ok(&a);
		harness_expect_ok(&b);
		ck_assert_msg(json_equal(harness_field(a.json, "output"),
					 harness_field(b.json, "output")),
			      "%zu:\n%s\n%s", i, a.text, b.text);
	}
}
END_TEST

/* What a person needs to act on is in the message: the bound that holds, the
 * number as sent, the byte count, the byte order mark, the empty body. */
START_TEST(test_messages_say_what)
{
	static const struct {
		const char *body, *said;
	} cases[] = {
	    {TINY EMB1 ",\"positional\":{\"type\":\"rope\",\"theta\":1}}",
	     "must be a number in (1, 1e+12]"},
	    {TINY "\"embeddings\":[[3.40282357e38,0,0,0,0,0,0,0]]}",
	     "3.40282357e+38 is outside the float32 range (largest magnitude 3.40282347e+38)"},
	    {TINY "\"embeddings\":[[1e400,0,0,0,0,0,0,0]]}", "1e400 is past the range of a double"},
	    {TINY "\"text\":\"a \\ud800 b\"}", "holds \\uD800: a UTF-16 surrogate without its pair"},
	    /* 95 bytes in the 128 characters of 96 */
	    {TINY "\"embeddings\":{\"shape\":[3,8],\"base64\":\"" B64_95 "\"}}",
	     "decodes to 95 bytes; 24 float32 values need 96"},
	    {TINY EMB1 ",\"mask\":{\"allow\":{\"shape\":[1,1],\"base64\":\"AACAPw==\"}}}",
	     "a boolean tensor cannot be sent as base64"},
	    {TINY EMB1 ",\"mask\":{\"allow\":{\"shape\":[1,1],\"base64\":\"AAAA\"}}}",
	     "a boolean tensor cannot be sent as base64"},
	    {TINY "\"tokens\":[1,2,99]}", "token id 99 is outside [0, 64)"},
	    /* a whole number past int64 is named as sent, not as its clamped end */
	    {TINY "\"tokens\":[1e300]}", "token id 1e+300 is past every"},
	    {TINY "\"tokens\":[2e19]}", "token id 2e+19 is past every"},
	    {"{\"model\":{\"d_model\":8,\"num_heads\":2},\"text\":\"a b\"}",
	     "give it a vocab_size, or send embeddings"},
	    {TINY EMB1 ",\"mask\":\"window\"}", "or a mask object of causal, alignment, window"},
	    {TINY "\"tokens\":[1],\"text\":\"a\"}",
	     "give exactly one of embeddings, tokens and text; this request has tokens and text"},
	    {TINY EMB1 ",\"tokens\":[1],\"text\":\"a\"}",
	     "this request has embeddings, tokens and text"},
	    {"{\"model\":\"tiny\"}", "give exactly one of embeddings, tokens and text; this "
	     "request has none"},
	    /* the key's shape the query calls for, not both */
	    {TINY EMB1 ",\"key\":[[" R0 "]]}", "the query is one sequence, so key must be [Lk, 8]"},
	    {TINY "\"embeddings\":[[" R0 "],[" R1 "]],\"key\":[" R0 "]}",
	     "the query is a batch of 2, so key must be [2, Lk, 8]"},
	    {"", "the body is empty"},
	    {" \r\n", "the body holds only white space"},
	    {"\xef\xbb\xbf{}", "the body starts with a UTF-8 byte order mark"},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct answer a = harness_attention(cases[i].body);

		harness_expect_message(&a, cases[i].said);
	}
}
END_TEST

/* A /v1/sdpa k or v that does not fit says the shapes it was checked by and
 * the one it needs, as past_key's message does. */
START_TEST(test_sdpa_shapes_said)
{
	static const struct {
		const char *body, *pointer, *said;
	} cases[] = {
	    {"{\"q\":[[[[1,0]],[[0,1]]]],\"k\":[[[[1,0],[0,1]],[[1,0],[0,1]]]],"
	     "\"v\":[[[[1,2],[3,4]]]]}",
	     "/v", "v is [1, 1, 2, 2]; with k [1, 2, 2, 2] it must be [1, 2, 2, Dv]"},
	    {"{\"q\":[[[[1,0]]]],\"k\":[[[[1,0]]],[[[0,1]]]],\"v\":[[[[1,2]]],[[[3,4]]]]}",
	     "/k", "k is [2, 1, 1, 2]; with q [1, 1, 1, 2] it must be [1, Hkv, S, 2]"},
	    {"{\"q\":[[[1,0,0,1]]],\"k\":[[[1,0,0,1]],[[1,0,0,1]]],\"v\":[[[1,0,0,1]]],"
	     "\"num_heads\":2}",
	     "/k", "k is [2, 1, 4]; with q [1, 1, 4] it must be [1, S, 4]"},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct answer a = harness_sdpa(cases[i].body);

		harness_expect_error(&a, 422, "dimension_mismatch", cases[i].pointer);
		harness_expect_message(&a, cases[i].said);
	}
}
END_TEST

/* The fields a positional type does not read pass at their documented
 * defaults (a client that fills in every default). */
START_TEST(test_unread_positional_defaults_pass)
{
	struct answer a = harness_attention(
	    TINY EMB3 ",\"positional\":{\"type\":\"alibi\",\"theta\":10000,\"style\":"
	    "\"interleaved\",\"rotary_dim\":0,\"scaling\":1,\"offset\":0}}");

	harness_expect_ok(&a);
}
END_TEST

/* An engine error about one element of a list points at the element. */
START_TEST(test_engine_error_at_element)
{
	struct answer a = harness_attention(
	    TINY EMB3 ",\"positional\":{\"type\":\"rope\",\"positions\":[0,1,-1]}}");

	harness_expect_error(&a, 422, "position_out_of_range", "/positional/positions/2");
}
END_TEST

/* OpenAPI 3.1's integer is JSON Schema's: any number whose value is whole.
 * So 8.0 and 2e0 are read as 8 and 2 wherever the contract says integer
 * (what a Python float or a generated client may write), and answer as the
 * integers do; 1.5 is still the wrong type, and a whole value past every
 * bound is out of range, not wrapped. */
START_TEST(test_whole_reals_are_integers)
{
	static const struct {
		const char *ints, *reals;
	} same[] = {
	    {TINY "\"tokens\":[1,2,3]}", TINY "\"tokens\":[1.0,2e0,3.000]}"},
	    {TINY "\"tokens\":[[1,2],[3,4]]}", TINY "\"tokens\":[[1.0,2],[3,40e-1]]}"},
	    {"{\"model\":{\"d_model\":8,\"num_heads\":2,\"num_kv_heads\":1,\"seed\":7,\"vocab_size\":16},"
	     "\"tokens\":[1,2]}",
	     "{\"model\":{\"d_model\":8.0,\"num_heads\":2.0,\"num_kv_heads\":1e0,\"seed\":7.0,\"vocab_size\":16e0},"
	     "\"tokens\":[1,2]}"},
	    {TINY EMB3 ",\"mask\":{\"window\":2}}", TINY EMB3 ",\"mask\":{\"window\":2.0}}"},
	    {TINY EMB3 ",\"positional\":{\"type\":\"rope\",\"offset\":3}}",
	     TINY EMB3 ",\"positional\":{\"type\":\"rope\",\"offset\":3.0}}"},
	    {TINY EMB3 ",\"precision\":4}", TINY EMB3 ",\"precision\":4.0}"},
	    {TINY "\"embeddings\":{\"shape\":[1,8],\"data\":" R0 "}}",
	     TINY "\"embeddings\":{\"shape\":[1.0,8e0],\"data\":" R0 "}}"},
	};

	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		struct answer a = harness_attention(same[i].ints);
		struct answer b = harness_attention(same[i].reals);

		harness_expect_ok(&a);
		harness_expect_ok(&b);
		json_object_del(a.json, "usage"); /* its milliseconds differ */
		json_object_del(b.json, "usage");
		ck_assert_msg(json_equal(a.json, b.json), "%s answered\n%s\nbut %s answered\n%s",
			      same[i].ints, a.text, same[i].reals, b.text);
	}
	static const struct {
		const char *body, *code, *pointer;
	} refused[] = {
	    {TINY "\"tokens\":[1,2.5]}", "invalid_type", "/tokens/1"},
	    {TINY EMB3 ",\"precision\":4.5}", "invalid_type", "/precision"},
	    {TINY EMB3 ",\"precision\":1e300}", "out_of_range", "/precision"},
	    {TINY EMB3 ",\"precision\":-1e300}", "out_of_range", "/precision"},
	    {TINY "\"tokens\":[1e300]}", "token_out_of_range", "/tokens/0"},
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct answer a = harness_attention(refused[i].body);

		harness_expect_error(&a, 422, refused[i].code, refused[i].pointer);
	}
}
END_TEST

static Suite *validation_suite(void)
{
	Suite *s = suite_create("api_validation");
	TCase *tc = harness_tcase(s, "validation", 60);

	tcase_add_loop_test(tc, test_bad_request, 0,
			    (int)(sizeof(bad_requests) / sizeof(bad_requests[0])));
	tcase_add_test(tc, test_malformed_position);
	tcase_add_test(tc, test_nul_escape_said);
	tcase_add_test(tc, test_token_2_pow_63);
	tcase_add_test(tc, test_js_whole_floats);
	tcase_add_test(tc, test_big_literals_alone_are_reals);
	tcase_add_test(tc, test_messages_say_what);
	tcase_add_test(tc, test_sdpa_shapes_said);
	tcase_add_test(tc, test_engine_error_at_element);
	tcase_add_test(tc, test_unread_positional_defaults_pass);
	tcase_add_test(tc, test_whole_reals_are_integers);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .setup = harness_setup,
	    .teardown = harness_teardown,
	};

	return suite_main(argc, argv, validation_suite, &opts);
}
