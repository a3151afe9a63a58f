/* lesson: a guided tour read from a plain-text script (assets/lessons/,
 * installed in DATADIR/lessons). The format, line by line:
 *
 *   # a comment                      ignored anywhere
 *   title: What attention is         before the first step: the lesson's title
 *   model: austen-gpt2               (optional) the bundled model it runs on
 *   : prompt It is a truth ...       a command, run when its step is shown
 *   Each token looks back ...        text shown with the step; lines join
 *                                    into a paragraph, a blank line ends one
 *   ---                              the next step
 *
 * Every step is some commands and the sentences that explain what they
 * show. No terminal here; the full-screen view pauses between steps
 * (Space, Backspace), the REPL for Enter, batch mode runs them straight
 * through.
 * Unit-tested. */
#ifndef ATTNSCOPE_UI_LESSON_H
#define ATTNSCOPE_UI_LESSON_H

#include <stddef.h>

#include "attnscope/error.h"

typedef struct lesson_step {
    char **cmds;   /* the commands, in order */
    int n_cmds;
    char *text;    /* paragraphs separated by "\n" */
    int line;      /* where the step starts in the file, for messages */
} lesson_step;

typedef struct lesson {
    char *name, *title, *model; /* model: NULL when the lesson names none */
    lesson_step *steps;
    int n_steps;
} lesson;

/* Reads a lesson from text (`where` names it in messages: file:line). */
int lesson_parse(const char *text, const char *where, lesson *out, as_error *err);
/* The lesson NAME from the lesson folders (NAME.txt or NAME), found by
 * name only: a name with '/', '..' or a leading '.' is refused, the
 * message listing the lessons there are. */
int lesson_load(const char *name, lesson *out, as_error *err);
void lesson_free(lesson *l);
/* The installed lessons' names and titles, sorted by name; returns the count
 * (at most cap). */
int lesson_list(char names[][64], char titles[][128], int cap);

#endif
