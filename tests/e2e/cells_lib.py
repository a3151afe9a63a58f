"""The attention pane's cells as tmux shows them (capture-pane -p -e):
each screen cell's character, foreground and background colour, read from
the SGR sequences; used by tests/e2e/golden_longnav.sh's check of a redraw
whose zoomed-out cells are bounded in time (pending cells, then the whole
map). Colour 236 is the heat ramp's pending slot (ui/term.c: grey 0x30 in
the 256-colour cube); 250 the masked one."""
import re
import sys

SGR = re.compile(r"\x1b\[([0-9;]*)m")
PENDING = 236


def cells(path):
    """The screen as rows of (char, fg, bg)."""
    out = []
    for line in open(path, encoding="utf-8").read().split("\n"):
        fg = bg = None
        row = []
        pos = 0
        for m in SGR.finditer(line):
            for ch in line[pos:m.start()]:
                row.append((ch, fg, bg))
            pos = m.end()
            f = [int(x) if x else 0 for x in m.group(1).split(";")] if m.group(1) else [0]
            i = 0
            while i < len(f):
                c = f[i]
                if c == 0:
                    fg = bg = None
                elif c in (38, 48) and i + 2 < len(f) and f[i + 1] == 5:
                    if c == 38:
                        fg = f[i + 2]
                    else:
                        bg = f[i + 2]
                    i += 2
                elif c == 39:
                    fg = None
                elif c == 49:
                    bg = None
                elif 30 <= c <= 37 or 90 <= c <= 97:
                    fg = ("sgr", c)
                elif 40 <= c <= 47 or 100 <= c <= 107:
                    bg = ("sgr", c)
                i += 1
        for ch in line[pos:]:
            row.append((ch, fg, bg))
        out.append(row)
    return out


def attn_box(scr):
    """The Attention pane's rows (its box, the title row first)."""
    for y, row in enumerate(scr):
        text = "".join(c[0] for c in row)
        x = text.find("┌ Attention")
        if x < 0:
            continue
        right = text.index("┐", x)
        box = []
        for r in scr[y:]:
            box.append(r[x:right + 1])
            if r[x][0] == "└":
                break
        return box
    sys.exit("no Attention pane on the screen")


def text(row):
    return "".join(c[0] for c in row)


def main():
    part, full, done = (cells(p) for p in sys.argv[1:4])
    bp, bf, bd = attn_box(part), attn_box(full), attn_box(done)
    ok = True
    m = re.search(r"computing (\d+)%", text(bp[0]))
    if not m or not 0 <= int(m.group(1)) < 100:
        print(f"the first screen's title says no progress: {text(bp[0])!r}")
        ok = False
    if "computing" in text(bf[0]) or "computing" in text(bd[0]):
        print("the whole map's title still says computing")
        ok = False
    body = range(1, len(bp) - 2)  # the rows between the title and the value line
    pend = sum(1 for y in body for c in bp[y] if c[0] in "▀▄█ " and PENDING in (c[1], c[2]))
    if pend == 0:
        print("the first screen shows no pending cell: cells left for later drawn as values?")
        ok = False
    if any(PENDING in (c[1], c[2]) for row in bf for c in row):
        print("the unbounded screen shows the pending colour (not distinct from the weights)")
        ok = False
    made_up = 0
    for y in body:
        for x, (cp, cf) in enumerate(zip(bp[y], bf[y])):
            if cp == cf:
                continue
            # a difference only where the part screen is pending (the half cell's fg or bg)
            # (the cursor's glyph takes a colour that stands out from its cell's: any, over a pending one)
            fg_ok = cp[1] == cf[1] or cp[1] == PENDING or (cp[0] == "◆" and cp[2] == PENDING)
            if cp[0] != cf[0] or not fg_ok or (cp[2] != cf[2] and cp[2] != PENDING):
                made_up += 1
                if made_up <= 3:
                    print(f"row {y} col {x}: first screen {cp}, whole map {cf}")
    if made_up:
        print(f"{made_up} cells of the first screen are neither the whole map's nor pending")
        ok = False
    if len(bp) != len(bf):
        print("the boxes differ in height")
        ok = False
    diff = [(y, x) for y in range(max(len(bd), len(bf))) for x in range(max(len(bd[y]) if y < len(bd) else 0,
            len(bf[y]) if y < len(bf) else 0))
            if y >= len(bd) or y >= len(bf) or x >= len(bd[y]) or x >= len(bf[y]) or bd[y][x] != bf[y][x]]
    if diff:
        y, x = diff[0]
        print(f"once idle, the screen differs from the unbounded one in {len(diff)} cells, first at row {y} col {x}")
        print("  done: " + text(bd[y]) + "\n  full: " + text(bf[y]))
        ok = False
    print(f"{'ok' if ok else 'FAIL'}: {pend} pending cells first ({m.group(0) if m else 'no progress'}), "
          f"then the whole map cell for cell")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
