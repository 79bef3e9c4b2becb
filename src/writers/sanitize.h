/*
 * sanitize.h -- the exact torch_npu metadata sanitiser (torch_npu
 * `_add_metadata_sanitizer_patch.py`), for strings handed to a writer that
 * cannot take escapes (kineto replaces every backslash with '/', so an
 * escaped quote ends its string early). acceltrace's own writer escapes
 * losslessly (json_escape.h); this lossy transform is only for the torch
 * plugin's path into kineto.
 *
 *   `"` -> `'`, `\` -> `/`, every byte below 0x20 -> space; nothing else
 *   changes (DEL, U+2028 and non-ASCII pass through). Notes say what was
 *   replaced: "<count> <description>", one per distinct character, sorted
 *   by code point ("double quote", "backslash", "newline", "carriage
 *   return", "tab", "backspace", "form feed", "control character U+XXXX").
 */
#ifndef ACT_SANITIZE_H
#define ACT_SANITIZE_H

#include <stddef.h>

/* Exported from the shared library: the torch plugin (C++) calls these. */
#if defined(__GNUC__)
#define ACT_SANITIZE_API __attribute__((visibility("default")))
#else
#define ACT_SANITIZE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct act_sanitized {
    char *text;   /* malloc'ed, NUL-terminated */
    size_t len;   /* bytes in text (it may contain no NUL: NUL became space) */
    char **notes; /* n_notes malloc'ed strings */
    size_t n_notes;
} act_sanitized;

/* _sanitize_value: returns 0 or ACT_E_NOMEM. */
ACT_SANITIZE_API int act_sanitize_value(const char *s, size_t n, act_sanitized *out);

/* _sanitize_json_value: when s parses as JSON (any value), every string in
 * it, object keys included, is sanitised and the document re-serialised as
 * Python's json.dumps(ensure_ascii=False) does (", " and ": " separators,
 * non-ASCII literal); otherwise falls back to act_sanitize_value on the raw
 * text. Notes from all strings are concatenated in document order (key
 * before value). Returns 0 or ACT_E_NOMEM. */
ACT_SANITIZE_API int act_sanitize_json_value(const char *s, size_t n, act_sanitized *out);

/* Notes joined with ", " (malloc'ed; "" when none); NULL when out of memory. */
ACT_SANITIZE_API char *act_sanitized_notes_join(const act_sanitized *r);

ACT_SANITIZE_API void act_sanitized_free(act_sanitized *r);

#ifdef __cplusplus
}
#endif

#endif
