/* attnscope: argument parsing, batch mode (-e, -x, commands on stdin), the
 * model card (--info), and the choice between the full-screen view (stdout
 * a terminal) and the plain REPL. The engine does the work; this file
 * decides where its text goes. */
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnscope/engine.h"
#include "attnscope/file.h"
#include "attnscope/view_api.h"
#include "datadir.h"
#include "repl.h"
#include "tui.h"
#include "view.h"

#ifndef AS_VERSION
#define AS_VERSION "dev"
#endif

#define DEFAULT_MODEL "austen-gpt2.gguf"

typedef struct options {
    const char *model;
    const char *exec;      /* -e */
    const char *script;    /* -x */
    const char *info;      /* --info FILE */
    const char *tokenizer; /* --tokenizer: a llama2.c checkpoint's tokenizer.bin */
    long capture_mb;
    long ctx;              /* --ctx: 0, the model's window */
    int threads;
    int no_tui;
    const char *kernels;   /* --kernels: generic, avx2, avx512 */
    const char *activations; /* --activations: native, f32 */
    int attn_result, in_hooks; /* --attn-result on, --in-hooks on: 1 */
    const char *open_run;     /* --open RUN: a saved run */
    const char *capture_file; /* --capture-file PATH */
    const char *capture_dtype; /* --capture-dtype: what `save run` writes */
    const char *patterns;  /* --patterns: stored, on-demand, auto */
    int version;
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: attnscope [MODEL | -m MODEL] [-e \"CMD; CMD\"] [-x FILE] [--no-tui] [--capture-mb N] [--ctx N]\n"
            "                 [--threads N] [--activations native|f32] [--attn-result on|off] [--in-hooks on|off]\n"
            "                 [--patterns stored|on-demand|auto] [--capture-file PATH]\n"
            "                 [--capture-dtype f32|f16|bf16]\n"
            "       attnscope --open RUN [-e \"CMD; CMD\"] [-x FILE] [--no-tui]\n"
            "       attnscope --info MODEL.gguf\n"
            "\n"
            "  MODEL, -m MODEL  model file (GGUF, or a llama2.c checkpoint) or a Hugging Face directory\n"
            "                   (config.json, safetensors, tokenizer.json); default: the bundled %s\n"
            "  --tokenizer FILE a llama2.c checkpoint's tokenizer.bin (default: tokenizer.bin beside it)\n"
            "  -e \"CMDS\"        run commands separated by ';' and exit (0 if all succeeded)\n"
            "  -x FILE          run commands from FILE, one a line, and exit\n"
            "  --info FILE      print the model card of a GGUF file (or HF directory) and exit\n"
            "  --capture-mb N   memory budget for captured activations (default: half of this machine's\n"
            "                   memory, %zu MB here; 0 keeps only what the computation needs); what it\n"
            "                   holds grows with the positions in use, never with the model's window\n"
            "  --capture-file PATH  captured hooks in a memory-mapped file made new at PATH (removed at\n"
            "                   exit): bounded by the disk, not RAM; `set capture-file PATH|off` later\n"
            "  --capture-dtype D  f32, f16 or bf16: the dtype `save run FILE` keeps hooks in (default f32)\n"
            "  --open RUN       reopen a run `save run RUN` wrote, without the model's weights: the view,\n"
            "                   dump, heads context, info and export work; computing is refused\n"
            "  --ctx N          work in a context of at most N positions (default: the model's window;\n"
            "                   `set ctx N` later)\n"
            "  --threads N      compute threads (default: one per core, at most 16)\n"
            "  --kernels ISA    vector kernels: avx512, avx2 or generic (default: the widest this\n"
            "                   CPU runs; --version names it)\n"
            "  --activations A  quantized weights' arithmetic: native (llama.cpp's: 8-bit activations,\n"
            "                   integer dots; the default) or f32 (float32 activations, the model's\n"
            "                   exact arithmetic); F32/F16/BF16 weights take float32 either way;\n"
            "                   `set activations` later\n"
            "  --attn-result on build blocks.L.attn.hook_result (each head's output through its slice\n"
            "                   of W_O, [head, d_model] a position; default off); `set attn-result` later\n"
            "  --in-hooks on    build blocks.L.hook_attn_in and hook_mlp_in (the residual stream entering\n"
            "                   ln1 and ln2; default off); `set in-hooks` later\n"
            "  --patterns P     attention patterns: stored in full, on-demand (computed from the captured\n"
            "                   q and k when read: memory linear in the context, the same bits) or auto\n"
            "                   (the default: stored while they fit the capture budget); `set patterns`\n"
            "  --no-tui         the plain REPL instead of the full-screen view\n"
            "  --version, --help\n"
            "\n"
            "Type `help` at the prompt for the commands.\n",
            DEFAULT_MODEL, as_capture_default_mb());
}

static int parse_num(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    o->capture_mb = (long)as_capture_default_mb();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            o->version = 1; /* printed once --kernels is applied, so it names the kernels in use */
            continue;
        } else if (!strcmp(a, "--no-tui")) {
            o->no_tui = 1;
            continue;
        } else if (a[0] != '-' && !o->model) {
            o->model = a; /* attnscope MODEL.gguf, as one opens a file */
            continue;
        } else if (a[0] != '-') {
            fprintf(stderr, "attnscope: one model at a time: '%s' after '%s' (see --help)\n", a, o->model);
            return -1;
        }
        static const char *const with_value[] = {"-m", "--model", "-e", "-x", "--kernels", "--info", "--tokenizer",
                                                 "--capture-mb", "--ctx", "--threads", "--activations",
                                                 "--attn-result", "--in-hooks", "--open", "--capture-file",
                                                 "--capture-dtype", "--patterns"};
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
            known |= !strcmp(a, with_value[k]);
        if (!known) {
            fprintf(stderr, "attnscope: unknown option '%s' (see --help)\n", a);
            return -1;
        }
        if (!val) {
            fprintf(stderr, "attnscope: %s needs a value (see --help)\n", a);
            return -1;
        }
        i++;
        /* one batch source: a second would silently replace the first */
        if ((!strcmp(a, "-e") && o->exec) || (!strcmp(a, "-x") && o->script)) {
            fprintf(stderr, "attnscope: %s given twice: %s (see --help)\n", a,
                    a[1] == 'e' ? "join the commands with ';' in one -e" : "one script at a time");
            return -1;
        }
        if ((!strcmp(a, "-e") && o->script) || (!strcmp(a, "-x") && o->exec)) {
            fprintf(stderr, "attnscope: -e and -x both given: one batch at a time (put the -e commands in the "
                    "script, or the script's on one -e line) (see --help)\n");
            return -1;
        }
        if (!strcmp(a, "-m") || !strcmp(a, "--model"))
            o->model = val;
        else if (!strcmp(a, "-e"))
            o->exec = val;
        else if (!strcmp(a, "-x"))
            o->script = val;
        else if (!strcmp(a, "--kernels"))
            o->kernels = val;
        else if (!strcmp(a, "--activations") && (!strcmp(val, "native") || !strcmp(val, "f32")))
            o->activations = val;
        else if ((!strcmp(a, "--attn-result") || !strcmp(a, "--in-hooks")) && (!strcmp(val, "on") || !strcmp(val, "off")))
            *(!strcmp(a, "--attn-result") ? &o->attn_result : &o->in_hooks) = !strcmp(val, "on");
        else if (!strcmp(a, "--patterns") && (!strcmp(val, "stored") || !strcmp(val, "on-demand") ||
                                               !strcmp(val, "auto")))
            o->patterns = val;
        else if (!strcmp(a, "--info"))
            o->info = val;
        else if (!strcmp(a, "--open"))
            o->open_run = val;
        else if (!strcmp(a, "--capture-file"))
            o->capture_file = val;
        else if (!strcmp(a, "--capture-dtype") &&
                 (!strcmp(val, "f32") || !strcmp(val, "f16") || !strcmp(val, "bf16")))
            o->capture_dtype = val;
        else if (!strcmp(a, "--tokenizer"))
            o->tokenizer = val;
        else if (!strcmp(a, "--capture-mb") && !parse_num(val, 0, 1L << 30, &n))
            o->capture_mb = n;
        else if (!strcmp(a, "--ctx") && !parse_num(val, 1, 1L << 30, &n))
            o->ctx = n;
        else if (!strcmp(a, "--threads") && !parse_num(val, 1, 256, &n))
            o->threads = (int)n;
        else {
            /* the range the option takes, where it is a number */
            const char *range = !strcmp(a, "--ctx") ? "a whole number from 1 to 1073741824"
                                : !strcmp(a, "--threads") ? "a whole number from 1 to 256"
                                : !strcmp(a, "--capture-mb") ? "a whole number of MB from 0 to 1073741824"
                                : !strcmp(a, "--activations") ? "native or f32"
                                : !strcmp(a, "--attn-result") || !strcmp(a, "--in-hooks") ? "on or off"
                                : !strcmp(a, "--capture-dtype") ? "f32, f16 or bf16"
                                : !strcmp(a, "--patterns") ? "stored, on-demand or auto"
                                : NULL;
            if (range)
                fprintf(stderr, "attnscope: bad option '%s %s': %s takes %s (see --help)\n", a, val, a, range);
            else
                fprintf(stderr, "attnscope: bad option '%s %s' (see --help)\n", a, val);
            return -1;
        }
    }
    return 0;
}

/* Runs each ';'-separated command of a line; stops at the first failure.
 * The view's commands are accepted too (a script may set the pace of
 * `gen` for the full-screen view), though nothing is drawn. */
static int run_line(as_session *s, view *v, const char *line, const char *where)
{
    int n;
    char **cmds = as_split_commands(line, &n);
    int rc = 0;
    if (!cmds) {
        fprintf(stderr, "error: %s%sout of memory\n", where ? where : "", where ? ": " : "");
        return 1;
    }
    for (int i = 0; i < n && !as_view_quit(s); i++) {
        as_error err = {{0}};
        if (view_exec(v, s, cmds[i], NULL, &err)) {
            fprintf(stderr, "error: %s%s%s\n", where ? where : "", where ? ": " : "", err.msg);
            rc = 1;
            break;
        }
    }
    fflush(stdout);
    as_free_commands(cmds, n);
    return rc;
}

/* Limits on what batch mode reads: a script is text typed or generated
 * for it, so anything larger is a mistake (a device, a data file given to
 * -x), refused by name before it fills memory. */
#define SCRIPT_MAX_BYTES (16L << 20)
#define LINE_MAX_BYTES (1L << 20)

/* One line of f into *buf without its newline (nor a CR before it):
 * 1 when read, 0 at the end, -1 when longer than LINE_MAX_BYTES, -2 out
 * of memory, -3 at a NUL byte (*nul: its 1-based column); the rest of a
 * refused line is left unread. */
static int read_line(FILE *f, char **buf, size_t *cap, size_t *nul)
{
    size_t n = 0;
    int ch;
    *nul = 0;
    while ((ch = getc(f)) != EOF && ch != '\n') {
        if (n >= (size_t)LINE_MAX_BYTES)
            return -1;
        if (n + 2 > *cap) {
            char *grown = realloc(*buf, *cap ? *cap * 2 : 256);
            if (!grown)
                return -2;
            *buf = grown;
            *cap = *cap ? *cap * 2 : 256;
        }
        if (ch == 0) {
            *nul = n + 1;
            return -3;
        }
        (*buf)[n++] = (char)ch;
    }
    if (ch == EOF && n == 0)
        return 0;
    if (!*buf && !(*buf = malloc(*cap = 1)))
        return -2;
    if (n && (*buf)[n - 1] == '\r')
        n--;
    (*buf)[n] = '\0';
    return 1;
}

static int run_stream(as_session *s, view *v, FILE *f, const char *name)
{
    char *line = NULL;
    size_t cap = 0, nul;
    int lineno = 0, rc = 0, got;
    while (!as_view_quit(s) && (got = read_line(f, &line, &cap, &nul)) != 0) {
        char where[512];
        lineno++;
        snprintf(where, sizeof where, "%s:%d", name, lineno);
        /* A NUL would end the line silently where C strings end: refused whole. */
        if (got == -3) {
            fprintf(stderr, "error: %s: a NUL byte at column %zu: the line is refused (commands are text)\n",
                    where, nul);
            rc = 1;
            break;
        }
        if (got < 0) {
            if (got == -2)
                fprintf(stderr, "error: %s: out of memory for the line\n", where);
            else
                fprintf(stderr, "error: %s: a line longer than %ld MB: refused (commands are one a line)\n",
                        where, LINE_MAX_BYTES >> 20);
            rc = 1;
            break;
        }
        if (run_line(s, v, line, where)) {
            rc = 1;
            break;
        }
    }
    free(line);
    return rc;
}

static int run_script(as_session *s, view *v, const char *path)
{
    struct stat st;
    as_error err = {{0}};
    FILE *f = as_file_fopen_read(path, &st, &err); /* a FIFO, a device or a directory is refused */
    if (!f) {
        fprintf(stderr, "error: -x %s\n", err.msg);
        return 1;
    }
    if (st.st_size > SCRIPT_MAX_BYTES) {
        fprintf(stderr, "error: -x %s: %lld bytes, over the %ld MB a script may have\n", path,
                (long long)st.st_size, SCRIPT_MAX_BYTES >> 20);
        fclose(f);
        return 1;
    }
    int rc = run_stream(s, v, f, path);
    fclose(f);
    return rc;
}

static int print_info(const char *path)
{
    as_gguf *g;
    as_error err = {{0}};
    if (as_hf_is_dir(path) ? as_hf_open(&g, path, &err) : as_gguf_open(&g, path, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    as_gguf_print_info(g, stdout);
    as_error why = {{0}};
    int rc = as_model_print_check(g, stdout, &why);
    if (rc) {
        /* the reason, once: its own "PATH: " lead is this line's */
        size_t n = strlen(path);
        const char *r = !strncmp(why.msg, path, n) && !strncmp(why.msg + n, ": ", 2) ? why.msg + n + 2 : why.msg;
        fprintf(stderr, "error: %s cannot be loaded as a model: %s\n", path, r);
    }
    as_gguf_close(g);
    return rc ? 1 : 0;
}

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* A GGUF file, or a llama2.c checkpoint with its tokenizer. */
static int open_session(as_session **s, const char *path, const char *tokenizer, size_t capture_mb,
                        as_error *err)
{
    as_model *m;
    if (as_model_load_with(&m, path, tokenizer, err))
        return AS_ERR;
    if (as_session_from_model(s, m, capture_mb, stdout, stderr, err)) {
        as_model_free(m);
        return AS_ERR;
    }
    return AS_OK;
}

int main(int argc, char **argv)
{
    options o = {0};
    setlocale(LC_ALL, "");
    /* Numbers are read and printed the C way whatever the language. */
    setlocale(LC_NUMERIC, "C");
    if (parse_args(argc, argv, &o))
        return 2;
    if (o.info)
        return print_info(o.info);
    if (o.threads)
        as_set_threads(o.threads);
    if (o.kernels && !as_kernels_use(o.kernels)) {
        fprintf(stderr, "attnscope: --kernels %s: this build or CPU has no such kernels (avx512, avx2, generic; "
                        "the widest here is %s)\n", o.kernels, as_kernels_isa());
        return 2;
    }
    if (o.activations)
        as_set_activations(o.activations);
    if (o.patterns)
        as_set_patterns(o.patterns);
    if (o.version) {
        printf("attnscope %s (kernels: %s)\n", AS_VERSION, as_kernels_isa());
        printf("activations: %s\n", as_activations_describe());
        return 0;
    }

    char buf[PATH_MAX];
    const char *path = o.model;
    if (!path && !datadir_find(DATA_MODELS, DEFAULT_MODEL, buf, sizeof buf))
        snprintf(buf, sizeof buf, "models/%s", DEFAULT_MODEL); /* the error names the usual place */
    if (!path)
        path = buf;
    as_session *s;
    as_error err = {{0}};
    if (o.open_run && o.model) {
        fprintf(stderr, "attnscope: --open %s and a model %s both given: a saved run carries its model's "
                "metadata (one at a time; see --help)\n", o.open_run, o.model);
        return 2;
    }
    if (o.open_run ? as_session_open_run(&s, o.open_run, stdout, stderr, &err)
                   : open_session(&s, path, o.tokenizer, (size_t)o.capture_mb, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    /* the optional hooks first: their rebuild makes a new capture, which the capture file then holds */
    if (!o.open_run && (o.attn_result || o.in_hooks) && as_session_optional_hooks(s, o.attn_result, o.in_hooks, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        as_session_free(s);
        return 1;
    }
    if (o.open_run)
        path = o.open_run;
    if (o.capture_dtype)
        (void)as_session_set_save_dtype(s, o.capture_dtype, &err); /* checked in parse_args */
    /* an unwritable capture file is said and the session goes on in RAM */
    if (o.capture_file && as_session_set_capture_file(s, o.capture_file, &err))
        fprintf(stderr, "warning: %s\n", err.msg);
    if (!o.open_run && as_view_set_ctx(s, (int)o.ctx, &err)) { /* cannot fail: nothing is in the context yet */
        fprintf(stderr, "error: %s\n", err.msg);
        as_session_free(s);
        return 1;
    }
    bool full_screen = !o.exec && !o.script && !o.no_tui && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    char notes[8192] = "";
    if (as_view_model_warnings(s)[0])
        snprintf(notes, sizeof notes, "warning: %.1000s: %.4000s\n", path, as_view_model_warnings(s));
    if (as_view_saved_run(s)[0])
        snprintf(notes + strlen(notes), sizeof notes - strlen(notes), "note: %.1000s: a saved run of %.1000s, without "
                 "its weights: the view, dump, heads context, info and export read it; computing needs the model\n",
                 as_view_saved_run(s), as_view_model_path(s));
    if (as_view_dropped_note(s)[0])
        snprintf(notes + strlen(notes), sizeof notes - strlen(notes), "note: %s\n", as_view_dropped_note(s));
    if (!full_screen)
        fputs(notes, stderr);
    as_view_set_interrupt(s, &interrupted);
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);

    int rc;
    view v;
    view_init(&v);
    if (o.exec)
        rc = run_line(s, &v, o.exec, NULL);
    else if (o.script)
        rc = run_script(s, &v, o.script);
    else if (!isatty(STDIN_FILENO))
        rc = run_stream(s, &v, stdin, "stdin");
    else if (full_screen && (rc = as_tui(s, &interrupted, notes)) >= 0)
        ; /* the view ran; it falls back (rc < 0) when curses cannot start */
    else
        rc = as_repl(s, &interrupted);
    as_session_free(s);
    return rc;
}
