/* capture: every hook point's values at every position of the current
 * context, within a memory budget. Only the interpreter writes it; views
 * and exports only read it. Attention hooks are stored per head: a causal
 * (or windowed) site as the lower triangle, an unmasked one (bidirectional,
 * cross-attention) as the full rectangle [head, n_q, n_k]; every reader
 * goes through the accessors below, never index arithmetic of its own. The KV cache is the storage of the k/v hooks
 * attention reads back, so it is always kept. Over budget, whole hooks are
 * dropped by class (residual-stream copies first, patterns and norm
 * statistics last) and the drop is described in `dropped`. Storage and
 * budget follow the positions in use, not the context window a file
 * declares: each stream's capacity grows (doubling, up to its window) as
 * passes reach further, moving what was stored. Patterns on demand
 * (as_set_patterns, engine.h): a site's scores and pattern hooks hold no
 * rows; the accessors below compute a head's row from the site's q and k
 * when read, with the forward pass's arithmetic (attention_row.h). */
#ifndef ATTNSCOPE_CAPTURE_H
#define ATTNSCOPE_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "attnscope/engine.h"
#include "attnscope/error.h"
#include "attnscope/kernels.h"
#include "attnscope/program.h"

enum { AS_ROW_SLOTS = 4 };
typedef struct as_row_key {
    int hook, head, q;
    unsigned gen;
} as_row_key;

/* A zoomed-out map's cells kept between reads (capture.c, as_capture_attn_cells):
 * one head's queries and keys cut into blocks, each block row's aggregates
 * (the largest weight, the double sum and count of the visible ones, and
 * whether rows not computed yet fall in it) made at once from its query
 * rows, each row read (or computed on demand) once. Current while the
 * capture's rows_gen, the hook's filled rows and the extents are those it
 * was made at. */
typedef struct as_cell_agg {
    double sum;
    float max;
    unsigned count;   /* visible weights summed; AS_CELL_PENDING set: some are in rows not computed yet */
} as_cell_agg;
#define AS_CELL_PENDING 0x80000000u
enum { AS_CELL_CACHES = 48 };
typedef struct as_cell_cache {
    int hook, head, filled, n_q, n_k, zoom, vq, vk; /* zoom > 0: blocks of zoom; else vq x vk even blocks */
    unsigned gen;
    int nbq, nbk;
    int *kb;            /* the key blocks' bounds: block j is keys [kb[j], kb[j + 1]) */
    as_cell_agg **rows; /* per block row: its cells, or NULL while not begun */
    int *todo;          /* per begun block row: its first query not added yet (the row's end: made) */
    size_t bytes;
    unsigned long used; /* when last read (the capture's cell_clock): the oldest goes first */
} as_cell_cache;

typedef struct as_capture {
    const as_program *prog;
    int n_ctx;          /* the output stream's window */
    int capacity[AS_MAX_STREAMS]; /* positions the storage holds per stream (grows) */
    size_t budget;      /* bytes allowed for droppable hooks */
    size_t used;        /* bytes the kept hooks need at the positions in use (KV cache included) */
    size_t essential;   /* of which the KV cache and norm scales, which the budget does not count */
    float **store;      /* per hook: storage for capacity positions, or NULL if dropped */
    as_norm_stat **stats; /* per NORM_SCALE hook: [capacity][groups] statistics (always kept) */
    int *filled;        /* per hook: positions [0, filled) hold current values */
    int *committed;     /* per hook: positions whose pages as_capture_prepare committed */
    int n_dropped;
    int dropped_from;   /* the first class dropped, -1 if none */
    size_t keep_mb;     /* when dropping: the budget (MB) that keeps every class at the positions in use */
    char dropped[512];  /* human summary of what was dropped, "" if nothing */
    struct as_capfile *file; /* the capture file the hooks' storage is mapped from, or NULL: RAM */
    bool *in_file;      /* per hook: its storage is a region of the file */
    bool file_failed;   /* the file failed (unwritable, disk full): said in file_note, RAM since */
    char file_note[1200];
    /* Patterns on demand (capture.c): the scores and pattern hooks of a site
     * without a bias hook keep no storage (store NULL, ondemand true); a
     * head's row is computed from the site's q (then kept as essential) and
     * k when read, by attention_row.c's arithmetic. */
    bool od;            /* on demand in this context */
    bool *ondemand;     /* per hook: computed on demand now */
    bool *od_attn;      /* per hook: a scores or pattern hook that can be (its site has no bias) */
    bool *od_q;         /* per hook: the q hook of such a site */
    float *row_buf;     /* AS_ROW_SLOTS rows of row_cap floats, then a scratch row */
    size_t row_cap;
    as_row_key row_keys[AS_ROW_SLOTS];
    unsigned row_next, rows_gen; /* a slot holds a current row while its gen is rows_gen */
    as_cell_cache cells[AS_CELL_CACHES]; /* zoomed-out maps' cells (hook -1: free) */
    unsigned long cell_clock;
    size_t cell_bytes;  /* their cells' bytes, held to AS_CELL_BYTES */
    /* as_capture_cells_budget: past cell_deadline (monotonic ns; 0: none),
     * once a tile of rows was added since it was set (cell_worked), a
     * block row not made yet is left for later (cell_late counts them) */
    long long cell_deadline;
    bool cell_worked;
    int cell_late;
    double cell_late_made; /* of the cells left for later, the shares of their block rows' queries added */
    struct as_pool *cell_pool; /* the threads (as_set_threads) an on-demand tile's rows are split over */
} as_capture;

/* Storage for every hook, within budget bytes at the positions in use (0:
 * only what the computation itself needs). Memory is committed lazily by
 * the OS as positions are written. */
int as_capture_new(as_capture **out, const as_program *p, size_t budget, as_error *err);
void as_capture_free(as_capture *c);
/* The capture file (--capture-file, `set capture-file`): the hooks'
 * storage, present and future, moved to a memory-mapped file at path,
 * made new (an existing path is refused) and removed when the capture is
 * freed or the file given up (path NULL: back to RAM). Storage there is
 * bounded by the disk, not RAM; the budget still decides what is kept. A
 * failure (unwritable path, disk full) later, while growing, leaves the
 * capture in RAM and says so once in file_note. */
int as_capture_set_file(as_capture *c, const char *path, as_error *err);
/* One hook's storage given up (a saved run whose session did not keep it). */
void as_capture_drop_hook(as_capture *c, int hook);
const char *as_capture_file_path(const as_capture *c); /* NULL: RAM */
size_t as_capture_file_bytes(const as_capture *c);     /* the file's bytes in use */

/* Before a pass that reaches ends[stream] positions: holds the budget to
 * those positions (dropping classes that no longer fit, saying so in
 * `dropped`; with nothing computed yet, deciding anew), grows the storage
 * to hold them, and commits the pages of every stored hook for positions
 * [0, end) of its stream, and some
 * way beyond, in one call per hook: a pass that writes into fresh pages
 * would otherwise take a page fault per 4 KB on its critical path (the
 * logits of one token span dozens of pages). Only a hint: without kernel
 * support (MADV_POPULATE_WRITE, Linux 5.14) the pages fault in as before. */
int as_capture_prepare(as_capture *c, const int *ends, as_error *err); /* per stream */
/* An op of a span of at least AS_CAPFILE_DROP_ROWS positions (a prompt's,
 * not a decoded token's) has written or read rows [from, to) of hook:
 * when they are in the capture file, their pages leave the process's
 * memory (the page cache keeps them, and writes them back), so a long
 * prompt captured to a file keeps its RSS near the weights and working
 * memory, not the file's size; a later read maps them again (interp.c's
 * run_op calls it for each op's output and inputs). */
#define AS_CAPFILE_DROP_ROWS 16
/* Whether hook's storage is a region of the capture file. */
bool as_capture_in_file(const as_capture *c, int hook);
void as_capture_rows_done(as_capture *c, int hook, int from, int to);

/* What the budget would keep at pos[stream] positions, in the words of
 * `dropped` ("" when everything): before a prompt is run. */
void as_capture_plan(const as_capture *c, const int *pos, char *buf, size_t size);
/* Bytes a hook needs when each stream holds n_pos positions (at most its
 * window; attention: a triangle or a rectangle per head). */
size_t as_capture_hook_bytes(const as_program *p, int hook, int n_pos);
/* Offset, in floats, of attention row (head, query q) within a hook's store. */
size_t as_capture_attn_offset(const as_capture *c, int hook, int head, int q);
/* Keys stored in query q's row: q + 1 for a causal site (keys 0..q; a
 * window's early keys are stored masked), every key so far otherwise. */
int as_capture_attn_keys(const as_capture *c, int hook, int q);
/* The keys [k0, k1) query q sees (a window hides the early ones). */
void as_capture_attn_visible(const as_capture *c, int hook, int q, int *k0, int *k1);
/* Query q's row for one head, its stored keys in *n_keys (may be NULL). */
const float *as_capture_attn_row(const as_capture *c, int hook, int head, int q, int *n_keys);

/* The default budget (as_capture_default_mb), whether a hook is kept
 * (as_capture_has) and the readers of a row, an attention weight and a
 * norm's statistics (as_capture_row, _attn, _norm): engine.h. */

/* Whether a hook holds storage (an attention hook computed on demand has
 * none, though as_capture_has says its rows can be read). The interpreter
 * lays out a span's rows by this. */
bool as_capture_stored(const as_capture *c, int hook);
bool as_capture_on_demand(const as_capture *c, int hook);
bool as_capture_patterns_on_demand(const as_capture *c);
/* Whether the patterns are (or, nothing computed yet, will be) computed on
 * demand at pos[stream] positions: `info`'s word for the context. */
bool as_capture_plan_on_demand(const as_capture *c, const int *pos);

/* A per-head norm's statistics of one head (group); group 0 is as_capture_norm. */
const as_norm_stat *as_capture_norm_group(const as_capture *c, int hook, int pos, int group);

/* TransformerLens shape of a hook over n_pos positions, without batch:
 * returns the number of dims written to shape (at most 3). Attention:
 * [head, n_pos, n_pos] for a causal site, [head, n_pos, keys] otherwise. */
int as_capture_shape(const as_capture *c, int hook, int n_pos, size_t shape[3]);
/* Copies a hook's values over positions [0, n_pos) into out, in that shape
 * (C order; masked attention entries filled as above). out holds
 * as_capture_count() floats. */
size_t as_capture_count(const as_capture *c, int hook, int n_pos);
void as_capture_copy(const as_capture *c, int hook, int n_pos, float *out);

#endif
