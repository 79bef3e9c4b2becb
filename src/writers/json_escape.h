/*
 * json_escape.h -- lossless RFC 8259 string escaping for every string the
 * writers emit (keys too). Controls below 0x20 are escaped (\n, \t, \r, \b,
 * \f short forms, \u00XX others), `"` and `\` are escaped, DEL passes as is,
 * U+2028/U+2029 become \u2028/\u2029 so the file is also safe JavaScript.
 * Bytes that are not valid UTF-8 (overlong forms, surrogates, truncated
 * sequences, code points above U+10FFFF, stray continuation bytes) become
 * U+FFFD, one per maximal invalid subpart (as Python's errors="replace"),
 * and are counted so the trace can say how many were replaced.
 */
#ifndef ACT_JSON_ESCAPE_H
#define ACT_JSON_ESCAPE_H

#include <stddef.h>

#include "obuf.h"

/* Append the escaped form of s[0..n) (no surrounding quotes) to `b`.
 * Returns the number of invalid UTF-8 sequences replaced by U+FFFD. */
size_t act_json_escape(act_obuf *b, const char *s, size_t n);

/* Same with the surrounding quotes. */
size_t act_json_string(act_obuf *b, const char *s, size_t n);

/* Convenience: malloc'ed, NUL-terminated escaped copy (no quotes); NULL
 * when out of memory. `invalid` (may be NULL) receives the count. */
char *act_json_escape_dup(const char *s, size_t n, size_t *invalid);

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes at
 * s do not start one; *skip receives how many bytes form the maximal
 * invalid subpart to replace by one U+FFFD. */
size_t act_utf8_seq(const unsigned char *s, size_t n, size_t *skip);

#endif
