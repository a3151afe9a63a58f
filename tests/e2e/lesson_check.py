"""Checks one lesson step's screen (tests/e2e/lessons.sh): the step's
`view dump` text and `view dump-layout` file against the lesson file.

    lesson_check.py LESSON.txt STEP SCREEN.txt LAYOUT [PANE]

STEP counts from 1. With PANE (a pane's name: a key naming it was pressed),
checks only that it has the focus and that the box is clear of it.
Asserts, printing each failure on a line of its own:
  (a) the step's text is in the box whole: its words, in order, are the
      words of the box's inner lines (no word cut or ended in …, none left
      out, no error line);
  (b) the box's top border holds the lesson's title whole (or the title's
      words open the box when the border is too short for it), and its
      bottom border the step's number STEP/STEPS and the keys;
  (c) the box overlaps neither the focused pane (the pane the step is
      about: its last `view PANE`, which must then have the focus), nor a
      pane on screen that the text talks about ("the predictions pane",
      "the heatmap"; unless the sentence gives its key, which is pressed), nor
      the token strip, the status line or the command line; the box's
      corners are on the screen where the layout says (the layout file
      agrees with the screen).
Exit status 0 when all hold.
"""
import sys

PANES = {"attention", "tokens", "probs", "lens", "norms", "output", "routing", "math", "positions", "mlp",
         "residual", "mla"}
ALIASES = {"attn": "attention", "strip": "tokens", "next": "probs", "logit-lens": "lens", "layernorm": "norms",
           "log": "output", "experts": "routing", "arithmetic": "math", "pos": "positions",
           "activations": "mlp", "resid": "residual", "latent": "mla"}


def parse_lesson(path):
    """title, [(commands, text)] as ui/lesson.c reads them."""
    title, steps, cur, para, header = None, [], None, False, True
    for raw in open(path, encoding="utf-8").read().split("\n"):
        line = raw.strip()
        if line.startswith("#"):
            continue
        if line == "---":
            header, para = False, False
            cur = {"cmds": [], "text": ""}
            steps.append(cur)
            continue
        if header and (line.startswith("title:") or line.startswith("model:")):
            if line.startswith("title:"):
                title = line[6:].strip()
            continue
        if not line and cur is None:
            continue
        header = False
        if cur is None:
            cur = {"cmds": [], "text": ""}
            steps.append(cur)
        if line.startswith(":"):
            cur["cmds"].append(line[1:].strip())
        elif not line:
            para = False
        else:
            if cur["text"]:
                cur["text"] += " " if para else "\n"
            cur["text"] += line
            para = True
    steps = [s for s in steps if s["text"] or s["cmds"]]
    return title, steps


def named_pane(cmds):
    """The pane the step's last `view PANE` names, or None."""
    pane = None
    for c in cmds:
        w = c.split()
        if len(w) == 2 and w[0] == "view":
            name = ALIASES.get(w[1], w[1])
            if name in PANES:
                pane = name
    return pane


# What a step's sentences call the panes.
PROSE = {"predictions pane": "probs", "next token pane": "probs", "norms pane": "norms", "output pane": "output",
         "lens pane": "lens", "heatmap": "attention", "image pane": "image", "routing pane": "routing",
         "classes pane": "probs", "math pane": "math", "positions pane": "positions", "mlp pane": "mlp",
         "residual pane": "residual", "mla pane": "mla"}


def prose_panes(text):
    """The panes the text's sentences talk about, except where a sentence
    gives the key that shows the pane (that key is pressed instead)."""
    import re
    found = set()
    for sentence in re.split(r"(?<=[.:;!?])\s+", text.replace("\n", " ")):
        low = sentence.lower()
        if re.search(r"\bkeys? [0-9a-zA-Z]\b", low):
            continue
        for phrase, pane in PROSE.items():
            if phrase in low:
                found.add(pane)
    return found


def overlap(a, b):
    ay, ax, ah, aw = a
    by, bx, bh, bw = b
    return ay < by + bh and by < ay + ah and ax < bx + bw and bx < ax + aw


def main():
    lesson_path, step, screen_path, layout_path = sys.argv[1:5]
    pressed = sys.argv[5] if len(sys.argv) > 5 else None
    step = int(step)
    title, steps = parse_lesson(lesson_path)
    st = steps[step - 1]
    errors = []
    lay = {"panes": {}}
    for line in open(layout_path, encoding="utf-8"):
        w = line.split()
        if not w or w[0] == "#":
            continue
        if w[0] == "focus":
            lay["focus"] = w[1]
        elif w[0] == "pane":
            lay["panes"][w[1]] = tuple(int(x) for x in w[2:6])
        elif w[0] == "lesson":
            lay["box"] = tuple(int(x) for x in w[1:5])
            lay["count"] = w[5]
    if "box" not in lay:
        print(f"step {step}: no lesson box on screen")
        return 1
    box = lay["box"]
    focus = lay["focus"]
    want = pressed or named_pane(st["cmds"])
    if want and focus != want:
        errors.append(f"the focus is {focus}, not the {want} pane the step names")
    f = lay["panes"].get(focus)
    if f and overlap(box, f):
        errors.append(f"the box {box} covers the focused {focus} pane {f}")
    for p in sorted(prose_panes(st["text"])) if not pressed else []:
        if p in lay["panes"] and overlap(box, lay["panes"][p]):
            errors.append(f"the box {box} covers the {p} pane {lay['panes'][p]} that the step's text talks about")
    for p in ("tokens", "status", "command"):
        if p in lay["panes"] and overlap(box, lay["panes"][p]):
            errors.append(f"the box {box} covers the {p} line(s)")
    if pressed:
        for e in errors:
            print(f"step {step}, key for {pressed}: {e}")
        return 1 if errors else 0
    lines = open(screen_path, encoding="utf-8").read().split("\n")
    y, x, h, w = box
    rows = [(lines[r] if r < len(lines) else "").ljust(x + w) for r in range(y, y + h)]
    if rows[0][x] != "┌" or rows[0][x + w - 1] != "┐" or rows[-1][x] != "└" or rows[-1][x + w - 1] != "┘":
        errors.append(f"the box's corners are not where the layout says {box}: {rows[0][x:x + w]!r}")
    top, bottom = rows[0][x:x + w], rows[-1][x:x + w]
    inner = [r[x + 1:x + w - 1] for r in rows[1:-1]]
    words = " ".join(inner).split()
    tw = title.split()
    if f" {title} " in top:
        pass
    elif words[:len(tw)] == tw:
        words = words[len(tw):]
    else:
        errors.append(f"the title {title!r} is neither whole in the top border {top!r} nor opens the box")
    count = f" {step}/{len(steps)} "
    if count not in bottom:
        errors.append(f"the bottom border {bottom!r} lacks the step's number{count}")
    last = step == len(steps)
    if not any(k in bottom for k in ([" Space or Esc ends", " Space/Esc end"] if last else [" Space next", " Space "])):
        errors.append(f"the bottom border {bottom!r} lacks the keys")
    text_words = st["text"].split()
    if words != text_words:
        n = 0
        while n < min(len(words), len(text_words)) and words[n] == text_words[n]:
            n += 1
        errors.append(f"the box's words differ from the step's text at word {n}: "
                      f"box {' '.join(words[n:n + 6])!r}, text {' '.join(text_words[n:n + 6])!r}")
    for e in errors:
        print(f"step {step}: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
