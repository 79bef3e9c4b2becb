/*
 * fuzz_escape.c -- libFuzzer target for the string escaper every writer
 * uses: for any bytes, the escaped text in quotes is one valid JSON string
 * (jansson parses it), holds no raw control character, and decodes back to
 * the input exactly when the input was valid UTF-8 (otherwise the count of
 * replaced sequences is nonzero).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "writers/json_escape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t invalid = 0;
    char *esc = act_json_escape_dup((const char *)data, size, &invalid);
    if (!esc)
        return 0;
    size_t n = strlen(esc);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)esc[i] < 0x20)
            abort();
    char *doc = malloc(n + 3);
    if (!doc)
        abort();
    doc[0] = '"';
    memcpy(doc + 1, esc, n);
    doc[n + 1] = '"';
    json_error_t je;
    json_t *v = json_loadb(doc, n + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!v || !json_is_string(v))
        abort(); /* not one valid JSON string */
    if (!invalid &&
        (json_string_length(v) != size || memcmp(json_string_value(v), data, size) != 0))
        abort(); /* valid UTF-8 must round-trip exactly */
    if (invalid && json_string_length(v) == size && !memcmp(json_string_value(v), data, size))
        abort(); /* replaced bytes cannot come back unchanged */
    json_decref(v);
    free(doc);
    free(esc);
    return 0;
}
