/* fuser: the `segment` pass.
 *
 * Partitions each fusion's compute ops into segments that one scheduler kind
 * (pointwise, transpose, reduction, persistent, resize) can each compile into
 * one kernel, and writes them into the IR as `segment @gN kind (...) -> (...)
 * { ... }` regions.  INPUT and OUTPUT ops and host ops (op->host, set by
 * strip-bookend-views) stay outside every segment; pure views left over with
 * no kernel work become host ops.
 *
 * The algorithm (docs/passes.md, section "segment"): (1) one segment if a
 * scheduler accepts every compute op at once; otherwise (2) start from one
 * group per op and merge producer->consumer pairs greedily, largest removed
 * global-memory traffic first, when a scheduler accepts the union and the
 * group graph stays acyclic; (3) merge what remains in topological order,
 * then horizontally (independent groups a scheduler accepts together);
 * (4) view-only groups become host ops.  Deterministic; near-linear in the
 * number of ops.  Running it on segmented IR changes nothing.
 *
 * With --debug=segment it explains every merge it tried, naming the ops, and
 * each scheduler's reason for each rejection. */
#ifndef FUSER_SEGMENT_H
#define FUSER_SEGMENT_H

#include <stdint.h>
#include <stdio.h>

#include "fuser/diag.h"
#include "fuser/ir.h"
#include "fuser/pass.h"

/* The registry entry: name "segment", option `dot=FILE`. */
extern const fu_pass_def fu_pass_segment;
fu_status fu_pass_run_segment(fu_module *m, fu_pass_context *ctx);

/* What one run did, for tools, tests and the benchmark. */
typedef struct fu_segment_stats {
  uint32_t n_compute_ops;   /* ops considered (not input, output or host) */
  uint32_t n_segments;      /* kernel segments created */
  uint32_t n_host_ops;      /* ops turned into host ops by step 4 */
  uint32_t n_merges_tried;  /* merge attempts (steps 2 and 3) */
  uint32_t n_merges_done;   /* merges accepted */
  uint32_t n_cycle_rejects; /* merges a scheduler accepted but that would form a cycle */
  bool whole_fusion;        /* step 1 accepted every compute op as one segment */
  bool already_segmented;   /* the fusion had segments and nothing left to place */
} fu_segment_stats;

/* Segment one fusion in place.  `debug` (may be NULL) receives the
 * explanation that --debug=segment prints; `stats` may be NULL.  Errors
 * (out of memory, malformed IR) go to `diag` with a non-zero status; the
 * fusion is then left unchanged. */
fu_status fu_segment_fusion(fu_fusion *f, fu_diag_engine *diag, FILE *debug, fu_segment_stats *stats);
/* The same with switched-off features (NULL: none): a kind in
 * features->kinds_off is never chosen (the next kind that accepts is), and
 * FU_FEATURE_HORIZONTAL off leaves out the horizontal merges of step 3. */
fu_status fu_segment_fusion_with(fu_fusion *f, fu_diag_engine *diag, FILE *debug, const fu_feature_set *features,
                                 fu_segment_stats *stats);

/* Write a Graphviz digraph of the fusion's segments: one node per segment
 * (name, kind, op count), per host op, per input and per output op, and one
 * edge per producer/consumer pair labelled with the values crossing it.
 * Works on any fusion (unsegmented compute ops appear as plain nodes).
 * FU_ERR_IO when writing fails. */
fu_status fu_segment_write_dot(fu_fusion *f, FILE *out);

/* A new module holding one fusion: the ops of segment `segment_name` (with
 * or without the leading '@', searched in every fusion of m) as a standalone
 * fusion named `<fusion>_<segment>`.  The segment's inputs become INPUT ops
 * with the same names and types (a value that was a fusion input keeps its
 * layout and example attributes; any other becomes a contiguous input with
 * example=randn and the example shape bound from the original inputs), its
 * outputs an OUTPUT op.  Symbols are re-interned in the new module; op
 * locations still point into m's source.  FU_ERR_INVALID_ARG with a
 * diagnostic when no such segment exists. */
fu_status fu_segment_extract(fu_module *m, const char *segment_name, fu_allocator alloc,
                             fu_diag_engine *diag, fu_module **out);

#endif
