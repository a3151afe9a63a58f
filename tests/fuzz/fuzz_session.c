/* Fuzz target: the command parser and every command, through
 * as_split_commands and as_session_exec, on a fresh session over a fixture
 * for each input (so an input replays alone).
 * The first byte picks the capture budget (byte % 3: 0, 1 or 64 MB):
 * commands must cope with hooks that are not captured; and the model
 * (byte / 3 % 7): tiny-gpt2, the encoder tiny-bert, the encoder-decoders
 * tiny-transformer and tiny-t5, the vision model tiny-vit (whose image is
 * img.png in the scratch directory), the mixture of experts tiny-qwen2moe
 * (routed and shared experts), or a saved run of tiny-gpt2 opened as
 * `attnscope --open` does (zero weights, the capture from the file: the
 * commands it answers, and the refusals of those that compute). The rest
 * is a command line, split at ';' as the REPL and -e do.
 * Commands that take file names (dump, patch sweep, diff, export) run in a
 * private scratch directory, and inputs with a word holding '/' or ".."
 * are skipped, so the fuzzer cannot write outside it. `diff` can read
 * other.gguf there (the tiny-llama fixture), `ablate L.H mean over` the
 * prompts of prompts.txt, `--open`'s reader saved.run.
 * Properties: no crash, leak or undefined behaviour; a failed command sets
 * an error message; no temporary file is left behind. */
#include "fuzz.h"

#include <dirent.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "attnscope/session.h"
#include "../../src/session_internal.h" /* the session's fields, which the fuzzer reads */

enum { N_MODELS = 6, SAVED_RUN = 6 };
static const char *const names[N_MODELS] = {"tiny-gpt2.gguf", "tiny-bert.gguf", "tiny-transformer.gguf",
                                            "tiny-vit.gguf", "tiny-t5.gguf", "tiny-qwen2moe.gguf"};
static uint8_t *models[N_MODELS];
static size_t model_sizes[N_MODELS];

/* The files inputs may read, kept in memory and written again before
 * every input: a command may have replaced one (`save run other.gguf`). */
enum { N_FILES = 4 };
static const char *const file_names[N_FILES] = {"other.gguf", "img.png", "prompts.txt", "saved.run"};
static uint8_t *file_bytes[N_FILES];
static size_t file_sizes[N_FILES];

static void place_files(void)
{
    for (int i = 0; i < N_FILES; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", fuzz_scratch_dir(), file_names[i]);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(file_bytes[i], 1, file_sizes[i], f) != file_sizes[i] || fclose(f))
            abort();
    }
}

static void cleanup(void)
{
    for (int i = 0; i < N_MODELS; i++)
        free(models[i]);
    for (int i = 0; i < N_FILES; i++)
        free(file_bytes[i]);
}

static char saved_run[256];

/* A session over fixture i (budget in MB), or aborts. */
static as_session *session_over(int i, size_t budget)
{
    as_gguf *g;
    as_model *m;
    as_session *s;
    as_error err;
    if (as_gguf_parse(&g, models[i], model_sizes[i], names[i], &err) || as_model_from_gguf(&m, g, &err) ||
        as_session_from_model(&s, m, budget, fuzz_devnull(), fuzz_devnull(), &err)) {
        fprintf(stderr, "fuzz: %s\n", err.msg);
        abort();
    }
    return s;
}

static void setup(void)
{
    for (int i = 0; i < N_MODELS; i++)
        models[i] = fuzz_read_file(fuzz_fixture(names[i]), &model_sizes[i]);
    file_bytes[0] = fuzz_read_file(fuzz_fixture("tiny-llama.gguf"), &file_sizes[0]);
    file_bytes[1] = fuzz_read_file(fuzz_fixture("tiny-vit/image.png"), &file_sizes[1]);
    static const char prompts[] = "the cat sat\n\nthe dog\n";
    file_bytes[2] = (uint8_t *)strdup(prompts);
    file_sizes[2] = sizeof prompts - 1;
    as_set_threads(1);
    atexit(cleanup);
    /* the run --open reads: tiny-gpt2 after a prompt and a metric, every hook captured, in f16 */
    snprintf(saved_run, sizeof saved_run, "%s/saved.run", fuzz_scratch_dir());
    as_session *s = session_over(0, 64);
    as_error err;
    static const char *const cmds[] = {"prompt the cat sat on", "finish", "metric \" the\" \" a\"", NULL};
    char save[300];
    snprintf(save, sizeof save, "save run %s dtype=f16", saved_run);
    for (int i = 0; cmds[i]; i++)
        if (as_session_exec(s, cmds[i], &err) || (!cmds[i + 1] && as_session_exec(s, save, &err))) {
            fprintf(stderr, "fuzz: making saved.run: %s\n", err.msg);
            abort();
        }
    as_session_free(s);
    file_bytes[3] = fuzz_read_file(saved_run, &file_sizes[3]);
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
    static const char *const keep[] = {NULL}; /* place_files writes them again */
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
    int which = data[0] / 3 % (N_MODELS + 1);
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
    place_files();
    as_session *s;
    as_error err;
    if (which == SAVED_RUN) {
        if (as_session_open_run(&s, saved_run, fuzz_devnull(), fuzz_devnull(), &err)) {
            fprintf(stderr, "fuzz: %s\n", err.msg);
            abort();
        }
    } else {
        s = session_over(which, budget);
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
