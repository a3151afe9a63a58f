/* The `export` command: which figure (attn, grid, lines, norms, probs,
 * probs-trace, overlay, routing, load, experts, lens), handed to its kind
 * (export_*.c, and cmd_experts.c's load), which runs the skeleton of
 * export.c. */
#include <string.h>

#include "export_internal.h"

int as_cmd_export(cmd_ctx *c)
{
    static const char usage[] = "usage: export attn LAYER HEAD FILE | export grid LAYER|all FILE | export lines "
                                "LAYER HEAD|all FILE | export norms LAYER|final FILE | export probs FILE | export "
                                "probs-trace FILE | export overlay LAYER HEAD|mean|rollout|all FILE | export routing LAYER FILE | export load FILE | export experts LAYER FILE | export lens FILE | export distance FILE  (FILE .png, .svg "
                                "or .pdf, then key=value options)";
    if (c->argc < 2)
        return as_error_set(c->err, "%s", usage);
    const char *what = c->argv[1];
    if (!strcmp(what, "attn"))
        return as_export_attn(c);
    if (!strcmp(what, "grid"))
        return as_export_grid(c);
    if (!strcmp(what, "lines"))
        return as_export_lines(c);
    if (!strcmp(what, "norms"))
        return as_export_norms(c);
    if (!strcmp(what, "probs"))
        return as_export_probs(c);
    if (!strcmp(what, "probs-trace"))
        return as_export_probs_trace(c);
    if (!strcmp(what, "overlay"))
        return as_cmd_export_overlay(c);
    if (!strcmp(what, "load"))
        return as_cmd_export_load(c);
    if (!strcmp(what, "routing"))
        return as_export_routing(c);
    if (!strcmp(what, "experts"))
        return as_export_experts(c);
    if (!strcmp(what, "lens"))
        return as_export_lens(c);
    if (!strcmp(what, "distance"))
        return as_cmd_export_distance(c);
    return as_error_set(c->err, "export: unknown figure '%s' (attn, grid, lines, norms, probs, probs-trace, overlay, "
                        "routing, load, experts, lens, distance)",
                        what);
}
