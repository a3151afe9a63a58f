#!/usr/bin/python3
"""Print the numbers of a model card from work/NAME.results.json (markdown).

Usage: python3 card.py austen-gpt2 [induction austen-bert ...]
"""
import json
import os
import sys

WORK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "work")


def bert_card(name, r):
    """austen-bert's numbers (export_bert.py's results)."""
    out = ["## %s (numbers)" % name, "",
           "- parameters: %d; file: %d bytes" % (r["params"], r["bytes"]),
           "- training: %d steps, %.1f minutes" % (r["steps"], r["minutes"])]
    for split in ("train", "val"):
        e = r[split]
        out.append("- %s (%d windows, %d masked pieces, float32): loss %.3f, "
                   "top-1 %.1f%%, top-5 %.1f%%" % (split, e["rows"], e["masked"],
                                                  e["loss"], 100 * e["top1"], 100 * e["top5"]))
    f = r["fixture"]
    out.append("- fixture [MASK] (position %d) top 5: %s" % (
        f["mask_position"], ", ".join("%s %.3f" % (t, p) for t, p in f["mask_top5"])))
    out.append("- llama.cpp: %s" % json.dumps(r["llama"], ensure_ascii=False)[:400])
    h = r["heads"]
    kinds = ["cls", "sep", "prev", "next", "self", "pronoun", "pronoun_hits",
             "subject", "subject_hits"]
    out += ["", "| layer.head | " + " | ".join(kinds) + " |",
            "|---" * (len(kinds) + 1) + "|"]
    for layer in range(len(h["cls"])):
        for head in range(len(h["cls"][layer])):
            out.append("| %d.%d | " % (layer, head) + " | ".join(
                "%.3f" % h[k][layer][head] for k in kinds) + " |")
    out += ["", "best: " + json.dumps(h["best"]),
            "uniform: probe %.4f, pronoun items %.4f, subject items %.4f" % (
                h["uniform_probe"], h["uniform_pronoun"], h["uniform_subject"]),
            "", "| step | minutes | train loss | val loss | val top-1 |", "|---|---|---|---|---|"]
    for row in r["curve"]:
        out.append("| %d | %.1f | %.3f | %.3f | %.3f |" % (
            row["step"], row["minutes"], row["train_loss"], row["val_loss"], row["val_top1"]))
    return "\n".join(out)


def card(name):
    with open(os.path.join(WORK, name + ".results.json")) as f:
        r = json.load(f)
    if "heads" in r and "best" in r["heads"]:
        return bert_card(name, r)
    c = r["config"]
    out = ["## %s (numbers)" % name, ""]
    out.append("- config: " + ", ".join("%s=%s" % kv for kv in c.items()))
    out.append("- parameters: %d" % r["params"])
    out.append("- file: %d bytes" % r["gguf_bytes"])
    out.append("- training: %s steps run (checkpoint from step %s), %s minutes, %s"
               % (r.get("steps_run"), r.get("checkpoint_step"),
                  r.get("train_minutes"), r["hardware"]))
    if "val_loss_f32" in r:
        out.append("- tokens seen: %d (%.1f epochs of %d training tokens)"
                   % (r["tokens_seen"], r["epochs"], r["train_tokens"]))
        out.append("- validation loss (float32, all windows): %.4f nats/token"
                   % r["val_loss_f32"])
    out.append("- fixture tokens: %s" % r["fixture_tokens"])
    out += ["", "Sample (prompt %r):" % r["sample_prompt"], "",
            "greedy:", "", "> " + r["sample_greedy"].replace("\n", "\n> "), ""]
    if "sample_t08" in r:
        out += ["temperature 0.8, seed 1234:", "",
                "> " + r["sample_t08"].replace("\n", "\n> "), ""]
    if "sample_correct" in r:
        out += ["copied correctly: %s" % r["sample_correct"], ""]
    out += ["Heads:", "", r["head_table"], "", "Training curve:", "",
            "| stage | step | minutes | train loss | val loss | best prev-token | best induction |",
            "|---|---|---|---|---|---|---|"]
    for row in r["curve"]:
        out.append("| %s | %d | %.1f | %.3f | %s | %.3f | %.3f |" % (
            row.get("stage", 1), row["step"], row["minutes"], row["train_loss"],
            "%.3f" % row["val_loss"] if "val_loss" in row else "-",
            row["max_prev"], row["max_ind"]))
    return "\n".join(out)


if __name__ == "__main__":
    print("\n\n".join(card(n) for n in sys.argv[1:]))
