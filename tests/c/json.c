#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p;
    char *err;
    size_t err_len;
    int depth;
} parser;

static void fail(parser *ps, const char *what) {
    if (ps->err && ps->err_len && ps->err[0] == '\0') {
        snprintf(ps->err, ps->err_len, "%s near \"%.20s\"", what, ps->p);
    }
}

static void skip_ws(parser *ps) {
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') ps->p++;
}

static json_value *new_value(json_type t) {
    json_value *v = (json_value *)calloc(1, sizeof *v);
    if (v) v->type = t;
    return v;
}

static int append(json_value *v, char *key, json_value *item) {
    char **keys = v->keys;
    json_value **items = (json_value **)realloc(v->items, (v->count + 1) * sizeof *items);
    if (!items) return 0;
    v->items = items;
    if (v->type == JSON_OBJECT) {
        keys = (char **)realloc(v->keys, (v->count + 1) * sizeof *keys);
        if (!keys) return 0;
        v->keys = keys;
        v->keys[v->count] = key;
    }
    v->items[v->count++] = item;
    return 1;
}

static void put_utf8(char **out, unsigned cp) {
    char *o = *out;
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    *out = o;
}

static int hex4(const char *s, unsigned *out) {
    unsigned v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static char *parse_string_raw(parser *ps) {
    const char *start;
    char *buf, *o;
    if (*ps->p != '"') { fail(ps, "expected a string"); return NULL; }
    start = ++ps->p;
    while (*ps->p && *ps->p != '"') {
        if (*ps->p == '\\' && ps->p[1]) ps->p++;
        ps->p++;
    }
    if (*ps->p != '"') { fail(ps, "unterminated string"); return NULL; }
    buf = (char *)malloc((size_t)(ps->p - start) + 1);
    if (!buf) return NULL;
    o = buf;
    {
        const char *s = start;
        while (s < ps->p) {
            if (*s != '\\') { *o++ = *s++; continue; }
            s++;
            switch (*s) {
            case '"': *o++ = '"'; s++; break;
            case '\\': *o++ = '\\'; s++; break;
            case '/': *o++ = '/'; s++; break;
            case 'b': *o++ = '\b'; s++; break;
            case 'f': *o++ = '\f'; s++; break;
            case 'n': *o++ = '\n'; s++; break;
            case 'r': *o++ = '\r'; s++; break;
            case 't': *o++ = '\t'; s++; break;
            case 'u': {
                unsigned cp, lo;
                if (!hex4(s + 1, &cp)) { free(buf); fail(ps, "bad \\u escape"); return NULL; }
                s += 5;
                if (cp >= 0xD800 && cp < 0xDC00 && s[0] == '\\' && s[1] == 'u' && hex4(s + 2, &lo) &&
                    lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    s += 6;
                }
                put_utf8(&o, cp);
                break;
            }
            default: free(buf); fail(ps, "bad escape"); return NULL;
            }
        }
    }
    *o = '\0';
    ps->p++;
    return buf;
}

static json_value *parse_value(parser *ps);

static json_value *parse_container(parser *ps, int object) {
    json_value *v = new_value(object ? JSON_OBJECT : JSON_ARRAY);
    if (!v) return NULL;
    ps->p++;
    skip_ws(ps);
    if (*ps->p == (object ? '}' : ']')) { ps->p++; return v; }
    for (;;) {
        char *key = NULL;
        json_value *item;
        skip_ws(ps);
        if (object) {
            key = parse_string_raw(ps);
            if (!key) { json_free(v); return NULL; }
            skip_ws(ps);
            if (*ps->p != ':') { free(key); fail(ps, "expected ':'"); json_free(v); return NULL; }
            ps->p++;
        }
        item = parse_value(ps);
        if (!item || !append(v, key, item)) {
            free(key);
            json_free(item);
            json_free(v);
            return NULL;
        }
        skip_ws(ps);
        if (*ps->p == ',') { ps->p++; continue; }
        if (*ps->p == (object ? '}' : ']')) { ps->p++; return v; }
        fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
        json_free(v);
        return NULL;
    }
}

static json_value *parse_value(parser *ps) {
    json_value *v;
    skip_ws(ps);
    if (++ps->depth > 64) { fail(ps, "nesting too deep"); return NULL; }
    switch (*ps->p) {
    case '{': v = parse_container(ps, 1); break;
    case '[': v = parse_container(ps, 0); break;
    case '"': {
        char *s = parse_string_raw(ps);
        v = s ? new_value(JSON_STRING) : NULL;
        if (v) v->text = s; else free(s);
        break;
    }
    case 't': case 'f': case 'n': {
        const char *word = *ps->p == 't' ? "true" : *ps->p == 'f' ? "false" : "null";
        size_t n = strlen(word);
        if (strncmp(ps->p, word, n) != 0) { fail(ps, "bad literal"); v = NULL; break; }
        ps->p += n;
        v = new_value(word[0] == 'n' ? JSON_NULL : JSON_BOOL);
        if (v) v->boolean = word[0] == 't';
        break;
    }
    default: {
        const char *start = ps->p;
        if (*ps->p == '-') ps->p++;
        while ((*ps->p >= '0' && *ps->p <= '9') || *ps->p == '.' || *ps->p == 'e' ||
               *ps->p == 'E' || *ps->p == '+' || *ps->p == '-')
            ps->p++;
        if (ps->p == start) { fail(ps, "unexpected character"); v = NULL; break; }
        v = new_value(JSON_NUMBER);
        if (v) {
            v->text = (char *)malloc((size_t)(ps->p - start) + 1);
            if (!v->text) { free(v); v = NULL; break; }
            memcpy(v->text, start, (size_t)(ps->p - start));
            v->text[ps->p - start] = '\0';
        }
    }
    }
    ps->depth--;
    return v;
}

json_value *json_parse(const char *text, char *err, size_t err_len) {
    parser ps;
    json_value *v;
    ps.p = text;
    ps.err = err;
    ps.err_len = err_len;
    ps.depth = 0;
    if (err && err_len) err[0] = '\0';
    v = parse_value(&ps);
    if (v) {
        skip_ws(&ps);
        if (*ps.p != '\0') { fail(&ps, "trailing text"); json_free(v); v = NULL; }
    }
    return v;
}

json_value *json_parse_file(const char *path, char *err, size_t err_len) {
    FILE *f = fopen(path, "rb");
    long n;
    char *buf;
    json_value *v;
    if (!f) { snprintf(err, err_len, "cannot open %s", path); return NULL; }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        snprintf(err, err_len, "cannot size %s", path);
        return NULL;
    }
    buf = (char *)malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        snprintf(err, err_len, "cannot read %s", path);
        return NULL;
    }
    buf[n] = '\0';
    fclose(f);
    v = json_parse(buf, err, err_len);
    free(buf);
    return v;
}

void json_free(json_value *v) {
    size_t i;
    if (!v) return;
    for (i = 0; i < v->count; i++) {
        if (v->keys) free(v->keys[i]);
        json_free(v->items[i]);
    }
    free(v->keys);
    free(v->items);
    free(v->text);
    free(v);
}

const json_value *json_get(const json_value *obj, const char *key) {
    size_t i;
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    for (i = 0; i < obj->count; i++)
        if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
    return NULL;
}

const char *json_get_string(const json_value *obj, const char *key) {
    const json_value *v = json_get(obj, key);
    return v && v->type == JSON_STRING ? v->text : NULL;
}

int json_text_u64(const char *text, uint64_t *out) {
    uint64_t v = 0;
    const char *s = text;
    if (!s || !*s) return 0;
    for (; *s; s++) {
        unsigned d;
        if (*s < '0' || *s > '9') return 0;
        d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

int json_get_u64(const json_value *obj, const char *key, uint64_t *out) {
    const json_value *v = json_get(obj, key);
    if (!v || (v->type != JSON_NUMBER && v->type != JSON_STRING)) return 0;
    return json_text_u64(v->text, out);
}

/* ---- writing and comparing (the registry protocol vectors) ---------------------------- */

typedef struct {
    char *buf;
    size_t len, cap;
} sbuf;

static void sput(sbuf *s, const char *text, size_t n) {
    if (s->len + n + 1 > s->cap) {
        size_t cap = (s->len + n + 1) * 2;
        char *b = (char *)realloc(s->buf, cap);
        if (!b) return;
        s->buf = b;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, text, n);
    s->len += n;
    s->buf[s->len] = '\0';
}

static void write_string(sbuf *s, const char *t) {
    sput(s, "\"", 1);
    for (; *t; t++) {
        unsigned char c = (unsigned char)*t;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            sput(s, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            sput(s, esc, 6);
        } else {
            sput(s, (const char *)&c, 1);
        }
    }
    sput(s, "\"", 1);
}

static void write_value(sbuf *s, const json_value *v) {
    size_t i;
    switch (v->type) {
    case JSON_NULL: sput(s, "null", 4); break;
    case JSON_BOOL: v->boolean ? sput(s, "true", 4) : sput(s, "false", 5); break;
    case JSON_NUMBER: sput(s, v->text, strlen(v->text)); break;
    case JSON_STRING: write_string(s, v->text); break;
    case JSON_ARRAY:
    case JSON_OBJECT:
        sput(s, v->type == JSON_ARRAY ? "[" : "{", 1);
        for (i = 0; i < v->count; i++) {
            if (i) sput(s, ",", 1);
            if (v->type == JSON_OBJECT) {
                write_string(s, v->keys[i]);
                sput(s, ":", 1);
            }
            write_value(s, v->items[i]);
        }
        sput(s, v->type == JSON_ARRAY ? "]" : "}", 1);
        break;
    }
}

char *json_write(const json_value *v) {
    sbuf s = {NULL, 0, 0};
    sput(&s, "", 0);
    if (v) write_value(&s, v);
    return s.buf;
}

int json_equal(const json_value *a, const json_value *b) {
    size_t i;
    if (!a || !b || a->type != b->type) return 0;
    switch (a->type) {
    case JSON_NULL: return 1;
    case JSON_BOOL: return a->boolean == b->boolean;
    case JSON_NUMBER:
    case JSON_STRING: return strcmp(a->text, b->text) == 0;
    case JSON_ARRAY:
        if (a->count != b->count) return 0;
        for (i = 0; i < a->count; i++)
            if (!json_equal(a->items[i], b->items[i])) return 0;
        return 1;
    case JSON_OBJECT:
        if (a->count != b->count) return 0;
        for (i = 0; i < a->count; i++)
            if (!json_equal(a->items[i], json_get(b, a->keys[i]))) return 0;
        return 1;
    }
    return 0;
}
