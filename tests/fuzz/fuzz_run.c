/* Fuzz target: the saved-run reader, `attnscope --open RUN`
 * (as_session_open_run: as_run_begin rebuilds the model from the run's
 * metadata and tensor table with zero weights, as_run_finish sets the
 * inputs and fills the capture), then the commands a saved run answers,
 * then `save run` of what was opened and `--open` of that.
 * The input is the run file's bytes, written to the scratch directory.
 * Seeds are real saved runs of tiny models (make_corpus.c): gpt2 and llama
 * in f32, f16 and bf16, full, partial and no capture, after `gen`, a BERT's
 * token types, a ViT's pixels, an encoder-decoder's two streams.
 * Properties: no crash, leak or undefined behaviour; a refused run gets one
 * message that names the file and carries no terminal control byte, and no
 * session; an opened run answers the read-only commands without crashing,
 * refuses the ones that compute with a message; what `save run` writes of
 * it opens again, and saved once more is the same bytes; no temporary
 * file is left behind. */
#include "fuzz.h"

#include <dirent.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "attnscope/session.h"

#define NAME "fuzz.run"

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
        abort();
}

/* An atomic write's "NAME.tmp.XXXXXX" left in the scratch directory. */
static bool temp_file_left(void)
{
    bool left = false;
    DIR *d = opendir(".");
    for (struct dirent *e; d && (e = readdir(d));)
        left |= strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return left;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool once;
    if (!once) {
        as_set_threads(1);
        once = true;
    }
    fuzz_scratch_enter();
    write_file(NAME, data, size);
    as_session *s = NULL;
    as_error err;
    memset(&err, 0, sizeof err);
    size_t at;
    if (as_session_open_run(&s, NAME, fuzz_devnull(), fuzz_devnull(), &err) != AS_OK) {
        FUZZ_CHECK(s == NULL, "a refused run left a session");
        FUZZ_CHECK(err.msg[0] != '\0', "a refused run without a message");
        FUZZ_CHECK(strstr(err.msg, NAME) != NULL || !strcmp(err.msg, "out of memory"),
                   "the message does not name the file: %s", err.msg);
        FUZZ_CHECK(fuzz_terminal_safe(err.msg, strlen(err.msg), &at), "control byte in the message at %zu: %s", at,
                   err.msg);
        fuzz_scratch_leave();
        fuzz_scratch_clean(NULL);
        return 0;
    }
    /* what a saved run answers (cmd_save.c's list), and some it must refuse */
    static const char *const cmds[] = {
        "info", "hooks", "tokens", "where", "top 3", "stats hook_embed", "stats unembed.hook_out", "norms 0",
        "norms final", "dump blocks.0.attn.hook_pattern p.npy", "dump all d", "heads context",
        "heads context h.npy", "zoom 0 0 2 max", "zoom 0 1 1 mean z.npy", "rollout", "experts", "metric 1 2",
        "export attn 0 0 a.svg", "export grid all g.svg", "export norms 0 n.svg", "export probs p.svg",
        "export distance d.svg", "export lens l.svg", "ablations", "watches", "tokenize \"a b\"", "set",
        "lens", "gen 1", "finish", "grad hook_embed", "prompt the", "heads",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        memset(&err, 0, sizeof err);
        if (as_session_exec(s, cmds[i], &err) != AS_OK) {
            FUZZ_CHECK(err.msg[0] != '\0', "'%s' failed without a message", cmds[i]);
            FUZZ_CHECK(fuzz_terminal_safe(err.msg, strlen(err.msg), &at), "'%s': control byte in the message at %zu: %s",
                       cmds[i], at, err.msg);
        }
    }
    /* what the reader accepted, the writer writes, and the reader reads back */
    memset(&err, 0, sizeof err);
    int saved = as_session_exec(s, "save run again.run", &err);
    as_session_free(s);
    if (saved == AS_OK) {
        memset(&err, 0, sizeof err);
        FUZZ_CHECK(as_session_open_run(&s, "again.run", fuzz_devnull(), fuzz_devnull(), &err) == AS_OK,
                   "a run saved from an opened run does not open: %s", err.msg);
        /* and saving that gives the same bytes: what the reader keeps, the writer writes back */
        FUZZ_CHECK(as_session_exec(s, "save run twice.run", &err) == AS_OK, "saving a reopened run: %s", err.msg);
        as_session_free(s);
        size_t n1, n2;
        uint8_t *a = fuzz_read_file("again.run", &n1), *b = fuzz_read_file("twice.run", &n2);
        FUZZ_CHECK(n1 == n2 && !memcmp(a, b, n1), "a reopened run saved again differs (%zu and %zu bytes)", n1, n2);
        free(a);
        free(b);
    }
    FUZZ_CHECK(!temp_file_left(), "a temporary file was left behind");
    fuzz_scratch_leave();
    fuzz_scratch_clean(NULL);
    return 0;
}
