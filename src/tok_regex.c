/* tok_regex: the small regular-expression engine the pre-tokenizers run
 * (tok_pre.c), for the patterns llama.cpp hands to std::regex. Owns
 * parsing a pattern, compiling it to a program for a backtracking machine,
 * and searching an array of symbols with it.
 *
 * Why an engine of our own: the project depends on no regex library, and
 * to split text as llama.cpp does the engine must mean what libstdc++'s
 * std::regex (ECMAScript grammar) means -- alternatives tried left to
 * right and the first that leads to a match wins (not the longest),
 * greedy quantifiers giving back one symbol at a time, lookaheads -- over
 * the very symbols llama.cpp matches: its "collapsed" text (one byte per
 * code point, a byte standing for a non-ASCII code point's Unicode
 * category) or, for patterns without \p{..}, the code points themselves
 * (std::wregex). Both are arrays of uint32_t here. So llama.cpp's regex
 * strings are copied verbatim into tok_pre.c's table and compiled as they
 * are, rather than re-expressed by hand.
 *
 * The subset: literals; classes [...] and [^...] with ranges and the
 * escapes \s \S \d \D \w \W (ASCII meanings, as std::regex in the C
 * locale); groups (...) and (?:...); lookaheads (?=...) (?!...);
 * quantifiers ? * + {n} {n,} {n,m} (greedy); alternation |; the anchor $
 * (end of the searched span); \r \n \t \f \v and escaped punctuation.
 * Anything else is refused when compiling, as are patterns that can match
 * nothing and loops whose body can (none of llama.cpp's do): every
 * pattern in tok_pre.c's table is compiled by a unit test.
 *
 * Searching backtracks with an explicit stack on the heap (so a long run
 * of letters costs memory, not C stack), which is what libstdc++'s
 * depth-first executor does with its recursion. */
#include "tokenizer_internal.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- the program */

enum { I_CLASS, I_SPLIT, I_JMP, I_LOOK, I_NLOOK, I_EOL, I_MATCH };

typedef struct rinst {
    uint8_t op;
    int32_t x, y; /* CLASS: class index; SPLIT: preferred, other; JMP: target; LOOK: pc after the body */
} rinst;

typedef struct rclass {
    uint32_t (*r)[2]; /* sorted, disjoint, inclusive */
    size_t n;
    bool neg;
} rclass;

struct as_tok_regex {
    rinst *code;
    size_t ncode, capcode;
    rclass *cls;
    size_t ncls, capcls;
};

#define SYM_MAX 0xFFFFFFFFu

/* ---------------------------------------------------------------- the parse tree */

enum { N_CLASS, N_CAT, N_ALT, N_REP, N_LOOK, N_NLOOK, N_EOL };

typedef struct rnode {
    uint8_t kind;
    int32_t a, b;     /* CAT/ALT: first child, (via next) siblings; REP/LOOK: child in a */
    int32_t next;     /* next sibling, -1 */
    int32_t min, max; /* REP: max -1 = unbounded; CLASS: min = class index */
} rnode;

typedef struct parser {
    const uint32_t *p; /* the pattern's symbols */
    size_t n, i;
    rnode *nodes;
    size_t nn, capn;
    as_tok_regex *re;
    as_error *err;
    const char *src; /* for messages */
    bool failed;
} parser;

DEFINE_RESERVE(reserve_node, rnode)
DEFINE_RESERVE(reserve_inst, rinst)
DEFINE_RESERVE(reserve_cls, rclass)
typedef uint32_t range2[2];
DEFINE_RESERVE(reserve_range, range2)

static int32_t fail(parser *ps, const char *what)
{
    if (!ps->failed)
        as_error_set(ps->err, "tokenizer: regex '%s': %s at character %zu", ps->src, what, ps->i);
    ps->failed = true;
    return -1;
}

static int32_t new_node(parser *ps, uint8_t kind)
{
    if (ps->failed)
        return -1;
    if (!reserve_node(&ps->nodes, &ps->capn, ps->nn + 1))
        return fail(ps, "out of memory");
    ps->nodes[ps->nn] = (rnode){kind, -1, -1, -1, 0, 0};
    return (int32_t)ps->nn++;
}

/* ---------------------------------------------------------------- classes */

typedef struct rset { /* a class under construction */
    uint32_t (*r)[2];
    size_t n, cap;
} rset;

static bool set_add(rset *s, uint32_t lo, uint32_t hi)
{
    if (!reserve_range(&s->r, &s->cap, s->n + 1))
        return false;
    s->r[s->n][0] = lo, s->r[s->n][1] = hi;
    s->n++;
    return true;
}

static const uint32_t SPACE[][2] = {{0x09, 0x0D}, {0x20, 0x20}};
static const uint32_t DIGIT[][2] = {{0x30, 0x39}};
static const uint32_t WORD[][2] = {{0x30, 0x39}, {0x41, 0x5A}, {0x5F, 0x5F}, {0x61, 0x7A}};

/* Adds ranges r[0, n), or their complement. */
static bool set_add_all(rset *s, const uint32_t (*r)[2], size_t n, bool complement)
{
    if (!complement) {
        for (size_t i = 0; i < n; i++)
            if (!set_add(s, r[i][0], r[i][1]))
                return false;
        return true;
    }
    uint32_t lo = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i][0] > lo && !set_add(s, lo, r[i][0] - 1))
            return false;
        lo = r[i][1] + 1;
    }
    return set_add(s, lo, SYM_MAX);
}

static int cmp_range(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Sorts and merges the set into a class of the program; its index. */
static int32_t add_class(parser *ps, rset *s, bool neg)
{
    qsort(s->r, s->n, sizeof *s->r, cmp_range);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (k && (uint64_t)s->r[i][0] <= (uint64_t)s->r[k - 1][1] + 1) {
            if (s->r[i][1] > s->r[k - 1][1])
                s->r[k - 1][1] = s->r[i][1];
            continue;
        }
        s->r[k][0] = s->r[i][0], s->r[k][1] = s->r[i][1];
        k++;
    }
    as_tok_regex *re = ps->re;
    if (!reserve_cls(&re->cls, &re->capcls, re->ncls + 1)) {
        free(s->r);
        return fail(ps, "out of memory");
    }
    re->cls[re->ncls] = (rclass){s->r, k, neg};
    s->r = NULL;
    return (int32_t)re->ncls++;
}

static int32_t class_node(parser *ps, rset *s, bool neg)
{
    int32_t c = add_class(ps, s, neg), n = new_node(ps, N_CLASS);
    if (n >= 0)
        ps->nodes[n].min = c;
    return c < 0 ? -1 : n;
}

/* A class escape (\s \S \d \D \w \W) at the parser's position, after the
 * backslash: added to s; false if it is not one. */
static bool class_escape(parser *ps, rset *s, bool *ok)
{
    uint32_t c = ps->p[ps->i];
    const uint32_t (*r)[2] = NULL;
    size_t n = 0;
    switch (c | 0x20) {
    case 's': r = SPACE, n = 2; break;
    case 'd': r = DIGIT, n = 1; break;
    case 'w': r = WORD, n = 4; break;
    default: return false;
    }
    ps->i++;
    *ok = set_add_all(s, r, n, c < 'a');
    return true;
}

/* A character escape after the backslash: the symbol it stands for. */
static bool char_escape(parser *ps, uint32_t *out)
{
    uint32_t c = ps->p[ps->i];
    switch (c) {
    case 'r': *out = '\r'; break;
    case 'n': *out = '\n'; break;
    case 't': *out = '\t'; break;
    case 'f': *out = '\f'; break;
    case 'v': *out = '\v'; break;
    default:
        /* identity escapes: punctuation stands for itself */
        if (c >= 0x80 || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
            return false;
        *out = c;
    }
    ps->i++;
    return true;
}

/* One class member (a symbol, possibly escaped) at the position. */
static bool class_atom(parser *ps, uint32_t *out)
{
    if (ps->i >= ps->n)
        return false;
    if (ps->p[ps->i] != '\\') {
        *out = ps->p[ps->i++];
        return true;
    }
    ps->i++;
    return ps->i < ps->n && char_escape(ps, out);
}

static int32_t parse_class(parser *ps)
{
    rset s = {0};
    bool neg = ps->i < ps->n && ps->p[ps->i] == '^';
    ps->i += neg;
    while (ps->i < ps->n && ps->p[ps->i] != ']') {
        bool ok = true;
        if (ps->p[ps->i] == '\\' && ps->i + 1 < ps->n) {
            ps->i++;
            if (class_escape(ps, &s, &ok)) {
                if (!ok)
                    break;
                continue;
            }
            ps->i--;
        }
        uint32_t lo, hi;
        if (!class_atom(ps, &lo)) {
            free(s.r);
            return fail(ps, "unsupported escape in a class");
        }
        hi = lo;
        if (ps->i + 1 < ps->n && ps->p[ps->i] == '-' && ps->p[ps->i + 1] != ']') {
            ps->i++;
            if (!class_atom(ps, &hi) || hi < lo) {
                free(s.r);
                return fail(ps, "bad range in a class");
            }
        }
        if (!set_add(&s, lo, hi)) {
            free(s.r);
            return fail(ps, "out of memory");
        }
    }
    if (ps->i >= ps->n) {
        free(s.r);
        return fail(ps, "unterminated class");
    }
    ps->i++; /* ']' */
    return class_node(ps, &s, neg);
}

/* ---------------------------------------------------------------- parsing */

static int32_t parse_alt(parser *ps);

static int32_t single(parser *ps, uint32_t c)
{
    rset s = {0};
    if (!set_add(&s, c, c))
        return fail(ps, "out of memory");
    return class_node(ps, &s, false);
}

static int32_t parse_group(parser *ps)
{
    uint8_t kind = 0; /* 0: plain group */
    if (ps->i + 1 < ps->n && ps->p[ps->i] == '?') {
        uint32_t c = ps->p[ps->i + 1];
        if (c == ':')
            kind = 0;
        else if (c == '=')
            kind = N_LOOK;
        else if (c == '!')
            kind = N_NLOOK;
        else
            return fail(ps, "unsupported group");
        ps->i += 2;
    }
    int32_t body = parse_alt(ps);
    if (body < 0)
        return -1;
    if (ps->i >= ps->n || ps->p[ps->i] != ')')
        return fail(ps, "missing ')'");
    ps->i++;
    if (!kind)
        return body;
    int32_t n = new_node(ps, kind);
    if (n >= 0)
        ps->nodes[n].a = body;
    return n;
}

static int32_t parse_atom(parser *ps)
{
    uint32_t c = ps->p[ps->i++];
    switch (c) {
    case '(':
        return parse_group(ps);
    case '[':
        return parse_class(ps);
    case '$':
        return new_node(ps, N_EOL);
    case '^':
    case '.':
    case ')':
    case '*':
    case '+':
    case '?':
    case '{':
    case '}':
    case ']':
    case '|':
        ps->i--;
        return fail(ps, "unsupported or misplaced operator");
    case '\\': {
        if (ps->i >= ps->n)
            return fail(ps, "trailing backslash");
        rset s = {0};
        bool ok = true;
        if (class_escape(ps, &s, &ok))
            return ok ? class_node(ps, &s, false) : fail(ps, "out of memory");
        uint32_t e;
        if (!char_escape(ps, &e))
            return fail(ps, "unsupported escape");
        return single(ps, e);
    }
    default:
        return single(ps, c);
    }
}

static bool parse_number(parser *ps, int32_t *v)
{
    size_t start = ps->i;
    int64_t x = 0;
    while (ps->i < ps->n && ps->p[ps->i] >= '0' && ps->p[ps->i] <= '9' && x < 100000)
        x = x * 10 + (ps->p[ps->i++] - '0');
    *v = (int32_t)x;
    return ps->i > start && x <= 4096;
}

/* A quantifier after an atom, if any: min and max (-1: unbounded). */
static bool parse_quant(parser *ps, int32_t *min, int32_t *max)
{
    if (ps->i >= ps->n)
        return false;
    uint32_t c = ps->p[ps->i];
    if (c == '?' || c == '*' || c == '+') {
        ps->i++;
        *min = c == '+';
        *max = c == '?' ? 1 : -1;
    } else if (c == '{') {
        ps->i++;
        if (!parse_number(ps, min)) {
            fail(ps, "bad {n,m}");
            return false;
        }
        *max = *min;
        if (ps->i < ps->n && ps->p[ps->i] == ',') {
            ps->i++;
            *max = -1;
            if (ps->i < ps->n && ps->p[ps->i] != '}' && (!parse_number(ps, max) || *max < *min)) {
                fail(ps, "bad {n,m}");
                return false;
            }
        }
        if (ps->i >= ps->n || ps->p[ps->i] != '}') {
            fail(ps, "bad {n,m}");
            return false;
        }
        ps->i++;
    } else {
        return false;
    }
    if (ps->i < ps->n && ps->p[ps->i] == '?') {
        fail(ps, "lazy quantifiers are not supported");
        return false;
    }
    return true;
}

/* Makes child the last of parent's children (last: the current last). */
static void append(parser *ps, int32_t parent, int32_t *last, int32_t child)
{
    if (*last < 0)
        ps->nodes[parent].a = child;
    else
        ps->nodes[*last].next = child;
    *last = child;
}

static int32_t parse_seq(parser *ps)
{
    int32_t seq = new_node(ps, N_CAT), last = -1;
    while (seq >= 0 && ps->i < ps->n && ps->p[ps->i] != '|' && ps->p[ps->i] != ')') {
        int32_t atom = parse_atom(ps), min, max;
        if (atom < 0)
            return -1;
        if (parse_quant(ps, &min, &max)) {
            int32_t r = new_node(ps, N_REP);
            if (r < 0)
                return -1;
            ps->nodes[r].a = atom, ps->nodes[r].min = min, ps->nodes[r].max = max;
            atom = r;
        } else if (ps->failed) {
            return -1;
        }
        append(ps, seq, &last, atom);
    }
    return ps->failed ? -1 : seq;
}

static int32_t parse_alt(parser *ps)
{
    int32_t alt = new_node(ps, N_ALT), last = -1;
    for (;;) {
        int32_t seq = parse_seq(ps);
        if (alt < 0 || seq < 0)
            return -1;
        append(ps, alt, &last, seq);
        if (ps->i < ps->n && ps->p[ps->i] == '|') {
            ps->i++;
            continue;
        }
        return alt;
    }
}

/* ---------------------------------------------------------------- compiling */

static bool nullable(const parser *ps, int32_t n)
{
    const rnode *x = &ps->nodes[n];
    switch (x->kind) {
    case N_CLASS:
        return false;
    case N_CAT:
        for (int32_t c = x->a; c >= 0; c = ps->nodes[c].next)
            if (!nullable(ps, c))
                return false;
        return true;
    case N_ALT:
        for (int32_t c = x->a; c >= 0; c = ps->nodes[c].next)
            if (nullable(ps, c))
                return true;
        return false;
    case N_REP:
        return x->min == 0 || nullable(ps, x->a);
    default: /* lookaheads and $ consume nothing */
        return true;
    }
}

static int32_t emit(parser *ps, uint8_t op, int32_t x, int32_t y)
{
    as_tok_regex *re = ps->re;
    if (ps->failed)
        return -1;
    if (re->ncode >= (1u << 24) || !reserve_inst(&re->code, &re->capcode, re->ncode + 1))
        return fail(ps, "pattern too large");
    re->code[re->ncode] = (rinst){op, x, y};
    return (int32_t)re->ncode++;
}

static void gen(parser *ps, int32_t n);

static void gen_rep(parser *ps, const rnode *x)
{
    for (int32_t i = 0; i < x->min; i++)
        gen(ps, x->a);
    as_tok_regex *re = ps->re;
    if (x->max < 0) {
        if (nullable(ps, x->a)) {
            fail(ps, "a loop whose body can match nothing");
            return;
        }
        /* L: SPLIT body, out; body; JMP L */
        int32_t l = emit(ps, I_SPLIT, 0, 0);
        gen(ps, x->a);
        emit(ps, I_JMP, l, 0);
        if (!ps->failed)
            re->code[l].x = l + 1, re->code[l].y = (int32_t)re->ncode;
        return;
    }
    /* x{0,k}, greedy: (x(x(x)?)?)? -- every refusal jumps to the end */
    int32_t opt = x->max - x->min, first = (int32_t)re->ncode;
    for (int32_t i = 0; i < opt && !ps->failed; i++) {
        int32_t s = emit(ps, I_SPLIT, 0, -1);
        gen(ps, x->a);
        if (!ps->failed)
            re->code[s].x = s + 1;
    }
    for (size_t pc = (size_t)first; !ps->failed && pc < re->ncode; pc++)
        if (re->code[pc].op == I_SPLIT && re->code[pc].y == -1)
            re->code[pc].y = (int32_t)re->ncode;
}

static void gen(parser *ps, int32_t n)
{
    if (ps->failed)
        return;
    const rnode x = ps->nodes[n];
    as_tok_regex *re = ps->re;
    switch (x.kind) {
    case N_CLASS:
        emit(ps, I_CLASS, x.min, 0);
        return;
    case N_CAT:
        for (int32_t c = x.a; c >= 0; c = ps->nodes[c].next)
            gen(ps, c);
        return;
    case N_ALT: {
        if (ps->nodes[x.a].next < 0) {
            gen(ps, x.a);
            return;
        }
        /* SPLIT a, next; a; JMP end; next: SPLIT b, ...; ...; last */
        int32_t jumps[256], nj = 0;
        for (int32_t c = x.a; c >= 0 && !ps->failed; c = ps->nodes[c].next) {
            bool last = ps->nodes[c].next < 0;
            int32_t s = last ? -1 : emit(ps, I_SPLIT, 0, 0);
            gen(ps, c);
            if (!last) {
                if (nj == 256) {
                    fail(ps, "too many alternatives");
                    return;
                }
                jumps[nj++] = emit(ps, I_JMP, 0, 0);
                if (!ps->failed)
                    re->code[s].x = s + 1, re->code[s].y = (int32_t)re->ncode;
            }
        }
        for (int32_t i = 0; i < nj && !ps->failed; i++)
            re->code[jumps[i]].x = (int32_t)re->ncode;
        return;
    }
    case N_REP:
        gen_rep(ps, &x);
        return;
    case N_LOOK:
    case N_NLOOK: {
        int32_t l = emit(ps, x.kind == N_LOOK ? I_LOOK : I_NLOOK, 0, 0);
        gen(ps, x.a);
        emit(ps, I_MATCH, 0, 0);
        if (!ps->failed)
            re->code[l].x = (int32_t)re->ncode;
        return;
    }
    case N_EOL:
        emit(ps, I_EOL, 0, 0);
        return;
    }
}

void as_tok_regex_free(as_tok_regex *re)
{
    if (!re)
        return;
    for (size_t i = 0; i < re->ncls; i++)
        free(re->cls[i].r);
    free(re->cls);
    free(re->code);
    free(re);
}

/* The pattern's symbols: bytes, or (wide) UTF-8 code points. */
static uint32_t *pattern_symbols(const char *pattern, size_t len, bool wide, size_t *n)
{
    uint32_t *p = malloc((len ? len : 1) * sizeof *p);
    size_t k = 0;
    for (size_t i = 0; p && i < len; k++) {
        uint32_t cp = (uint8_t)pattern[i];
        size_t c = wide ? as_tok_utf8_char((const uint8_t *)pattern + i, len - i, &cp) : 1;
        if (!c) {
            free(p);
            return NULL;
        }
        p[k] = cp;
        i += c;
    }
    *n = k;
    return p;
}

as_tok_regex *as_tok_regex_compile(const char *pattern, size_t len, bool wide, as_error *err)
{
    parser ps = {.err = err, .src = pattern};
    ps.p = pattern_symbols(pattern, len, wide, &ps.n);
    ps.re = calloc(1, sizeof *ps.re);
    if (!ps.p || !ps.re) {
        free((void *)ps.p);
        free(ps.re);
        as_error_set(err, "tokenizer: regex '%s': out of memory or invalid UTF-8", pattern);
        return NULL;
    }
    int32_t root = parse_alt(&ps);
    if (root >= 0 && ps.i < ps.n)
        fail(&ps, "unbalanced ')'");
    if (!ps.failed && nullable(&ps, root))
        fail(&ps, "the pattern can match nothing");
    if (!ps.failed) {
        gen(&ps, root);
        emit(&ps, I_MATCH, 0, 0);
    }
    free((void *)ps.p);
    free(ps.nodes);
    if (ps.failed) {
        as_tok_regex_free(ps.re);
        return NULL;
    }
    return ps.re;
}

/* ---------------------------------------------------------------- searching */

static bool in_class(const rclass *c, uint32_t s)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s < c->r[mid][0])
            hi = mid;
        else if (s > c->r[mid][1])
            lo = mid + 1;
        else
            return !c->neg;
    }
    return c->neg;
}

DEFINE_RESERVE(reserve_frame, as_tok_rxframe)

/* Runs the program from pc at pos, anchored, the span ending at end:
 * 1 and *out (where MATCH was reached) on a match, 0 if none, -1 when out
 * of memory. Alternatives are pushed on st above its current depth and
 * popped when tried, so a lookahead runs as a nested call on the same
 * stack. */
static int run(const as_tok_regex *re, const uint32_t *sym, size_t end, int32_t pc, size_t pos, size_t *out,
               as_tok_rxstack *st)
{
    size_t base = st->n;
    for (;;) {
        const rinst *in = &re->code[pc];
        bool ok = true;
        switch (in->op) {
        case I_CLASS:
            ok = pos < end && in_class(&re->cls[in->x], sym[pos]);
            pc++, pos++;
            break;
        case I_SPLIT:
            if (!reserve_frame(&st->f, &st->cap, st->n + 1))
                return -1;
            st->f[st->n++] = (as_tok_rxframe){in->y, pos};
            pc = in->x;
            break;
        case I_JMP:
            pc = in->x;
            break;
        case I_LOOK:
        case I_NLOOK: {
            size_t ignored;
            int r = run(re, sym, end, pc + 1, pos, &ignored, st);
            if (r < 0)
                return -1;
            ok = (r == 1) == (in->op == I_LOOK);
            pc = in->x;
            break;
        }
        case I_EOL:
            ok = pos == end;
            pc++;
            break;
        case I_MATCH:
            st->n = base;
            *out = pos;
            return 1;
        }
        if (ok)
            continue;
        if (st->n == base)
            return 0;
        st->n--;
        pc = st->f[st->n].pc;
        pos = st->f[st->n].pos;
    }
}

int as_tok_regex_search(const as_tok_regex *re, const uint32_t *sym, size_t from, size_t end, size_t *ms,
                        size_t *me, as_tok_rxstack *st)
{
    st->n = 0;
    for (size_t at = from; at < end; at++) {
        int r = run(re, sym, end, 0, at, me, st);
        if (r > 0)
            *ms = at;
        if (r)
            return r;
    }
    return 0;
}
