"""The file graph of a directory's objects, from their symbols: `make deps`.

    /usr/bin/python3 tests/deps/graph.py [--table] DIR OBJECT...

A file uses another when its object leaves undefined (nm's U) a symbol the
other's object defines (T, D, B, R, C, V, W, G, S, I: any global
definition). Each object is named by its source file, the first
prerequisite in the .d file the compiler wrote beside it (so the three
builds of src/simd/kernels_simd.c are one file), or else its own path with
.c for .o. The graph of the files of one directory (src/, or ui/, whose
uses of src/ point one way) must have no cycle: a cycle means no file of it
can be understood, tested or moved without the others.

Prints the strongly connected components of more than one file, each with
a few cycles through it (the shortest cycle through each of its files) as a
chain of files, one symbol per edge (with how many more the edge has), so a
maintainer sees which function to move. Where DIR has layers (LAYERS
below: src/), also prints each use of a layer above the user's, and each
file in no layer. Exits 1 on any of them. With --table, prints what each
layer uses as the Markdown table src/ARCHITECTURE.md shows. Needs Python's
standard library and nm (binutils)."""
import collections
import fnmatch
import os
import subprocess
import sys

# The layers of src/, lowest first: a file may use its own layer and those
# below it, never one above (src/ARCHITECTURE.md, "Layers", draws this
# table; a new file is added to its layer here and there). A file is in the
# highest layer one of whose patterns it matches (arch_hf.c: loaders).
LAYERS = {"src": [
    ("base", ["error.c", "file.c", "pool.c", "kernels.c", "simd/*.c", "qdot.c", "quant.c", "weight.c",
              "gguf_read.c", "gguf_write.c", "npy.c", "colormap.c", "image.c"]),
    ("tokenizer", ["tokenizer*.c", "tok_*.c", "vocab*.c"]),
    ("program", ["program*.c"]),
    ("model", ["model*.c", "arch.c", "arch_*.c"]),
    ("loaders", ["gguf_info.c", "hf*.c", "safetensors.c", "arch_hf*.c", "arch_llama2c.c", "model_open.c"]),
    ("interp", ["interp*.c", "attention*.c", "capture*.c", "sampler.c"]),
    ("instruments", ["instruments*.c"]),
    ("figure", ["figure*.c", "fig_*.c"]),
    ("session", ["session*.c", "cmd_*.c", "export*.c"]),
]}

def source_of(obj):
    """The source file an object was compiled from (its .d file's first prerequisite)."""
    d = obj[:-2] + ".d"
    try:
        with open(d, encoding="utf-8") as f:
            words = f.read().replace("\\\n", " ").split()
        if len(words) > 1 and words[0].endswith(":"):
            return os.path.normpath(words[1])
    except OSError:
        pass
    return obj[:-2] + ".c"


def symbols(objs):
    out = subprocess.run(["nm", "-A"] + objs, check=True, capture_output=True, text=True).stdout
    defs, uses = {}, collections.defaultdict(set)
    for line in out.splitlines():
        head, _, rest = line.rpartition(":")
        if not head:
            continue
        parts = rest.split()
        if len(parts) == 2 and parts[0] in "Uwv":
            uses[head].add(parts[1])
        elif len(parts) == 3 and (parts[1].isupper() and parts[1] != "U" or parts[1] == "u"):
            defs.setdefault(parts[2], set()).add(head)
    return defs, uses


def graph(objs):
    """{file: {file: sorted symbols}} of the files of these objects."""
    name = {o: source_of(o) for o in objs}
    defs, uses = symbols(objs)
    g = {f: collections.defaultdict(set) for f in name.values()}
    for o, syms in uses.items():
        for s in syms:
            for d in defs.get(s, ()):
                if name[d] != name[o]:
                    g[name[o]][name[d]].add(s)
    return {f: {t: sorted(s) for t, s in e.items()} for f, e in g.items()}


def components(g):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = n
        n += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = n
                    n += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    c = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        c.append(w)
                        if w == v:
                            break
                    out.append(sorted(c))
    return out


def shortest_cycle(g, comp, v):
    """The shortest cycle from v back to v within comp (breadth first, sorted ties)."""
    inside = set(comp)
    prev, queue = {v: None}, collections.deque([v])
    while queue:
        u = queue.popleft()
        for w in sorted(g[u]):
            if w not in inside:
                continue
            if w == v:
                path = [u]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [v]
            if w not in prev:
                prev[w] = u
                queue.append(w)
    return None


def short(f, base):
    return os.path.relpath(f, base) if base else f


def chain(g, cyc, base):
    out = short(cyc[0], base)
    for a, b in zip(cyc, cyc[1:]):
        syms = g[a][b]
        more = " +%d" % (len(syms) - 1) if len(syms) > 1 else ""
        out += " -[%s%s]-> %s" % (syms[0], more, short(b, base))
    return out


def cycles(g, comp):
    seen, out = set(), []
    for v in comp:
        c = shortest_cycle(g, comp, v)
        ring = c[:-1]
        i = ring.index(min(ring))
        key = tuple(ring[i:] + ring[:i])
        if key not in seen:
            seen.add(key)
            out.append(list(key) + [key[0]])
    return sorted(out, key=lambda c: (len(c), c))


def layer_of(layers, f, base):
    rel = short(f, base)
    for i in reversed(range(len(layers))):
        if any(fnmatch.fnmatchcase(rel, p) for p in layers[i][1]):
            return i
    return None


def check_layers(g, layers, base, table):
    """Each use of a layer above, printed with its symbol; with table, what each layer uses."""
    ok = True
    where = {f: layer_of(layers, f, base) for f in g}
    unknown = sorted(short(f, base) for f in g if where[f] is None)
    if unknown:
        print("deps: %s/: files in no layer (add them to tests/deps/graph.py's LAYERS and src/ARCHITECTURE.md's): %s"
              % (base, " ".join(unknown)))
        ok = False
    rows, up = [], []
    for i, (lname, _) in enumerate(layers):
        files = sorted(short(f, base) for f in g if where[f] == i)
        used = set()
        for f in g:
            if where[f] != i:
                continue
            for t, syms in sorted(g[f].items()):
                j = where[t]
                if j is None or j == i:
                    continue
                used.add(j)
                if j > i:
                    up.append("%s -[%s]-> %s (%s uses %s, above it)"
                              % (short(f, base), syms[0], short(t, base), lname, layers[j][0]))
        rows.append("| %s | %s | %s |" % (lname, " ".join("`%s`" % f for f in files),
                                          ", ".join(layers[j][0] for j in sorted(used)) or "-"))
    if table:
        print("| layer (lowest first) | files | uses |")
        print("|---|---|---|")
        print("\n".join(rows))
    for u in up:
        print("deps: %s/: LAYER: %s" % (base, u))
    return ok and not up


def main(argv):
    table = "--table" in argv
    argv = [a for a in argv if a != "--table"]
    if len(argv) < 2:
        print(__doc__.split("\n\n")[1])
        return 2
    base, objs = argv[0].rstrip("/"), argv[1:]
    g = graph(objs)
    comps = [c for c in components(g) if len(c) > 1]
    edges = sum(len(e) for e in g.values())
    for c in sorted(comps, key=lambda c: (-len(c), c)):
        print("deps: %s/: CYCLE among %d files: %s" % (base, len(c), " ".join(short(f, base) for f in c)))
        for cyc in cycles(g, c):
            print("    " + chain(g, cyc, base))
    layered = check_layers(g, LAYERS[base], base, table) if base in LAYERS else True
    if comps or not layered:
        print("deps: %s/: FAILED: %d cycle(s) among %d files%s; %d files, %d uses between them" %
              (base, len(comps), sum(len(c) for c in comps), "" if layered else ", uses against the layers",
               len(g), edges))
        return 1
    print("deps: %s/: no cycle among %d files (%d uses between them)%s" %
          (base, len(g), edges, ", each within its layer or below" if base in LAYERS else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
