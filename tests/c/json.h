/* A small JSON reader for the shared test vectors. Numbers keep their source text so
 * that 64-bit integers are never rounded through a double. */
#ifndef SEGFLAKE_TEST_JSON_H
#define SEGFLAKE_TEST_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value {
    json_type type;
    int boolean;
    char *text;                  /* string contents, or the number's source text */
    size_t count;                /* array or object members */
    char **keys;                 /* object keys */
    struct json_value **items;   /* array items or object values */
} json_value;

/* Parses NUL-terminated text; NULL on a syntax error (with a message in err). */
json_value *json_parse(const char *text, char *err, size_t err_len);
json_value *json_parse_file(const char *path, char *err, size_t err_len);
void json_free(json_value *v);

/* Object member by key, or NULL. */
const json_value *json_get(const json_value *obj, const char *key);
/* The string of a member, or NULL when it is missing or not a string. */
const char *json_get_string(const json_value *obj, const char *key);
/* Reads a member that is a non-negative integer (number, or decimal string) into *out;
 * returns 0 when missing or malformed. */
int json_get_u64(const json_value *obj, const char *key, uint64_t *out);
/* Parses a non-negative decimal integer text; returns 0 if it is not one or overflows. */
int json_text_u64(const char *text, uint64_t *out);

/* The value as compact JSON text (malloc'd; free it), or NULL when out of memory. */
char *json_write(const json_value *v);
/* Whether two values are equal (objects: the same members, in any order). */
int json_equal(const json_value *a, const json_value *b);

#endif
