/* The ids attnscope gives each string of a JSON array (argv[2]) with the
 * tokenizer of a model directory or file (argv[1]): control tokens' texts
 * read as those tokens, no BOS, as the tokenizers library's
 * encode(text, add_special_tokens=false). Prints a JSON array of arrays.
 * With --pairs first: for each string i the sentence pair (string i,
 * string i+1, the last with the first) as as_tokenizer_tokenize_pair
 * makes it (the `prompt "A" "B"` command's), as [ids, token types]. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/model.h"
#include "attnscope/tokenizer.h"

/* ids as a JSON array */
static void print_ids(const int32_t *ids, size_t n)
{
    printf("[");
    for (size_t k = 0; k < n; k++)
        printf("%s%d", k ? "," : "", ids[k]);
    printf("]");
}

int main(int argc, char **argv)
{
    as_model *m;
    as_error err = {{0}};
    bool pairs = argc == 4 && !strcmp(argv[1], "--pairs");
    if (pairs)
        argv++, argc--;
    if (argc != 3) {
        fprintf(stderr, "usage: %s [--pairs] MODEL TEXTS.json\n", argv[0]);
        return 2;
    }
    if (as_model_load(&m, argv[1], &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    json_t *texts = json_load_file(argv[2], JSON_ALLOW_NUL, NULL) /* texts may hold U+0000 */;
    if (!json_is_array(texts)) {
        fprintf(stderr, "%s: not a JSON array\n", argv[2]);
        return 1;
    }
    size_t i;
    json_t *t;
    printf("[");
    json_array_foreach(texts, i, t) {
        if (pairs) {
            json_t *u = json_array_get(texts, (i + 1) % json_array_size(texts));
            int32_t *ids, *types;
            size_t n, na;
            if (as_tokenizer_tokenize_pair(m->tok, json_string_value(t), json_string_length(t), json_string_value(u),
                                           json_string_length(u), AS_TOK_PARSE_SPECIAL, &ids, &types, &n, &na,
                                           &err)) {
                fprintf(stderr, "pair %zu: %s\n", i, err.msg);
                return 1;
            }
            printf("%s[", i ? "," : "");
            print_ids(ids, n);
            printf(",");
            print_ids(types, n);
            printf("]");
            free(ids), free(types);
            continue;
        }
        int32_t *ids;
        size_t n;
        if (as_tokenizer_tokenize(m->tok, json_string_value(t), json_string_length(t), AS_TOK_PARSE_SPECIAL, &ids, &n,
                                  &err)) {
            fprintf(stderr, "string %zu: %s\n", i, err.msg);
            return 1;
        }
        printf("%s", i ? "," : "");
        print_ids(ids, n);
        free(ids);
    }
    printf("]\n");
    json_decref(texts);
    as_model_free(m);
    return 0;
}
