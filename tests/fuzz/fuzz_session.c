/* Fuzz target: the command parser and every command, through
 * as_split_commands and as_session_exec, on a fresh session over a fixture
 * for each input (so an input replays alone).
 * The first byte picks the capture budget (byte % 3: 0, 1 or 64 MB):
 * commands must cope with hooks that are not captured; and the model
 * (byte / 3 % 6): tiny-gpt2, the encoder tiny-bert, the encoder-decoders
 * tiny-transformer and tiny-t5, the vision model tiny-vit (whose image is
 * img.png in the scratch directory), the mixture of experts tiny-qwen2moe
 * (routed and shared experts). The rest is a command line, split
 * at ';' as the REPL and -e do.
 * Commands that take file names (dump, patch sweep, diff, export) run in a
 * private scratch directory, and inputs with a word holding '/' or ".."
 * are skipped, so the fuzzer cannot write outside it. `diff` can read
 * other.gguf there (the tiny-llama fixture).
 * Properties: no crash, leak or undefined behaviour; a failed command sets
 * an error message; no temporary file is left behind. */
#include "fuzz.h"

#include <dirent.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "attnscope/session.h"
#include "../../src/session_internal.h" /* the session's fields, which the fuzzer reads */

enum { N_MODELS = 6 };
static const char *const names[N_MODELS] = {"tiny-gpt2.gguf", "tiny-bert.gguf", "tiny-transformer.gguf",
                                            "tiny-vit.gguf", "tiny-t5.gguf", "tiny-qwen2moe.gguf"};
static uint8_t *models[N_MODELS];
static size_t model_sizes[N_MODELS];

static void cleanup(void)
{
    for (int i = 0; i < N_MODELS; i++)
        free(models[i]);
}

/* A fixture's bytes as a file of the scratch directory. */
static void copy_in(const char *fixture, const char *name)
{
    size_t n;
    uint8_t *b = fuzz_read_file(fuzz_fixture(fixture), &n);
    char path[256];
    snprintf(path, sizeof path, "%s/%s", fuzz_scratch_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f))
        abort();
    free(b);
}

static void setup(void)
{
    for (int i = 0; i < N_MODELS; i++)
        models[i] = fuzz_read_file(fuzz_fixture(names[i]), &model_sizes[i]);
    copy_in("tiny-llama.gguf", "other.gguf");
    copy_in("tiny-vit/image.png", "img.png");
    as_set_threads(1);
    atexit(cleanup);
}

/* True when no word of any command names a path outside the scratch dir. */
static bool stays_inside(char **cmds, int n)
{
    for (int i = 0; i < n; i++) {
        char **w;
        int nw;
        as_error err;
        if (as_split_words(cmds[i], &w, &nw, &err))
            continue; /* the session will refuse it too */
        bool ok = true;
        for (int k = 0; k < nw; k++)
            ok &= strchr(w[k], '/') == NULL && strstr(w[k], "..") == NULL;
        as_free_commands(w, nw);
        if (!ok)
            return false;
    }
    return true;
}

static bool temp_files_left(void)
{
    static const char *const keep[] = {"other.gguf", "img.png", NULL};
    bool left = false;
    DIR *d = opendir(fuzz_scratch_dir());
    for (struct dirent *e; d && (e = readdir(d));)
        left |= strstr(e->d_name, ".tmp.") != NULL; /* "NAME.tmp.XXXXXX" of an atomic write */
    if (d)
        closedir(d);
    fuzz_scratch_clean(keep); /* what commands wrote goes, so inputs stay independent */
    return left;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!models[0])
        setup();
    if (size < 1 || size > 4096)
        return 0;
    static const size_t budgets[] = {0, 1, 64};
    size_t budget = budgets[data[0] % 3];
    int which = data[0] / 3 % N_MODELS;
    char *line = malloc(size);
    memcpy(line, data + 1, size - 1);
    line[size - 1] = '\0'; /* commands are C strings: a NUL ends the line */
    int n;
    char **cmds = as_split_commands(line, &n);
    FUZZ_CHECK(cmds != NULL, "split failed");
    if (!stays_inside(cmds, n)) {
        as_free_commands(cmds, n);
        free(line);
        return 0;
    }
    as_gguf *g;
    as_model *m;
    as_session *s;
    as_error err;
    if (as_gguf_parse(&g, models[which], model_sizes[which], names[which], &err) || as_model_from_gguf(&m, g, &err) ||
        as_session_from_model(&s, m, budget, fuzz_devnull(), fuzz_devnull(), &err)) {
        fprintf(stderr, "fuzz: %s\n", err.msg);
        abort();
    }
    fuzz_scratch_enter();
    for (int i = 0; i < n && !s->quit; i++) {
        memset(&err, 0, sizeof err);
        if (as_session_exec(s, cmds[i], &err) != AS_OK)
            FUZZ_CHECK(err.msg[0] != '\0', "command '%s' failed without a message", cmds[i]);
        as_set_threads(1); /* `set threads 200` must not slow the next input */
    }
    fuzz_scratch_leave();
    as_session_free(s);
    as_free_commands(cmds, n);
    /* (unless the input itself names such a file) */
    FUZZ_CHECK(!temp_files_left() || strstr(line, ".tmp."), "a temporary file was left behind");
    free(line);
    return 0;
}
