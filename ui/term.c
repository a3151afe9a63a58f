#include "term.h"

#include <execinfo.h>
#include <langinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "palette.h"

/* A role's look in each colour mode. RGB -1 is the terminal's default
 * colour; c8 values are curses' basic colours (-1 default). */
typedef struct role_def {
    int fg, bg;        /* 0xRRGGBB */
    short fg8, bg8;
    attr_t attr;       /* in colour */
    attr_t mono;       /* without colour */
} role_def;

#define DEF (-1)
static const role_def roles[R_COUNT] = {
    [R_NORMAL] = {DEF, DEF, -1, -1, A_NORMAL, A_NORMAL},
    [R_DIM] = {0x8a8a8a, DEF, -1, -1, A_NORMAL, A_DIM},
    [R_TITLE] = {DEF, DEF, -1, -1, A_BOLD, A_BOLD},
    [R_TITLE_FOCUS] = {0x5fd7ff, DEF, COLOR_CYAN, -1, A_BOLD, A_BOLD | A_UNDERLINE},
    [R_BORDER] = {0x6c6c6c, DEF, -1, -1, A_NORMAL, A_DIM},
    [R_BORDER_FOCUS] = {0x5fd7ff, DEF, COLOR_CYAN, -1, A_NORMAL, A_BOLD},
    [R_LABEL] = {DEF, DEF, -1, -1, A_NORMAL, A_NORMAL},
    [R_LABEL_SEL] = {0x000000, 0x5fd7ff, COLOR_BLACK, COLOR_CYAN, A_BOLD, A_REVERSE},
    [R_TOK_PROMPT_A] = {0xeeeeee, 0x3a3a3a, COLOR_WHITE, COLOR_BLUE, A_NORMAL, A_NORMAL},
    [R_TOK_PROMPT_B] = {0xeeeeee, 0x585858, COLOR_WHITE, COLOR_BLACK, A_NORMAL, A_NORMAL},
    [R_TOK_GEN_A] = {0x000000, 0xffd787, COLOR_BLACK, COLOR_YELLOW, A_NORMAL, A_BOLD},
    [R_TOK_GEN_B] = {0x000000, 0xd7af5f, COLOR_BLACK, COLOR_YELLOW, A_NORMAL, A_BOLD | A_UNDERLINE},
    [R_TOK_SEL] = {0x000000, 0x5fd7ff, COLOR_BLACK, COLOR_CYAN, A_BOLD, A_REVERSE},
    [R_BAR] = {0x5fafff, DEF, COLOR_BLUE, -1, A_NORMAL, A_NORMAL},
    [R_BAR_MARK] = {0xffaf00, DEF, COLOR_YELLOW, -1, A_BOLD, A_BOLD},
    [R_OUTLIER] = {0xff5f5f, DEF, COLOR_RED, -1, A_BOLD, A_BOLD | A_UNDERLINE},
    [R_ERROR] = {0xff5f5f, DEF, COLOR_RED, -1, A_BOLD, A_BOLD},
    [R_WARN] = {0xffaf00, DEF, COLOR_YELLOW, -1, A_NORMAL, A_UNDERLINE},
    [R_ECHO] = {0x5fd7ff, DEF, COLOR_CYAN, -1, A_BOLD, A_BOLD},
    [R_HINT] = {0x8a8a8a, DEF, -1, -1, A_NORMAL, A_DIM},
    [R_STATUS] = {0xffffff, 0x005f87, COLOR_WHITE, COLOR_BLUE, A_NORMAL, A_REVERSE},
    [R_STATUS_KEY] = {0xffd75f, 0x005f87, COLOR_YELLOW, COLOR_BLUE, A_BOLD, A_REVERSE | A_BOLD},
    [R_PROMPT] = {0x5fd7ff, DEF, COLOR_CYAN, -1, A_BOLD, A_BOLD},
};

static void rgb_of(int hex, uint8_t rgb[3])
{
    rgb[0] = (uint8_t)(hex >> 16);
    rgb[1] = (uint8_t)(hex >> 8);
    rgb[2] = (uint8_t)hex;
}

static int colour_number(colour_mode cm, int hex)
{
    uint8_t rgb[3];
    if (hex < 0)
        return -1;
    rgb_of(hex, rgb);
    return cm == CM_DIRECT ? pal_direct(rgb) : pal_nearest_256(rgb);
}

static void init_roles(colour_mode cm)
{
    for (int r = 1; r < R_COUNT; r++) {
        const role_def *d = &roles[r];
        if (cm == CM_8)
            init_extended_pair(r, d->fg8, d->bg8);
        else
            init_extended_pair(r, colour_number(cm, d->fg), colour_number(cm, d->bg));
    }
}

static colour_mode detect_colours(void)
{
    const char *no = getenv("NO_COLOR"), *ct = getenv("COLORTERM");
    if ((no && *no) || !has_colors() || start_color() == ERR)
        return CM_MONO;
    use_default_colors();
    bool direct_said = ct && (!strcmp(ct, "truecolor") || !strcmp(ct, "24bit"));
    if (COLORS >= 0x1000000 && direct_said)
        return CM_DIRECT;
    if (COLORS >= 256)
        return CM_256;
    return COLORS >= 8 ? CM_8 : CM_MONO;
}

/* Heat levels that fit the terminal's colour pairs: every (fg, bg)
 * combination of slots must be allocatable without reuse. */
static int choose_levels(colour_mode cm)
{
    if (cm != CM_256 && cm != CM_DIRECT)
        return 0;
    int levels = TERM_MAX_LEVELS;
    while (levels >= 8 && (levels + 5) * (levels + 5) + R_COUNT >= COLOR_PAIRS)
        levels /= 2;
    return levels >= 8 ? levels : 0;
}

/* exit() and signal handlers take no context: the screen to put back if
 * something ends the program while the view is up (normal exits close it
 * first). */
static SCREEN *open_screen;

static void restore_at_exit(void)
{
    if (open_screen && !isendwin())
        endwin();
}

/* What a fatal signal's handler puts back, made while the view opens: a
 * handler may call only async-signal-safe functions (write, tcsetattr),
 * never endwin, which allocates and writes through stdio. The terminal's
 * own strings for leaving the full screen, showing the cursor, plain
 * attributes and keypad off (and the mouse off), and the tty modes the
 * view found. */
static char reset_seq[512];
static volatile sig_atomic_t reset_len; /* 0: nothing to put back */
static struct termios shell_modes;
static bool have_shell_modes;
static int tty_out = -1, tty_in = -1;

static void add_cap(size_t *n, const char *name)
{
    const char *v = tigetstr(name);
    size_t len = v && v != (char *)-1 ? strlen(v) : 0;
    if (len && *n + len < sizeof reset_seq)
        memcpy(reset_seq + *n, v, len), *n += len;
}

static void prepare_reset(bool mouse)
{
    size_t n = 0;
    add_cap(&n, "sgr0");
    add_cap(&n, "cnorm");
    add_cap(&n, "rmkx");
    const char *kmous = tigetstr("kmous");
    /* ncurses drives an xterm-style mouse with these private modes */
    if (mouse && kmous && kmous != (char *)-1 && !strncmp(kmous, "\033[", 2)) {
        static const char off[] = "\033[?1006l\033[?1002l\033[?1000l";
        if (n + sizeof off - 1 < sizeof reset_seq)
            memcpy(reset_seq + n, off, sizeof off - 1), n += sizeof off - 1;
    }
    add_cap(&n, "rmcup");
    reset_len = (sig_atomic_t)n;
}

/* Hang-up and quit end the program: the terminal first, as curses itself
 * does for SIGTERM, then the signal's own action. */
static const int fatal_signals[] = {SIGHUP, SIGQUIT};

static void on_fatal(int sig)
{
    if (reset_len > 0 && tty_out >= 0) {
        ssize_t w = write(tty_out, reset_seq, (size_t)reset_len);
        (void)w; /* nothing more to do if the terminal is gone */
    }
    if (have_shell_modes && tty_in >= 0)
        tcsetattr(tty_in, TCSADRAIN, &shell_modes);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* handler on the n signals, or (on false) their default back where it is
 * still ours; only where nobody else handles one (nor ignores it, as nohup
 * does; a sanitizer handles a bad access). */
static void handle_signals(const int *sigs, size_t n, void (*handler)(int), bool on)
{
    for (size_t i = 0; i < n; i++) {
        struct sigaction old, sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on ? handler : SIG_DFL;
        sigaction(sigs[i], NULL, &old);
        if (on ? old.sa_handler == SIG_DFL : old.sa_handler == handler)
            sigaction(sigs[i], &sa, NULL);
    }
}

static void catch_fatal(bool on)
{
    handle_signals(fatal_signals, sizeof fatal_signals / sizeof fatal_signals[0], on_fatal, on);
}

/* A crash (an abort: glibc's "double free", a failed assertion; a bad
 * access) while the view hides stderr would take its reason with it: what
 * the program wrote there is in a scratch file nobody reads again. From
 * hiding stderr to showing it again, a crash puts the terminal back (while
 * the view is open), copies that file to the real stderr with a line of
 * its own and the stack (glibc's backtrace_symbols_fd: a frame of the
 * program as attnscope(+0xOFFSET), which `addr2line -f -e attnscope
 * 0xOFFSET` names with its file and line), then takes the signal's own
 * action (a core dump where enabled). Only where nobody else handles the
 * signal (a sanitizer does). */
static const int crash_signals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
static volatile sig_atomic_t hidden_fd = -1, real_fd = -1;

static void on_crash(int sig)
{
    if (reset_len > 0 && tty_out >= 0) {
        ssize_t w = write(tty_out, reset_seq, (size_t)reset_len);
        (void)w;
    }
    if (reset_len > 0 && have_shell_modes && tty_in >= 0)
        tcsetattr(tty_in, TCSADRAIN, &shell_modes);
    int out = real_fd >= 0 ? real_fd : STDERR_FILENO;
    if (hidden_fd >= 0 && lseek(hidden_fd, 0, SEEK_SET) == 0) {
        char buf[512];
        ssize_t n;
        while ((n = read(hidden_fd, buf, sizeof buf)) > 0 && write(out, buf, (size_t)n) == n)
            ;
    }
    static const char why[] = "attnscope: ended by a fatal signal (a bug: the lines above, if any, say why, the "
                              "stack below where)\n";
    ssize_t w = write(out, why, sizeof why - 1);
    (void)w;
    void *frames[64];
    backtrace_symbols_fd(frames, backtrace(frames, 64), out);
    signal(sig, SIG_DFL);
    raise(sig);
}

void term_catch_crashes(int hidden, int real)
{
    bool on = hidden >= 0 || real >= 0;
    hidden_fd = hidden, real_fd = real;
    if (on) { /* the first backtrace loads libgcc's unwinder (it allocates): here, not in a handler */
        void *f[2];
        (void)backtrace(f, 2);
    }
    handle_signals(crash_signals, sizeof crash_signals / sizeof crash_signals[0], on_crash, on);
}

int term_open(term *t, char *why, size_t cap)
{
    memset(t, 0, sizeof *t);
    t->utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
    tty_out = fileno(stdout), tty_in = fileno(stdin);
    have_shell_modes = tcgetattr(tty_in, &shell_modes) == 0; /* as newterm saves them */
    t->screen = newterm(NULL, stdout, stdin);
    if (!t->screen) {
        snprintf(why, cap, "cannot open the terminal '%s'", getenv("TERM") ? getenv("TERM") : "(TERM unset)");
        return -1;
    }
    set_term(t->screen);
    char *cup = tigetstr("cup");
    if (!cup || cup == (char *)-1) {
        snprintf(why, cap, "the terminal '%s' cannot move its cursor", getenv("TERM") ? getenv("TERM") : "");
        endwin();
        delscreen(t->screen);
        t->screen = NULL;
        return -1;
    }
    open_screen = t->screen;
    static bool registered;
    if (!registered)
        registered = atexit(restore_at_exit) == 0;
    catch_fatal(true);
    t->cm = detect_colours();
    t->levels = choose_levels(t->cm);
    if (t->levels == 0 && t->cm != CM_MONO && t->cm != CM_8)
        t->cm = CM_8;
    t->style = t->levels ? (t->utf8 ? HM_HALF : HM_BLOCK) : (t->utf8 ? HM_SHADE : HM_ASCII);
    if (t->levels == 0)
        t->levels = 5;
    if (t->cm != CM_MONO)
        init_roles(t->cm);
    t->n_slots = t->levels + 4;
    t->heat_pair = calloc((size_t)(t->n_slots + 1) * (size_t)(t->n_slots + 1), sizeof *t->heat_pair);
    t->slot_colour = calloc((size_t)t->n_slots, sizeof *t->slot_colour);
    if (!t->heat_pair || !t->slot_colour) {
        term_close(t);
        snprintf(why, cap, "out of memory");
        return -1;
    }
    t->next_pair = R_COUNT;
    /* Any-colour pairs go above every heat pair choose_levels allowed for. */
    if (t->cm == CM_256 || t->cm == CM_DIRECT) {
        int heat_top = (t->levels + 5) * (t->levels + 5) + R_COUNT + 1;
        t->rgb_base = COLOR_PAIRS - 4096 > heat_top ? COLOR_PAIRS - 4096 : heat_top;
        t->rgb_cap = COLOR_PAIRS - t->rgb_base;
        if (t->rgb_cap >= 64)
            t->rgb_table = calloc(2 * (size_t)t->rgb_cap, sizeof *t->rgb_table);
        if (!t->rgb_table)
            t->rgb_cap = 0;
    }
    t->cmap = AS_CMAP_VIRIDIS;
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    t->mouse = mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL) != 0;
    mouseinterval(0);
    prepare_reset(t->mouse);
    return 0;
}

void term_close(term *t)
{
    if (!t->screen)
        return;
    curs_set(1);
    endwin();
    delscreen(t->screen);
    t->screen = NULL;
    open_screen = NULL;
    catch_fatal(false);
    reset_len = 0;
    free(t->heat_pair);
    free(t->slot_colour);
    free(t->rgb_table);
    t->rgb_table = NULL;
    t->rgb_cap = 0;
    t->heat_pair = NULL;
    t->slot_colour = NULL;
}

void term_role_attr(const term *t, WINDOW *w, role r, attr_t extra)
{
    int pair = r;
    if (t->cm == CM_MONO) {
        pair = 0;
        extra |= roles[r].mono;
    } else {
        extra |= roles[r].attr;
    }
    wattr_set(w, extra, 0, &pair);
}

void term_role(const term *t, WINDOW *w, role r)
{
    term_role_attr(t, w, r, A_NORMAL);
}

void term_slot_rgb(const term *t, int slot, uint8_t rgb[3])
{
    if (slot == TERM_SLOT_BLACK(t) || slot == TERM_SLOT_WHITE(t)) {
        rgb[0] = rgb[1] = rgb[2] = slot == TERM_SLOT_BLACK(t) ? 0 : 255;
    } else if (slot == HM_SLOT_MASKED(t->levels)) {
        as_masked_rgb(t->cmap, rgb);
    } else if (slot == HM_SLOT_PENDING(t->levels)) {
        rgb[0] = rgb[1] = rgb[2] = 0x30;
    } else {
        as_colormap(t->cmap, t->levels > 1 ? (float)slot / (float)(t->levels - 1) : 0, rgb);
    }
}

static int slot_colour(const term *t, int slot)
{
    return slot < 0 || slot >= t->n_slots ? -1 : t->slot_colour[slot];
}

/* Terminal colour numbers of every heat slot for the current colormap. */
static void compute_slot_colours(term *t)
{
    uint8_t ramp[TERM_MAX_LEVELS][3];
    for (int s = 0; s < t->n_slots; s++) {
        uint8_t rgb[3];
        term_slot_rgb(t, s, rgb);
        if (s < t->levels)
            memcpy(ramp[s], rgb, 3);
        t->slot_colour[s] = t->cm == CM_DIRECT ? pal_direct(rgb) : pal_nearest_256(rgb);
    }
    /* The 256-colour cube's steps are coarse: the scale itself is fitted
     * as a whole so that it never gets darker as values grow. */
    if (t->cm == CM_256)
        pal_ramp_256((const uint8_t(*)[3])ramp, t->levels, t->slot_colour);
}

static int *pair_cell(term *t, int fg, int bg)
{
    return &t->heat_pair[(fg + 1) * (t->n_slots + 1) + (bg + 1)];
}

void term_set_cmap(term *t, as_cmap cmap)
{
    t->cmap = cmap;
    if (t->cm != CM_256 && t->cm != CM_DIRECT)
        return;
    compute_slot_colours(t);
    for (int fg = -1; fg < t->n_slots; fg++)
        for (int bg = -1; bg < t->n_slots; bg++)
            if (*pair_cell(t, fg, bg))
                init_extended_pair(*pair_cell(t, fg, bg), slot_colour(t, fg), slot_colour(t, bg));
}

void term_heat(term *t, WINDOW *w, int fg, int bg)
{
    int pair = 0;
    if (t->cm == CM_256 || t->cm == CM_DIRECT) {
        int *p = pair_cell(t, fg, bg);
        if (!*p && t->next_pair < COLOR_PAIRS &&
            init_extended_pair(t->next_pair, slot_colour(t, fg), slot_colour(t, bg)) != ERR)
            *p = t->next_pair++;
        pair = *p;
    }
    wattr_set(w, A_NORMAL, 0, &pair);
}

int term_contrast_slot(term *t, int bg_slot)
{
    uint8_t rgb[3];
    if (bg_slot < 0)
        return HM_SLOT_DEFAULT;
    term_slot_rgb(t, bg_slot, rgb);
    return pal_is_light(rgb) ? TERM_SLOT_BLACK(t) : TERM_SLOT_WHITE(t);
}

bool term_rgb_ok(const term *t)
{
    return t->rgb_cap > 0 && (t->cm == CM_256 || t->cm == CM_DIRECT);
}

void term_rgb_reset(term *t)
{
    if (t->rgb_table)
        memset(t->rgb_table, 0, 2 * (size_t)t->rgb_cap * sizeof *t->rgb_table);
    t->rgb_used = 0;
}

static int rgb_number(const term *t, const uint8_t c[3])
{
    if (t->cm == CM_256)
        return pal_nearest_256(c);
    /* 5 bits a channel: neighbouring cells share pairs, and 32 steps are finer than the eye needs here */
    uint8_t q[3] = {(uint8_t)((c[0] & 0xf8) | 4), (uint8_t)((c[1] & 0xf8) | 4), (uint8_t)((c[2] & 0xf8) | 4)};
    return pal_direct(q);
}

bool term_rgb(term *t, WINDOW *w, const uint8_t fg[3], const uint8_t bg[3])
{
    if (!term_rgb_ok(t))
        return false;
    int f = rgb_number(t, fg), b = rgb_number(t, bg);
    size_t n = 2 * (size_t)t->rgb_cap, i = ((size_t)f * 2654435761u ^ (size_t)b * 40503u) % n;
    while (t->rgb_table[i].pair && (t->rgb_table[i].fg != f || t->rgb_table[i].bg != b))
        i = (i + 1) % n;
    if (!t->rgb_table[i].pair) {
        if (t->rgb_used >= t->rgb_cap)
            return false;
        int pair = t->rgb_base + t->rgb_used;
        if (init_extended_pair(pair, f, b) == ERR)
            return false;
        t->rgb_used++;
        t->rgb_table[i] = (struct rgb_pair){f, b, pair};
    }
    int pair = t->rgb_table[i].pair;
    wattr_set(w, A_NORMAL, 0, &pair);
    return true;
}
