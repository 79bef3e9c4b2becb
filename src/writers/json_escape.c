/*
 * json_escape.c -- RFC 8259 escaping with UTF-8 validation (see
 * json_escape.h). The common case (printable ASCII without `"` or `\`)
 * is copied in runs with one memcpy; everything else goes through the
 * byte-at-a-time path.
 */
#include "json_escape.h"

#include <stdlib.h>

/* 1 = byte may be copied as is. */
static const unsigned char act_json_safe[256] = {
#define R16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
    R16(0), R16(0), /* 0x00-0x1f */
    1,      1,      0,      1,      1,      1,      1,      1,
    1,      1,      1,      1,      1,      1,      1,      1, /* 0x20-0x2f: '"' */
    R16(1), R16(1),                                            /* 0x30-0x4f */
    1,      1,      1,      1,      1,      1,      1,      1,
    1,      1,      1,      1,      0,      1,      1,      1,     /* 0x50-0x5f: '\' */
    R16(1), R16(1),                                                /* 0x60-0x7f, DEL ok */
    R16(0), R16(0), R16(0), R16(0), R16(0), R16(0), R16(0), R16(0) /* 0x80-0xff */
#undef R16
};

size_t act_utf8_seq(const unsigned char *s, size_t n, size_t *skip)
{
    unsigned c = s[0];
    unsigned lo = 0x80, hi = 0xbf;
    size_t need;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        need = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        else if (c == 0xf4)
            hi = 0x8f; /* above U+10FFFF */
    } else {
        *skip = 1; /* continuation byte, C0/C1 overlong lead, F5..FF */
        return 0;
    }
    size_t i = 1;
    for (; i < need && i < n; i++) {
        unsigned d = s[i];
        if (d < lo || d > hi)
            break;
        lo = 0x80;
        hi = 0xbf;
    }
    if (i == need)
        return need;
    *skip = i; /* the valid prefix is one maximal invalid subpart */
    return 0;
}

static void put_u00(act_obuf *b, unsigned c)
{
    static const char hexd[] = "0123456789abcdef";
    char e[6] = {'\\', 'u', '0', '0', hexd[c >> 4], hexd[c & 15]};
    act_obuf_put(b, e, 6);
}

size_t act_json_escape(act_obuf *b, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t invalid = 0, i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && act_json_safe[s[j]])
            j++;
        if (j > i) {
            act_obuf_put(b, s + i, j - i);
            i = j;
            if (i == n)
                break;
        }
        unsigned c = s[i];
        if (c < 0x80) {
            switch (c) {
            case '"': act_obuf_lit(b, "\\\""); break;
            case '\\': act_obuf_lit(b, "\\\\"); break;
            case '\n': act_obuf_lit(b, "\\n"); break;
            case '\t': act_obuf_lit(b, "\\t"); break;
            case '\r': act_obuf_lit(b, "\\r"); break;
            case '\b': act_obuf_lit(b, "\\b"); break;
            case '\f': act_obuf_lit(b, "\\f"); break;
            default: put_u00(b, c); break;
            }
            i++;
            continue;
        }
        size_t skip = 1;
        size_t len = act_utf8_seq(s + i, n - i, &skip);
        if (!len) {
            act_obuf_lit(b, "\xef\xbf\xbd");
            invalid++;
            i += skip;
            continue;
        }
        if (len == 3 && c == 0xe2 && s[i + 1] == 0x80 && (s[i + 2] == 0xa8 || s[i + 2] == 0xa9))
            act_obuf_put(b, s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029", 6);
        else
            act_obuf_put(b, s + i, len);
        i += len;
    }
    return invalid;
}

size_t act_json_string(act_obuf *b, const char *s, size_t n)
{
    act_obuf_putc(b, '"');
    size_t inv = act_json_escape(b, s, n);
    act_obuf_putc(b, '"');
    return inv;
}

char *act_json_escape_dup(const char *s, size_t n, size_t *invalid)
{
    act_obuf b;
    if (act_obuf_init(&b, -1, n + 16))
        return NULL;
    size_t inv = act_json_escape(&b, s, n);
    act_obuf_putc(&b, '\0');
    if (b.err) {
        act_obuf_free(&b);
        return NULL;
    }
    if (invalid)
        *invalid = inv;
    return b.buf;
}
