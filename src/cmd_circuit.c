/* Weights as a researcher reads them: `weight TENSOR [FILE.npy]` (any
 * tensor of the model file, dequantized to float32, in the shape gguf-py
 * gives it) and `circuit ov|qk L.H` (a head's OV or QK circuit through the
 * embeddings and the unembedding, kept factored as TransformerLens's
 * FactoredMatrix keeps it: the top token pairs and the copying score). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "session_internal.h"

/* ---- weight ---- */

/* NumPy's shape of a GGUF tensor as gguf-py's GGUFReader gives it: ne
 * reversed (ne[0], the contiguous dimension, last), so the file's bytes are
 * the array in C order. */
static int numpy_shape(const as_gguf_tensor *t, size_t *shape)
{
    int nd = (int)t->n_dims;
    for (int k = 0; k < nd; k++)
        shape[k] = (size_t)t->ne[nd - 1 - k];
    return nd;
}

/* The whole tensor dequantized (malloc'd), or NULL with a message. */
static float *tensor_f32(const as_gguf_tensor *t, as_error *err)
{
    if (!as_ggml_type_supported(t->type)) {
        as_error_set(err, "tensor '%s' is stored as %s, which attnscope cannot decode", t->name,
                     as_ggml_type_name(t->type));
        return NULL;
    }
    float *v = malloc((size_t)t->n_elements * sizeof *v);
    if (!v) {
        as_error_set(err, "out of memory for tensor '%s' (%llu values)", t->name, (unsigned long long)t->n_elements);
        return NULL;
    }
    if (as_dequantize(t->type, t->data, t->n_elements, v, err)) {
        free(v);
        return NULL;
    }
    return v;
}

int as_cmd_weight(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_gguf *g = s->model->gguf;
    if (c->argc < 2 || c->argc > 3)
        return as_error_set(c->err, "usage: weight TENSOR [FILE.npy]  (`weights` lists the tensors)");
    if (!g)
        return as_error_set(c->err, "weight reads the model's tensors, and %s has no tensor table",
                            s->model->cfg.name);
    const char *path = c->argc == 3 ? c->argv[2] : NULL;
    if (path) {
        const char *k = as_cmd_output_kind(path);
        if (!k || strcmp(k, "npy"))
            return as_error_set(c->err, "weight writes a .npy array; '%s' is not one", path);
    }
    const as_gguf_tensor *t = as_gguf_tensor_find(g, c->argv[1]);
    if (!t)
        return as_error_set(c->err, "no tensor '%s' in %s (`weights` lists them; names are the file's, e.g. "
                            "blk.0.attn_q.weight)", c->argv[1], s->model->cfg.name);
    float *v = tensor_f32(t, c->err);
    if (!v)
        return AS_ERR;
    size_t shape[4];
    int nd = numpy_shape(t, shape);
    int rc = AS_OK;
    if (path) {
        char what[160];
        snprintf(what, sizeof what, "tensor %s (stored as %s), in gguf-py's order", t->name,
                 as_ggml_type_name(t->type));
        rc = as_cmd_write_npy(s, path, AS_NPY_F32, v, shape, nd, what, c->err);
    } else {
        double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0;
        uint64_t nonfinite = 0;
        for (uint64_t i = 0; i < t->n_elements; i++) {
            double x = v[i];
            if (!isfinite(x)) {
                nonfinite++;
                continue;
            }
            mn = x < mn ? x : mn, mx = x > mx ? x : mx, sum += x, sq += x * x;
        }
        uint64_t n = t->n_elements - nonfinite;
        double mean = n ? sum / (double)n : 0, var = n ? sq / (double)n - mean * mean : 0;
        fprintf(s->out, "tensor\t%s\ntype\t%s\nshape\t(", t->name, as_ggml_type_name(t->type));
        for (int k = 0; k < nd; k++)
            fprintf(s->out, "%s%zu", k ? ", " : "", shape[k]);
        fprintf(s->out, "%s)  (NumPy's order, as gguf-py reads it; ne = [", nd == 1 ? "," : "");
        for (int k = 0; k < nd; k++)
            fprintf(s->out, "%s%llu", k ? ", " : "", (unsigned long long)t->ne[k]);
        fprintf(s->out, "])\nmin\t%.6g\nmax\t%.6g\nmean\t%.6g\nstd\t%.6g\n", mn, mx, mean, sqrt(var > 0 ? var : 0));
        if (nonfinite)
            fprintf(s->out, "nonfinite\t%llu\n", (unsigned long long)nonfinite);
        fprintf(s->out, "first\t");
        for (uint64_t i = 0; i < t->n_elements && i < 8; i++)
            fprintf(s->out, "%s%.6g", i ? " " : "", (double)v[i]);
        fprintf(s->out, "\n");
    }
    free(v);
    return rc;
}

/* ---- circuit ---- */

/* LAPACK's general eigenvalue routine (OpenBLAS carries LAPACK); the
 * trailing lengths are gfortran's hidden string lengths. */
extern void dgeev_(const char *jobvl, const char *jobvr, const int *n, double *a, const int *lda, double *wr,
                   double *wi, double *vl, const int *ldvl, double *vr, const int *ldvr, double *work,
                   const int *lwork, int *info, size_t l1, size_t l2);

/* The weights of one head's circuit, found through the program's facts. */
typedef struct head_ops {
    const as_attn *a;
    const as_op *embed, *unembed, *lnf; /* lnf: the final norm, or NULL */
    const as_op *lin[3];  /* the q, k, v linear ops */
    const as_op *ln[3];   /* the norm each reads (folded: its weight), or NULL */
    const as_op *wo;      /* z · W_O */
    bool rotary;          /* q and k are rotated after the linear (not folded: it depends on the position) */
} head_ops;

/* The linear op behind one of a site's q/k/v hooks: through a rotary op,
 * never through a per-head norm (q_norm: not linear). */
static int linear_behind(const as_session *s, int hook, const char *what, long l, const as_op **lin,
                         const as_op **ln, bool *rotary, as_error *err)
{
    const as_program *p = s->prog;
    const as_op *op = as_program_producer(p, hook);
    while (op && op->kind == AS_OP_ROPE) {
        *rotary = true;
        op = as_program_producer(p, op->in[0]);
    }
    if (!op || op->kind != AS_OP_LINEAR || op->w.cols != s->model->cfg.d_model)
        return as_error_set(err, "layer %ld's %s of %s is not one linear map of the residual stream (%s): "
                            "its circuit is not a product of matrices", l, what, s->model->cfg.name,
                            op && op->kind == AS_OP_NORM_APPLY ? "it is normalized per head" : "a latent or a slice");
    *lin = op;
    const as_op *n = as_program_producer(p, op->in[0]);
    *ln = n && n->kind == AS_OP_NORM_APPLY && n->n_in == s->model->cfg.d_model ? n : NULL;
    return AS_OK;
}

static int find_head_ops(const as_session *s, long l, bool ov, head_ops *h, as_error *err)
{
    const as_program *p = s->prog;
    memset(h, 0, sizeof *h);
    int pat = as_program_pattern(p, (int)l, AS_PICK_SELF);
    h->a = pat >= 0 ? as_program_attn(p, pat) : NULL;
    if (!h->a)
        return as_error_set(err, "layer %ld of %s has no self-attention", l, s->model->cfg.name);
    for (int i = 0; i < p->n_ops; i++) {
        const as_op *op = &p->ops[i];
        if (op->kind == AS_OP_EMBED && !h->embed && p->hooks[op->out].stream == h->a->q_stream)
            h->embed = op;
        if ((op->kind == AS_OP_LINEAR || op->kind == AS_OP_HEAD_OUT) && op->in[0] == h->a->z)
            h->wo = op;
    }
    if (!h->embed)
        return as_error_set(err, "%s has no token embedding for layer %ld's stream: a circuit runs from tokens",
                            s->model->cfg.name, l);
    const int hooks[3] = {h->a->q, h->a->k, h->a->v};
    const char *names[3] = {"query", "key", "value"};
    for (int j = ov ? 2 : 0; j < (ov ? 3 : 2); j++)
        if (linear_behind(s, hooks[j], names[j], l, &h->lin[j], &h->ln[j], &h->rotary, err))
            return AS_ERR;
    if (!ov)
        return AS_OK;
    if (!h->wo)
        return as_error_set(err, "layer %ld of %s has no output projection reading hook_z", l, s->model->cfg.name);
    if (p->unembed < 0)
        return as_error_set(err, "the OV circuit ends in the unembedding, and %s has none", s->model->cfg.name);
    if (p->head_first >= 0)
        return as_error_set(err, "%s's output head is not linear (a dense layer and its activation before the "
                            "unembedding): the OV circuit through it is no product of matrices", s->model->cfg.name);
    h->unembed = &p->ops[p->unembed];
    h->lnf = p->final_norm >= 0 ? &p->ops[p->final_norm] : NULL;
    if (h->unembed->w.cols != s->model->cfg.d_model)
        return as_error_set(err, "%s's unembedding does not read the residual stream", s->model->cfg.name);
    return AS_OK;
}

/* out[t][i] = Σ_j (x_t[j] · scale · fold[j]) · m[i][j] for the vocabulary's
 * rows x_t of w (t < n), m [dh][d]: a factor of the circuit, [n][dh]. */
static int factor(const as_weight *w, int n, float scale, const float *fold, const float *m, int dh, int d,
                  float *out, const as_session *s, as_error *err)
{
    enum { BLK = 256 };
    float *x = malloc((size_t)BLK * (size_t)d * sizeof *x);
    if (!x)
        return as_error_set(err, "out of memory");
    for (int t0 = 0; t0 < n; t0 += BLK) {
        int nb = n - t0 < BLK ? n - t0 : BLK;
        for (int r = 0; r < nb; r++) {
            float *xr = x + (size_t)r * (size_t)d;
            as_weight_row(w, t0 + r, xr);
            for (int j = 0; j < d; j++)
                xr[j] *= (scale != 0 ? scale : 1.0f) * (fold ? fold[j] : 1.0f);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, dh, d, 1.0f, x, d, m, d, 0.0f,
                    out + (size_t)t0 * (size_t)dh, dh);
        if (as_cmd_interrupted(s)) {
            free(x);
            return as_error_set(err, "interrupted");
        }
    }
    free(x);
    return AS_OK;
}

/* Rows [r0, r0 + dh) of a linear op's matrix, decoded: [dh][d]. */
static float *head_rows(const as_op *op, int r0, int dh, int d)
{
    float *m = malloc((size_t)dh * (size_t)d * sizeof *m);
    if (m)
        for (int i = 0; i < dh; i++)
            as_weight_row(&op->w, r0 + i, m + (size_t)i * (size_t)d);
    return m;
}

/* Columns [c0, c0 + dh) of W_O (rows: d_model), transposed: [dh][d]. */
static float *head_cols(const as_op *op, int c0, int dh, int d)
{
    float *m = malloc((size_t)dh * (size_t)d * sizeof *m), *row = malloc((size_t)op->w.cols * sizeof *row);
    if (m && row)
        for (int j = 0; j < d; j++) {
            as_weight_row(&op->w, j, row);
            for (int i = 0; i < dh; i++)
                m[(size_t)i * (size_t)d + (size_t)j] = row[c0 + i];
        }
    free(row);
    if (!row) {
        free(m);
        return NULL;
    }
    return m;
}

typedef struct pair {
    float v;
    int a, b;
} pair;

/* Keeps the k largest (largest first) in top[0..*n). */
static void keep_top(pair *top, int *n, int k, float v, int a, int b)
{
    if (*n == k && v <= top[k - 1].v)
        return;
    int i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && top[i - 1].v < v) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = (pair){v, a, b};
}


/* The figure: the circuit over the tokens of its largest pairs (rows the
 * first tokens of the pairs, columns the second, each once, in order of
 * their first pair), computed from the factors, on a diverging scale. */
static int circuit_figure(cmd_ctx *c, const char *path, int opt_first, bool ov, long l, long hd, const float *A,
                          const float *B, int dh, const pair *top, int nt, double copying)
{
    as_session *s = c->s;
    int ra[1000], cb[1000], nr = 0, nc = 0;
    for (int i = 0; i < nt; i++) {
        bool seen_r = false, seen_c = false;
        for (int k = 0; k < nr; k++)
            seen_r |= ra[k] == top[i].a;
        for (int k = 0; k < nc; k++)
            seen_c |= cb[k] == top[i].b;
        if (!seen_r)
            ra[nr++] = top[i].a;
        if (!seen_c)
            cb[nc++] = top[i].b;
    }
    float *v = malloc((size_t)nr * (size_t)nc * sizeof *v);
    char **rl = calloc((size_t)nr, sizeof *rl), **cl = calloc((size_t)nc, sizeof *cl);
    int rc = AS_ERR;
    if (!v || !rl || !cl) {
        as_error_set(c->err, "out of memory");
        goto out;
    }
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < nc; j++) {
            double acc = 0;
            for (int k = 0; k < dh; k++)
                acc += (double)A[(size_t)ra[i] * (size_t)dh + (size_t)k] * B[(size_t)cb[j] * (size_t)dh + (size_t)k];
            v[(size_t)i * (size_t)nc + (size_t)j] = (float)acc;
        }
    for (int i = 0; i < nr; i++) {
        char b[128];
        as_cmd_token_label(s, ra[i], b, sizeof b);
        if (!(rl[i] = strdup(b)))
            goto oom;
    }
    for (int j = 0; j < nc; j++) {
        char b[128];
        as_cmd_token_label(s, cb[j], b, sizeof b);
        if (!(cl[j] = strdup(b)))
            goto oom;
    }
    char title[96], note0[160], note1[200];
    snprintf(title, sizeof title, "%s circuit of head %ld.%ld", ov ? "OV" : "QK", l, hd);
    if (ov)
        snprintf(note0, sizeof note0, "copying score %.4f (sum of the eigenvalues / sum of their moduli); the tokens "
                 "of its %d largest pairs", copying, nt);
    else
        snprintf(note0, sizeof note0, "the tokens of its %d largest pairs", nt);
    snprintf(note1, sizeof note1, "norm weights folded in; the norms' centring and scaling, biases%s not",
             ov ? "" : ", rotary and the attention scale");
    const char *notes[2] = {note0, note1};
    as_table_fig t = {.v = v, .rows = nr, .cols = nc, .n_mats = 1, .col_labels = (const char *const *)cl,
                      .col_axis = ov ? "logit written" : "key token", .diverging = true, .title = title,
                      .cbar_label = ov ? "direct logit change per unit attention" : "score (unscaled)",
                      .what = ov ? "OV circuit" : "QK circuit", .notes = notes, .n_notes = 2,
                      .row_labels = (const char *const *)rl, .row_axis = ov ? "token attended to" : "query token"};
    rc = as_cmd_export_table(c, path, opt_first, &t);
    goto out;
oom:
    as_error_set(c->err, "out of memory");
out:
    for (int i = 0; rl && i < nr; i++)
        free(rl[i]);
    for (int j = 0; cl && j < nc; j++)
        free(cl[j]);
    free(rl), free(cl), free(v);
    return rc;
}

int as_cmd_circuit(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    const char *usage = "usage: circuit ov|qk LAYER.HEAD [top=K] [FILE.npy|FILE.png|FILE.svg|FILE.pdf]";
    if (c->argc < 3)
        return as_error_set(c->err, "%s", usage);
    bool ov = !strcmp(c->argv[1], "ov");
    if (!ov && strcmp(c->argv[1], "qk"))
        return as_error_set(c->err, "circuit: '%s' is neither ov nor qk (%s)", c->argv[1], usage);
    char lh[64];
    snprintf(lh, sizeof lh, "%s", c->argv[2]);
    char *dot = strchr(lh, '.');
    if (!dot)
        return as_error_set(c->err, "circuit: '%s' is not LAYER.HEAD (e.g. 1.0)", c->argv[2]);
    *dot = '\0';
    long l, hd, top_k = 10;
    if (as_cmd_parse_long(lh, 0, cfg->n_layer - 1, "the layer", &l, c->err))
        return AS_ERR;
    const char *path = NULL;
    bool figure = false;
    int opt_first = c->argc;
    for (int i = 3; i < c->argc; i++) {
        if (!strncmp(c->argv[i], "top=", 4)) {
            if (as_cmd_parse_long(c->argv[i] + 4, 1, 1000, "top", &top_k, c->err))
                return AS_ERR;
        } else if (as_cmd_output_kind(c->argv[i])) {
            path = c->argv[i];
            figure = strcmp(as_cmd_output_kind(path), "npy") != 0;
            opt_first = i + 1;
            break; /* a figure's options follow it (width=, title=...) */
        } else {
            return as_error_set(c->err, "circuit: '%s' is neither top=K nor an output file (%s)", c->argv[i], usage);
        }
    }
    head_ops h;
    if (find_head_ops(s, l, ov, &h, c->err))
        return AS_ERR;
    const as_attn *a = h.a;
    if (as_cmd_parse_long(dot + 1, 0, a->n_head - 1, "the head", &hd, c->err))
        return AS_ERR;
    int d = cfg->d_model, kvh = (int)hd / (a->n_head / a->n_head_kv);
    int dh = ov ? a->d_v : a->d_qk;
    int V = h.embed->w.rows, VU = ov ? h.unembed->w.rows : V;
    float *wl = NULL, *wr = NULL, *A = NULL, *B = NULL;
    pair *best = NULL;
    int n_best = 0;
    double copying = NAN;
    int rc = AS_ERR;
    /* left: W_E · W_V (ov) or W_E · W_Q (qk); right: (W_O · W_U)ᵀ or W_E · W_K, both [vocab][dh] */
    if (ov) {
        wl = head_rows(h.lin[2], kvh * dh, dh, d);
        wr = head_cols(h.wo, (int)hd * dh, dh, d);
    } else {
        wl = head_rows(h.lin[0], (int)hd * dh, dh, d);
        wr = head_rows(h.lin[1], kvh * dh, dh, d);
    }
    A = malloc((size_t)V * (size_t)dh * sizeof *A);
    B = malloc((size_t)VU * (size_t)dh * sizeof *B);
    if (!wl || !wr || !A || !B) {
        as_error_set(c->err, "out of memory for the circuit's factors ([%d, %d] each)", V, dh);
        goto done;
    }
    const as_op *lnl = ov ? h.ln[2] : h.ln[0];
    if (factor(&h.embed->w, V, h.embed->scale, lnl ? lnl->nw : NULL, wl, dh, d, A, s, c->err))
        goto done;
    if (ov ? factor(&h.unembed->w, VU, 0, h.lnf ? h.lnf->nw : NULL, wr, dh, d, B, s, c->err)
           : factor(&h.embed->w, V, h.embed->scale, h.ln[1] ? h.ln[1]->nw : NULL, wr, dh, d, B, s, c->err))
        goto done;

    fprintf(s->out, "%s circuit of head %ld.%ld: %s, kept factored as [%d, %d] · [%d, %d]\n", ov ? "OV" : "QK", l,
            hd,
            ov ? "W_E · W_V · W_O · W_U (rows: the token attended to; columns: the logit it writes)"
               : "W_E · W_Q · W_Kᵀ · W_Eᵀ (rows: the query's token; columns: the key's token)",
            V, dh, dh, VU);
    if (a->n_head_kv < a->n_head)
        fprintf(s->out, "grouped-query attention: head %ld reads key-value head %d (%d heads share it)\n", hd, kvh,
                a->n_head / a->n_head_kv);
    fprintf(s->out, "folded: %s%s%s; not folded: %s%s%s%s\n",
            (ov ? h.ln[2] : h.ln[0]) ? "the weight of the norm before the attention" : "no norm before the attention",
            ov && h.lnf ? ", the final norm's weight" : "", h.embed->scale != 0 ? ", the embedding scale" : "",
            "the norms' centring and division by the scale, biases",
            ov ? "" : ", the attention scale", h.rotary && !ov ? ", rotary (it depends on the positions)" : "",
            ov && h.unembed->softcap > 0 ? ", the logits' soft-cap" : "");

    if (ov) {
        /* BA = W_O W_U W_E W_V, [dh][dh]: its eigenvalues are AB's non-zero ones */
        int n = dh, info = 0, lwork = -1;
        double *ba = calloc((size_t)dh * (size_t)dh, sizeof *ba), *wre = malloc((size_t)dh * sizeof *wre),
               *wim = malloc((size_t)dh * sizeof *wim), wq;
        int Vm = V < VU ? V : VU;
        if (!ba || !wre || !wim) {
            free(ba), free(wre), free(wim);
            as_error_set(c->err, "out of memory");
            goto done;
        }
        /* column-major for LAPACK: ba[i + k·dh] = Σ_t B[t][i] A[t][k] (tokens both tables have) */
        for (int t = 0; t < Vm; t++)
            for (int k = 0; k < dh; k++) {
                double ak = A[(size_t)t * (size_t)dh + (size_t)k];
                for (int i = 0; i < dh; i++)
                    ba[i + (size_t)k * (size_t)dh] += (double)B[(size_t)t * (size_t)dh + (size_t)i] * ak;
            }
        dgeev_("N", "N", &n, ba, &n, wre, wim, NULL, &n, NULL, &n, &wq, &lwork, &info, 1, 1);
        lwork = (int)wq;
        double *work = malloc((size_t)(lwork > 1 ? lwork : 1) * sizeof *work);
        if (work)
            dgeev_("N", "N", &n, ba, &n, wre, wim, NULL, &n, NULL, &n, work, &lwork, &info, 1, 1);
        free(work);
        if (!work || info != 0) {
            free(ba), free(wre), free(wim);
            as_error_set(c->err, "the eigenvalues of the OV circuit did not converge (LAPACK info %d)", info);
            goto done;
        }
        double sum = 0, abs_sum = 0;
        int pos = 0;
        for (int i = 0; i < dh; i++) {
            sum += wre[i], abs_sum += hypot(wre[i], wim[i]);
            pos += wim[i] == 0 && wre[i] > 0;
        }
        fprintf(s->out, "copying score\t%.4f\t(Σλ / Σ|λ| over the %d eigenvalues of the [%d, %d] factor W_O·W_U·W_E·W_V, "
                "real part; 1: copies every token it attends to)\n", abs_sum > 0 ? sum / abs_sum : 0.0, dh, dh, dh);
        fprintf(s->out, "positive eigenvalues\t%d of %d\n", pos, dh);
        copying = abs_sum > 0 ? sum / abs_sum : 0.0;
        free(ba), free(wre), free(wim);
    }

    /* the top pairs, block by block of rows (never the whole [V, V] at once) */
    {
        enum { BLK = 128 };
        pair *top = malloc((size_t)top_k * sizeof *top);
        float *blk = malloc((size_t)BLK * (size_t)VU * sizeof *blk);
        if (!top || !blk) {
            free(top), free(blk);
            as_error_set(c->err, "out of memory");
            goto done;
        }
        int nt = 0, diag_top = 0, Vm = V < VU ? V : VU;
        for (int r0 = 0; r0 < V; r0 += BLK) {
            int nb = V - r0 < BLK ? V - r0 : BLK;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, VU, dh, 1.0f, A + (size_t)r0 * (size_t)dh, dh,
                        B, dh, 0.0f, blk, VU);
            for (int r = 0; r < nb; r++) {
                const float *row = blk + (size_t)r * (size_t)VU;
                int argmax = 0;
                for (int t = 0; t < VU; t++) {
                    if (row[t] > row[argmax])
                        argmax = t;
                    if (nt < top_k || row[t] > top[nt - 1].v)
                        keep_top(top, &nt, (int)top_k, row[t], r0 + r, t);
                }
                diag_top += r0 + r < Vm && argmax == r0 + r;
            }
            if (as_cmd_interrupted(s)) {
                free(top), free(blk);
                as_error_set(c->err, "interrupted");
                goto done;
            }
        }
        fprintf(s->out, "own token first\t%.4f\t(share of the %d tokens whose row is largest at the same token%s)\n",
                Vm ? (double)diag_top / Vm : 0.0, Vm, ov ? ": it raises its own logit most" : ": it attends to itself most");
        fprintf(s->out, "rank\t%s\t%s\tvalue\n", ov ? "attended" : "query", ov ? "writes" : "key");
        for (int i = 0; i < nt; i++) {
            char la[128], lb[128];
            as_cmd_label(s, top[i].a, 0, la, sizeof la);
            as_cmd_label(s, top[i].b, 0, lb, sizeof lb);
            fprintf(s->out, "%d\t%s\t%s\t%.6g\n", i + 1, la, lb, (double)top[i].v);
        }
        best = top, n_best = nt;
        free(blk);
    }

    if (path && figure) {
        rc = circuit_figure(c, path, opt_first, ov, l, hd, A, B, dh, best, n_best, copying);
    } else if (path) {
        char what[160];
        if ((size_t)V * (size_t)VU <= (size_t)4096 * 4096) {
            float *full = malloc((size_t)V * (size_t)VU * sizeof *full);
            if (!full) {
                as_error_set(c->err, "out of memory");
                goto done;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, V, VU, dh, 1.0f, A, dh, B, dh, 0.0f, full, VU);
            snprintf(what, sizeof what, "the %s circuit of head %ld.%ld, [rows, columns] as printed", ov ? "OV" : "QK", l,
                     hd);
            size_t shape[2] = {(size_t)V, (size_t)VU};
            rc = as_cmd_write_npy(s, path, AS_NPY_F32, full, shape, 2, what, c->err);
            free(full);
        } else if (V == VU) {
            float *both = malloc(2 * (size_t)V * (size_t)dh * sizeof *both);
            if (!both) {
                as_error_set(c->err, "out of memory");
                goto done;
            }
            memcpy(both, A, (size_t)V * (size_t)dh * sizeof *both);
            memcpy(both + (size_t)V * (size_t)dh, B, (size_t)V * (size_t)dh * sizeof *both);
            snprintf(what, sizeof what, "the %s circuit's factors [A, Bᵀ] (the circuit is A · B; the vocabulary is too "
                     "large to write it whole)", ov ? "OV" : "QK");
            size_t shape[3] = {2, (size_t)V, (size_t)dh};
            rc = as_cmd_write_npy(s, path, AS_NPY_F32, both, shape, 3, what, c->err);
            free(both);
        } else {
            as_error_set(c->err, "the vocabulary is too large to write the circuit whole, and its factors differ in "
                         "rows (%d, %d)", V, VU);
        }
    } else {
        rc = AS_OK;
    }
done:
    free(wl), free(wr), free(A), free(B), free(best);
    return rc;
}
