/* tour_place: where a lesson step's box goes on a layout, with no
 * terminal. The box never covers the pane the step is about (the focused
 * one: a step's `view PANE`, or the key a teacher pressed), nor the token
 * strip, the status line or the command line. It goes, in this order of
 * preference, to the first place where its text fits whole:
 *   - a wide screen (the side panes stacked right of the heatmap): the
 *     stack's column, below the focused pane (anchored at the bottom),
 *     then above it (anchored under the strip); then, unless the heatmap
 *     is the focused pane, the bottom of the heatmap;
 *   - a small screen (the heatmap over one shared slot): the full width
 *     below the focused pane (the slot, when the heatmap is focused),
 *     then above it (over the heatmap, when the slot's pane is focused);
 *   - a single-pane screen, where nothing is free: the bottom three fifths.
 * Where the text fits nowhere, the place that shows most of it.
 * Unit-tested. */
#ifndef ATTNSCOPE_UI_TOUR_PLACE_H
#define ATTNSCOPE_UI_TOUR_PLACE_H

#include "layout.h"

/* The box on layout l keeping clear of pane `avoid` (P_COUNT: none);
 * need(width, ctx) is the rows (borders included) the box needs at that
 * width. h == 0: no room for a box (under 4 rows or 20 columns). */
rect tour_place(const layout *l, pane_id avoid, int (*need)(int width, void *ctx), void *ctx);

#endif
