"""What the test helpers use, against what the Makefile installs.

    /usr/bin/python3 tests/deps/scan.py --has "CMD ..." --installs "KIND/NAME:PKG ..." ROOT...

Reads the shell scripts and Python programs ROOT names, or that a ROOT
makefile's recipes name (tests/X.sh, tests/X.py: the helpers `make test`,
`make asan`, `make bench`, `make fuzz` and `make test-fresh` run), follows what they
run or source (`sh X.sh`, `. X.sh`, `python3 X.py`, `python3 - <<EOF` and
`python3 -c '...'` bodies, a Python file's imports of modules beside it or
on the path it inserts), and lists
  - every command a shell script runs (the first word of a simple command,
    and what `timeout`, `env`, `nohup`, `xargs`, `exec` and `command -v`
    name), and
  - every module a Python program imports that is not in Python's
    standard library and not one of the project's own files.
Each must be one a fresh machine has (--has: commands) or one the
Makefile installs (--installs: cmd/NAME:PACKAGE and py/MODULE:PACKAGE).
Prints one line per use that is neither, naming the file, the line and
the command or module, and exits 1; exits 0 saying how many files and
uses it checked. Needs Python's standard library only.

The shell reading is a scanner, not a parser: it knows quotes, comments,
here-documents, `$(...)`, backquotes, pipes and lists, keywords and
functions; a command named through a variable (`$T kill-server`) is not
seen. That is the direction to err in for a check that fails a build: it
never reports a use that is not there."""
import argparse
import ast
import os
import re
import sys

SHELL_WORDS = set("""
if then else elif fi for while until do done case esac in function select time ! { } [[ ]]
. : [ alias bg break cd command continue echo eval exec exit export false fg getopts hash jobs kill
local printf pwd read readonly return set shift test times trap true type ulimit umask unalias unset
wait source let declare typeset
""".split())
# words after which the next word is again a command
WRAPPERS = {"timeout", "env", "nohup", "xargs", "exec", "nice", "stdbuf", "setsid", "chroot", "unshare"}
SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "{", "}", "$(", "`", "then", "do", "else", "elif",
              "if", "while", "until", "!", "time", ";;"}


STDLIB = set(sys.stdlib_module_names) | {"__future__"}


class Scan:
    def __init__(self, has, cmds, mods, root):
        self.has, self.cmds, self.mods, self.root = has, cmds, mods, root
        self.seen, self.problems, self.uses, self.files = set(), [], 0, 0

    def rel(self, path):
        return os.path.relpath(path, self.root)

    def missing(self, path, line, what, name, hint):
        self.problems.append("%s:%d: %s '%s' is not in the Makefile's install list (%s)"
                             % (self.rel(path), line, what, name, hint))

    # ---- files ----

    def file(self, path):
        path = os.path.realpath(path)
        if path in self.seen or not os.path.isfile(path):
            return
        self.seen.add(path)
        self.files += 1
        text = open(path, encoding="utf-8", errors="replace").read()
        if path.endswith(".py") or text.startswith("#!") and "python" in text.split("\n", 1)[0]:
            self.python(path, text, 1, [os.path.dirname(path)])
        else:
            self.shell(path, text)

    # ---- Python ----

    def python(self, path, text, first_line, dirs):
        try:
            tree = ast.parse(text)
        except SyntaxError as e:
            self.problems.append("%s:%d: cannot read as Python: %s" % (self.rel(path), first_line, e.msg))
            return
        dirs = list(dirs)
        # sys.path.insert(0, os.path.join(os.path.dirname(...), "..", "..", "models", "recipes"))
        for m in re.finditer(r"^.*sys\.path\.insert\(.*__file__.*$", text, re.M):
            parts = re.findall(r'"([^"]+)"', m.group(0))
            dirs.append(os.path.normpath(os.path.join(os.path.dirname(path), *parts)))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for full in names:
                top = full.split(".")[0]
                line = first_line + node.lineno - 1
                local = [os.path.join(d, top + ".py") for d in dirs if os.path.isfile(os.path.join(d, top + ".py"))]
                if local:
                    self.file(local[0])
                    continue
                if top in STDLIB:
                    continue
                self.uses += 1
                if top not in self.mods:
                    self.missing(path, line, "Python module", top, "add py/%s:python3-%s" % (top, top.lower()))

    # ---- shell ----

    def shell(self, path, text):
        funcs = self.functions(path, text, set())
        lines = text.split("\n")
        # Here-documents are data, or Python after `python3 -`: read them
        # apart and blank them (line numbers stay).
        i = 0
        while i < len(lines):
            here = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", lines[i])
            if here:
                j = i + 1
                while j < len(lines) and lines[j].strip() != here.group(1):
                    j += 1
                if re.search(r"python3?\b[^|;&]*\s-(\s|$)", lines[i]):
                    self.python(path, "\n".join(lines[i + 1:j]), i + 2, [os.path.dirname(path)])
                lines[i] = lines[i][:here.start()]
                for k in range(i + 1, min(j + 1, len(lines))):
                    lines[k] = ""
                i = j
            i += 1
        text = "\n".join(lines)
        # python3 -c '...': Python too
        for m in re.finditer(r"python3?\s+-c\s+'([^']*)'", text):
            self.python(path, m.group(1), text.count("\n", 0, m.start()) + 1, [os.path.dirname(path)])
        text = re.sub(r"(python3?\s+-c\s+)'[^']*'", lambda m: m.group(1) + "''" + "\n" * m.group(0).count("\n"),
                      text)
        self.words(path, tokenize(text), funcs)

    def functions(self, path, text, seen):
        """The functions a shell file defines, with those of the libraries it
        sources (`. "$HERE/lib.sh"`), and theirs in turn (golden_lib.sh
        sources tmux_lib.sh); each library is read as a file too."""
        funcs = set(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(\)", text, re.M))
        for m in re.finditer(r'^\s*\.\s+"?\$(?:HERE|here|\{HERE\})/([\w./-]+)"?', text, re.M):
            lib = os.path.realpath(os.path.join(os.path.dirname(path), m.group(1)))
            if os.path.isfile(lib) and lib not in seen:
                seen.add(lib)
                funcs |= self.functions(lib, open(lib, encoding="utf-8").read(), seen)
                self.file(lib)
        return funcs

    def words(self, path, toks, funcs):
        """toks: (word, line) pairs; a newline is the word "\\n"."""
        expect_cmd, wrapper, case = True, None, 0   # case: 1 after `case`, 2 in a pattern
        k = 0
        while k < len(toks):
            t, lineno = toks[k]
            k += 1
            if case == 1 and t == "in" or t == ";;":
                case = 2
                continue
            if case == 2:
                if t == "esac":
                    case = 0
                elif t == ")":
                    case, expect_cmd = 0, True
                continue
            if t == "case":
                case = 1
                continue
            if t in SEPARATORS or t == "\n":
                expect_cmd, wrapper = True, None
                continue
            if not expect_cmd:
                self.follow(path, t)
                continue
            if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", t):        # an assignment before the command
                continue
            if re.match(r"^[0-9]*[<>]", t):                     # a redirection before the command
                if t.rstrip("0123456789&-") in ("", "<", ">", ">>", "2>", "1>", "2>>", ">&", "<&") \
                        and k < len(toks):
                    k += 1
                continue
            if wrapper and (t.startswith("-") or re.match(r"^[0-9.]+[smhd]?$", t)):  # a wrapper's options
                continue
            if t == "command" and k < len(toks) and toks[k][0] == "-v":
                if k + 1 < len(toks):
                    self.command(path, lineno, toks[k + 1][0], funcs)
                k += 2
                expect_cmd = False
                continue
            expect_cmd = False
            self.command(path, lineno, t, funcs)
            if t in WRAPPERS:
                expect_cmd, wrapper = True, t
                continue
            if os.path.basename(t.strip("\"'")) in ("sh", "bash", "dash", "python3", "python"):
                while k < len(toks) and toks[k][0] not in SEPARATORS and toks[k][0] != "\n":
                    self.follow(path, toks[k][0])
                    k += 1

    def follow(self, path, word):
        """A word naming one of the project's scripts: read it too."""
        w = word.strip("\"'")
        if not re.search(r"\.(sh|py)$", w):
            return
        if w.startswith("/"):      # not the project's (test-fresh's /root/steps.sh is the root's)
            return
        w = re.sub(r"^\$\{?(here|HERE)\}?/", os.path.dirname(path) + "/", w)
        w = re.sub(r"^\$\{?(root|ROOT|repo)\}?/", self.root + "/", w)
        if "$" in w:
            return
        for base in (os.path.dirname(path), self.root):
            p = os.path.join(base, w)
            if os.path.isfile(p):
                self.file(p)
                return

    def command(self, path, lineno, word, funcs):
        w = word.strip("\"'")
        if not w or "$" in w or "`" in w or w in SHELL_WORDS or w in funcs:
            return
        if w.startswith("./") or w.startswith("../") or "/" in w and not w.startswith("/usr/") \
                and not w.startswith("/bin/") and not w.startswith("/sbin/"):
            return                              # the project's own programs
        name = os.path.basename(w)
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", name):
            return
        self.uses += 1
        if name not in self.has and name not in self.cmds:
            self.missing(path, lineno, "command", name, "add cmd/%s:PACKAGE" % name)


def quote_end(text, i):
    """Where the quote opened at text[i] closes (a backslash escapes in
    double quotes, and $(...) may hold quotes of its own)."""
    q, j, n, depth = text[i], i + 1, len(text), 0
    while j < n:
        if q == '"' and text[j] == "\\":
            j += 2
            continue
        if q == '"' and text.startswith("$(", j):
            depth += 1
            j += 2
            continue
        if q == '"' and depth and text[j] == ")":
            depth -= 1
        elif q == '"' and depth and text[j] in "'\"":
            j = quote_end(text, j)
        elif text[j] == q and not depth:
            return j
        j += 1
    return n - 1


def tokenize(text):
    """(word, line) pairs of a shell text: words keep their quotes (a
    quoted word may span lines), operators are words of their own, a
    newline is the word "\\n" (unless escaped), comments are dropped."""
    toks, i, n, line = [], 0, len(text), 1
    ops = ("$(", "&&", "||", ";;", ";", "|", "&", "(", ")", "`")
    while i < n:
        c = text[i]
        if c == "\n":
            toks.append(("\n", line))
            line += 1
            i += 1
            continue
        if c in " \t":
            i += 1
            continue
        if c == "\\" and text.startswith("\\\n", i):
            line += 1
            i += 2
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        op = None if text.startswith("$((", i) else next((o for o in ops if text.startswith(o, i)), None)
        if op:
            toks.append((op, line))
            i += len(op)
            continue
        word, at = "", line
        while i < n and text[i] not in " \t\n;|()`" and \
                (not text.startswith("$(", i) or text.startswith("$((", i)):
            if text[i] == "&" and not (word.endswith(">") or word.endswith("<")):
                break
            if text.startswith("$((", i):            # arithmetic: no commands in it
                e = text.find("))", i)
                e = n - 2 if e < 0 else e
                word += text[i:e + 2]
                i = e + 2
            elif text[i] in "'\"":
                e = quote_end(text, i)
                line += text.count("\n", i, e)
                word += text[i:e + 1]
                i = e + 1
            elif text[i] == "\\" and i + 1 < n:
                word += text[i:i + 2]
                i += 2
            else:
                word += text[i]
                i += 1
        toks.append((word, at))
    return toks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--has", default="", help="commands a fresh machine has")
    ap.add_argument("--installs", default="", help="cmd/NAME:PKG and py/MODULE:PKG the Makefile installs")
    ap.add_argument("roots", nargs="+")
    a = ap.parse_args()
    cmds, mods = set(), set()
    for e in a.installs.split():
        kind, _, rest = e.partition("/")
        name = rest.split(":")[0]
        (cmds if kind == "cmd" else mods if kind == "py" else set()).add(name)
    root = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    s = Scan(set(a.has.split()), cmds, mods, root)
    for r in a.roots:
        if not os.path.isfile(r):
            print("deps-scan: %s: no such file" % r)
            return 1
        if os.path.basename(r) == "Makefile" or r.endswith(".mk"):
            # the helpers a makefile's recipes run
            for h in sorted(set(re.findall(r"\btests/[\w./-]+\.(?:sh|py)\b", open(r, encoding="utf-8").read()))):
                if not os.path.isfile(os.path.join(root, h)):
                    print("deps-scan: %s names %s, which is not there" % (r, h))
                    return 1
                s.file(os.path.join(root, h))
        else:
            s.file(r)
    for p in sorted(set(s.problems)):
        print("deps-scan: " + p)
    if s.problems:
        print("deps-scan: FAILED: %d use(s) of something neither a fresh machine has nor the Makefile installs"
              % len(set(s.problems)))
        return 1
    print("deps-scan: %d helper files, %d uses of commands and modules: each one a fresh machine has or the "
          "Makefile installs" % (s.files, s.uses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
