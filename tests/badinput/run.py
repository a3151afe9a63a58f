"""Replays the bad-input corpus (tests/badinput/README.md says the format).

    /usr/bin/python3 tests/badinput/run.py [--file F] [--keep] [--times] [ID ...]

AS_BIN is the binary (default build/attnscope). Each case runs in a
scratch directory holding copies of the models and the broken files
fixtures.py makes. Before and after each case the runner records every file
there and in the repository's models/ (type, inode, size, modification and
change times, link target: any write changes the change time, which no
program can set back), and SHA-256 checksums of all of them before the first
case and after the last. It runs each case under a time limit and checks its
exit status, its output, that no sanitizer or crash report appeared, and that
nothing changed, appeared or vanished but the files the case names (what
a case writes is removed after it; anything else it changed makes a fresh
scratch for the next case). Prints one line per failure, a summary, and
exits 1 if any case failed. Needs Python's standard library only."""
import hashlib
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import fixtures  # noqa: E402

TIMEOUT = float(os.environ.get("BADINPUT_TIMEOUT", "20"))
# what no case may print, whatever it expects
ALWAYS_NOT = [r"AddressSanitizer", r"LeakSanitizer", r"UndefinedBehaviorSanitizer", r"runtime error:",
              r"Segmentation fault", r"core dumped", r"Assertion .* failed", r"double free", r"stack smashing"]


class Case:
    def __init__(self, cid, path, line):
        self.id, self.where = cid, "%s:%d" % (os.path.basename(path), line)
        self.model, self.run, self.stdin, self.exit = "gpt2.gguf", None, None, None
        self.checks, self.writes, self.timeout = [], [], TIMEOUT


def unescape(text):
    """\\n, \\t, \\r, \\0, \\xNN and \\\\ in a corpus field, as bytes."""
    out, i, raw = bytearray(), 0, text.encode("utf-8")
    simple = {ord("n"): 10, ord("t"): 9, ord("r"): 13, ord("0"): 0, ord("\\"): 92}
    while i < len(raw):
        c = raw[i]
        if c == 92 and i + 1 < len(raw):
            d = raw[i + 1]
            if d == ord("x") and re.fullmatch(rb"[0-9a-fA-F]{2}", raw[i + 2:i + 4]):
                out.append(int(raw[i + 2:i + 4], 16))
                i += 4
                continue
            if d in simple:
                out.append(simple[d])
                i += 2
                continue
        out.append(c)
        i += 1
    return bytes(out)


def parse(path):
    cases, case, seen = [], None, set()
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.match(r"^== (\S+)\s*$", line)
        if m:
            if m.group(1) in seen:
                sys.exit("%s:%d: case id '%s' used twice" % (path, n, m.group(1)))
            seen.add(m.group(1))
            case = Case(m.group(1), path, n)
            cases.append(case)
            continue
        m = re.match(r"^(model|run|stdin|exit|out|err|any|not|writes|timeout)([:~]) ?(.*)$", line)
        if not m or case is None:
            sys.exit("%s:%d: cannot read this line (a case starts with '== ID'; fields are "
                     "model, run, stdin, exit, out, err, any, not, writes, timeout)" % (path, n))
        key, kind, val = m.groups()
        if key in ("out", "err", "any", "not"):
            pat = val if kind == "~" else re.escape(val)
            try:
                re.compile(pat)
            except re.error as e:
                sys.exit("%s:%d: bad regex: %s" % (path, n, e))
            case.checks.append((key, pat, val))
        elif kind == "~":
            sys.exit("%s:%d: only out, err, any and not take a regex (~)" % (path, n))
        elif key == "model":
            case.model = val.strip()
        elif key == "run":
            case.run = val
        elif key == "stdin":
            case.stdin = unescape(val)
        elif key == "exit":
            case.exit = int(val)
        elif key == "writes":
            case.writes.append(val.strip())
        elif key == "timeout":
            case.timeout = float(val)
    for c in cases:
        if c.run is None or c.exit is None:
            sys.exit("%s: case %s needs run: and exit:" % (c.where, c.id))
        if c.exit != 0 and not any(k in ("err", "any") for k, _, _ in c.checks):
            sys.exit("%s: case %s fails, so it must say which message (err:)" % (c.where, c.id))
    return cases


def argv_of(case, binary):
    words = [unescape(w) for w in shlex.split(case.run)]
    pre = [] if case.model == "none" else [b"-m", case.model.encode()]
    return [binary.encode()] + pre + words


def checksums(roots):
    return {p: sha(p) for p, sig in snapshot(roots).items() if stat.S_ISREG(sig[0])}


def snapshot(roots):
    """path -> a signature of everything under each root (not following links)."""
    snap = {}
    for root in roots:
        for d, dirs, files in os.walk(root):
            for name in dirs + files:
                p = os.path.join(d, name)
                st = os.lstat(p)
                if stat.S_ISDIR(st.st_mode):  # its entries are checked one by one
                    snap[p] = (st.st_mode, st.st_ino)
                    continue
                sig = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                if stat.S_ISLNK(st.st_mode):
                    sig += (os.readlink(p),)
                snap[p] = sig
    return snap


def sha(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def allowed(path, writes, scratch):
    for w in writes:
        full = os.path.normpath(os.path.join(scratch, w))
        if path == full or path.startswith(full + os.sep):
            return True
    return False


def run_case(case, binary, scratch, roots):
    before = snapshot(roots)
    argv = argv_of(case, binary)
    t0 = time.time()
    p = subprocess.Popen(argv, cwd=scratch, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    problems = []
    try:
        out, err = p.communicate(case.stdin or b"", timeout=case.timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc = None
        problems.append("hangs: no exit after %g s" % case.timeout)
    out_s, err_s = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    if rc is None:
        pass
    elif rc < 0:
        problems.append("crashed with signal %d" % -rc)
    elif rc != case.exit:
        problems.append("exit %d, wanted %d" % (rc, case.exit))
    for pat in ALWAYS_NOT if rc is not None else []:
        if re.search(pat, out_s + err_s):
            problems.append("a crash or sanitizer report (/%s/)" % pat)
    for key, pat, shown in case.checks if rc is not None else []:
        text = {"out": out_s, "err": err_s, "any": out_s + err_s, "not": out_s + err_s}[key]
        hit = re.search(pat, text, re.M)
        if key == "not" and hit:
            problems.append("printed what it must not: %r" % hit.group(0))
        elif key != "not" and not hit:
            problems.append("%s lacks %r" % ("stdout" if key == "out" else "stderr" if key == "err" else "output",
                                              shown))
    after = snapshot(roots)
    dirty = False  # something the next case needs is changed or gone
    for path in sorted(set(before) | set(after)):
        if before.get(path) == after.get(path):
            continue
        if allowed(path, case.writes, scratch) and path in after:
            dirty = dirty or path in before
            continue
        dirty = True
        what = "appeared" if path not in before else "vanished" if path not in after else "changed"
        problems.append("%s %s" % (os.path.relpath(path, scratch) if path.startswith(scratch) else path, what))
    for w in case.writes:
        if not os.path.lexists(os.path.join(scratch, w)) and rc == 0:
            problems.append("did not write %s" % w)
    if problems:
        lines = err_s.splitlines()
        said = [l for l in lines if l.startswith("error")] or lines or out_s.splitlines()[-1:]
        problems.append("it said: %s" % (said[0][:200] if said else "(nothing)"))
    for w in case.writes:  # what the case wrote goes, for the next case
        full = os.path.join(scratch, w)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        elif os.path.lexists(full):
            os.remove(full)
    return problems, time.time() - t0, dirty


def main():
    args = sys.argv[1:]
    files, keep, ids, times = [], False, [], None
    while args:
        a = args.pop(0)
        if a == "--file":
            files.append(args.pop(0))
        elif a == "--keep":
            keep = True
        elif a == "--times":
            times = []
        else:
            ids.append(a)
    if not files:
        files = [os.path.join(HERE, "cases.txt")]
    binary = os.path.abspath(os.environ.get("AS_BIN", os.path.join(REPO, "build/attnscope")))
    if not os.access(binary, os.X_OK):
        sys.exit("badinput: no binary at %s (set AS_BIN)" % binary)
    cases = [c for f in files for c in parse(f)]
    if ids:
        unknown = set(ids) - {c.id for c in cases}
        if unknown:
            sys.exit("badinput: no case %s" % ", ".join(sorted(unknown)))
        cases = [c for c in cases if c.id in ids]
    base = tempfile.mkdtemp(prefix="badinput.")
    scratch = os.path.join(base, "s")

    def fresh():
        shutil.rmtree(scratch, ignore_errors=True)
        os.mkdir(scratch)
        fixtures.build(scratch, REPO)

    models = os.path.join(REPO, "models")
    roots = [scratch, models]
    t0 = time.time()
    fresh()
    whole = checksums(roots)
    failed = 0
    try:
        for case in cases:
            problems, took, changed = run_case(case, binary, scratch, roots)
            if times is not None:
                times.append((took, case.id))
            if problems:
                failed += 1
                print("FAIL %s (%s): %s" % (case.id, case.where, "; ".join(problems)))
            if changed:
                fresh()  # the next case starts from the same files
        end = checksums(roots)
        for p in sorted(set(whole) | set(end)):
            if whole.get(p) != end.get(p):
                failed += 1
                print("FAIL: %s is not as it was before the first case" % p)
        for took, cid in sorted(times or [], reverse=True)[:15]:
            print("%6.2f s  %s" % (took, cid))
    finally:
        if keep:
            print("badinput: scratch kept in %s" % scratch)
        else:
            shutil.rmtree(base, ignore_errors=True)
    print("badinput: %d of %d cases passed in %.1f s (%s)" % (len(cases) - failed, len(cases), time.time() - t0,
                                                            ", ".join(os.path.basename(f) for f in files)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
