/*
 * sanitize.c -- the torch_npu-exact lossy metadata sanitiser (see
 * sanitize.h and reference/torch_npu-behaviours.md section 3).
 */
#include "sanitize.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"

static const char *describe(unsigned c, char *tmp, size_t tmplen)
{
    switch (c) {
    case '"': return "double quote";
    case '\\': return "backslash";
    case '\n': return "newline";
    case '\r': return "carriage return";
    case '\t': return "tab";
    case '\b': return "backspace";
    case '\f': return "form feed";
    default: snprintf(tmp, tmplen, "control character U+%04X", c); return tmp;
    }
}

static int notes_add(act_sanitized *out, size_t count, const char *desc)
{
    char **nn = realloc(out->notes, (out->n_notes + 1) * sizeof(*nn));
    if (!nn)
        return ACT_E_NOMEM;
    out->notes = nn;
    size_t len = strlen(desc) + 24;
    char *note = malloc(len);
    if (!note)
        return ACT_E_NOMEM;
    snprintf(note, len, "%zu %s", count, desc);
    out->notes[out->n_notes++] = note;
    return 0;
}

/* Move the notes of `from` to the end of `to`'s notes. */
static int notes_move(act_sanitized *to, act_sanitized *from)
{
    if (!from->n_notes)
        return 0;
    char **nn = realloc(to->notes, (to->n_notes + from->n_notes) * sizeof(*nn));
    if (!nn)
        return ACT_E_NOMEM;
    to->notes = nn;
    memcpy(to->notes + to->n_notes, from->notes, from->n_notes * sizeof(*nn));
    to->n_notes += from->n_notes;
    free(from->notes);
    from->notes = NULL;
    from->n_notes = 0;
    return 0;
}

/* Sanitise s into out->text; append this string's notes to out->notes. */
static int sanitize_into(const char *s, size_t n, act_sanitized *out)
{
    size_t counts[0x5d] = {0}; /* indexed by code point; max is '\\' */
    char *t = malloc(n + 1);
    if (!t)
        return ACT_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20) {
            t[i] = ' ';
            counts[c]++;
        } else if (c == '"') {
            t[i] = '\'';
            counts[c]++;
        } else if (c == '\\') {
            t[i] = '/';
            counts[c]++;
        } else {
            t[i] = (char)c;
        }
    }
    t[n] = '\0';
    free(out->text);
    out->text = t;
    out->len = n;
    for (unsigned c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        if (!counts[c])
            continue;
        char tmp[40];
        if (notes_add(out, counts[c], describe(c, tmp, sizeof(tmp))))
            return ACT_E_NOMEM;
    }
    return 0;
}

int act_sanitize_value(const char *s, size_t n, act_sanitized *out)
{
    memset(out, 0, sizeof(*out));
    int rc = sanitize_into(s, n, out);
    if (rc)
        act_sanitized_free(out);
    return rc;
}

/* Rebuild `v` with every string (keys too) sanitised; notes accumulate in
 * `acc`. Returns a new reference or NULL when out of memory. */
static json_t *walk(json_t *v, act_sanitized *acc)
{
    if (json_is_string(v)) {
        act_sanitized one = {0};
        if (sanitize_into(json_string_value(v), json_string_length(v), &one))
            goto fail_one;
        if (notes_move(acc, &one))
            goto fail_one;
        json_t *r = json_stringn(one.text, one.len);
        act_sanitized_free(&one);
        return r;
    fail_one:
        act_sanitized_free(&one);
        return NULL;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e)
        {
            json_t *w = a ? walk(e, acc) : NULL;
            if (!w || json_array_append_new(a, w)) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        size_t klen;
        json_t *e;
        json_object_keylen_foreach(v, k, klen, e)
        {
            act_sanitized key = {0};
            json_t *w = NULL;
            if (!o || sanitize_into(k, klen, &key))
                goto fail_obj;
            if (notes_move(acc, &key))
                goto fail_obj;
            w = walk(e, acc);
            if (!w || json_object_setn_new(o, key.text, key.len, w))
                goto fail_obj;
            act_sanitized_free(&key);
            continue;
        fail_obj:
            act_sanitized_free(&key);
            json_decref(o);
            return NULL;
        }
        return o;
    }
    return json_incref(v); /* numbers, true, false, null */
}

int act_sanitize_json_value(const char *s, size_t n, act_sanitized *out)
{
    memset(out, 0, sizeof(*out));
    json_error_t jerr;
    json_t *doc = json_loadb(s, n, JSON_DECODE_ANY, &jerr);
    if (!doc)
        return act_sanitize_value(s, n, out);
    json_t *clean = walk(doc, out);
    json_decref(doc);
    char *text = clean ? json_dumps(clean, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER) : NULL;
    json_decref(clean);
    if (!text) {
        act_sanitized_free(out);
        return ACT_E_NOMEM;
    }
    /* json_dumps' memory comes from jansson's allocator (malloc by default);
     * copy so callers can always free() it. */
    out->len = strlen(text);
    out->text = malloc(out->len + 1);
    if (!out->text) {
        free(text);
        act_sanitized_free(out);
        return ACT_E_NOMEM;
    }
    memcpy(out->text, text, out->len + 1);
    free(text);
    return 0;
}

char *act_sanitized_notes_join(const act_sanitized *r)
{
    size_t len = 1;
    for (size_t i = 0; i < r->n_notes; i++)
        len += strlen(r->notes[i]) + 2;
    char *j = malloc(len);
    if (!j)
        return NULL;
    j[0] = '\0';
    size_t off = 0;
    for (size_t i = 0; i < r->n_notes; i++) {
        size_t l = strlen(r->notes[i]);
        if (i) {
            memcpy(j + off, ", ", 2);
            off += 2;
        }
        memcpy(j + off, r->notes[i], l);
        off += l;
        j[off] = '\0';
    }
    return j;
}

void act_sanitized_free(act_sanitized *r)
{
    if (!r)
        return;
    free(r->text);
    for (size_t i = 0; i < r->n_notes; i++)
        free(r->notes[i]);
    free(r->notes);
    memset(r, 0, sizeof(*r));
}
