#!/usr/bin/python3
"""Build the Jane Austen corpus from Debian's r-cran-janeaustenr.

Writes, under models/recipes/work/:
  raw_<Book>.txt        the package's lines for each novel, as R stores them
  corpus_train.txt      first 95% of each novel's paragraphs (novels in order)
  corpus_val.txt        last 5% of each novel's paragraphs

Cleaning: the title block before the first chapter heading, CHAPTER/VOLUME
headings, editorial [bracketed] notes and the closing "THE END"/"Finis" are
dropped; the underscores marking italics are removed; the hard-wrapped lines
of a paragraph are joined with single spaces (runs of spaces collapsed);
paragraphs are separated by a blank line ("\n\n"). Novels are separated by a
blank line too. The text is UTF-8 (a few "£" and accented letters remain).

Usage: python3 corpus.py [--work DIR]
"""
import argparse
import os
import re
import subprocess

BOOKS = ["Sense & Sensibility", "Pride & Prejudice", "Mansfield Park",
         "Emma", "Northanger Abbey", "Persuasion"]
VAL_FRACTION = 0.05

HEADING = re.compile(r"^\s*(chapter|volume)\s+([0-9]+|[ivxlc]+)\.?\s*$", re.I)
ENDING = re.compile(r"^\s*(the end|finis)\s*$", re.I)


def book_file(work, name):
    return os.path.join(work, "raw_" + re.sub(r"[^A-Za-z]", "", name) + ".txt")


def dump_books(work):
    r = ('library(janeaustenr); b <- austen_books(); '
         'for (n in levels(b$book)) { writeLines(as.character(b$text[b$book==n]), '
         'file.path("%s", paste0("raw_", gsub("[^A-Za-z]","",n), ".txt")), '
         'useBytes=TRUE) }' % work)
    subprocess.run(["Rscript", "-e", r], check=True)


def paragraphs(lines):
    """Turn the wrapped lines of one novel into cleaned paragraphs."""
    start = next(i for i, l in enumerate(lines) if HEADING.match(l))
    paras, cur, bracket = [], [], False
    for line in lines[start:] + [""]:
        s = line.strip()
        if bracket or s.startswith("["):
            bracket = "]" not in s  # notes may span lines
            continue
        if HEADING.match(s) or ENDING.match(s):
            s = ""
        if s:
            cur.append(s)
        elif cur:
            p = re.sub(r"\s+", " ", " ".join(cur).replace("_", "")).strip()
            if p:
                paras.append(p)
            cur = []
    return paras


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "work"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    dump_books(a.work)
    train, val = [], []
    for name in BOOKS:
        with open(book_file(a.work, name), encoding="utf-8") as f:
            paras = paragraphs(f.read().split("\n"))
        n_val = max(1, int(round(len(paras) * VAL_FRACTION)))
        train.append("\n\n".join(paras[:-n_val]))
        val.append("\n\n".join(paras[-n_val:]))
        print("%-20s %6d paragraphs, %5d held out" % (name, len(paras), n_val))
    for fn, parts in (("corpus_train.txt", train), ("corpus_val.txt", val)):
        text = "\n\n".join(parts) + "\n"
        with open(os.path.join(a.work, fn), "w", encoding="utf-8") as f:
            f.write(text)
        print("%s: %d characters" % (fn, len(text)))


if __name__ == "__main__":
    main()
