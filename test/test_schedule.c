/* Tests of device descriptions, schedules as text, the schedule verifier
 * and the pointwise scheduler. */
#include <stdio.h>
#include <string.h>

#include "fuser/bookend.h"
#include "fuser/device.h"
#include "fuser/lower.h"
#include "fuser/parse.h"
#include "fuser/print.h"
#include "fuser/schedule.h"
#include "fuser/segment.h"
#include "fuser/verify.h"
#include "diag_capture.h"
#include "harness.h"

/* ---- devices -------------------------------------------------------------- */

static void test_presets(void) {
  fu_device d;
  CHECK(fu_device_preset("h100", &d));
  CHECK_EQ_INT(d.sm, 90);
  CHECK_EQ_INT(d.n_sms, 132);
  CHECK_EQ_INT(d.l2_bytes, 50ull * 1024 * 1024);
  CHECK_NEAR(d.mem_bandwidth_gbs, 3350.0, 1e-9);
  CHECK_EQ_INT(d.mem_bytes, 80ull << 30);
  CHECK(fu_device_preset("h200", &d));
  CHECK_EQ_INT(d.mem_bytes, 141ull << 30);
  CHECK_EQ_INT(d.n_sms, 132);
  CHECK_EQ_INT(d.l2_bytes, 60ull * 1024 * 1024);
  CHECK_NEAR(d.mem_bandwidth_gbs, 4800.0, 1e-9);
  CHECK(fu_device_preset("sm_80", &d));
  CHECK_EQ_INT(d.sm, 80);
  char arch[16];
  fu_device_arch(&d, arch, sizeof arch);
  CHECK_STR(arch, "sm_80");
  /* the one reading of architecture names (verifier, targets) */
  CHECK_EQ_INT(fu_arch_sm(arch), 80);
  CHECK_EQ_INT(fu_arch_sm("sm_90a"), 90);
  CHECK_EQ_INT(fu_arch_sm("sm_100f"), 100);
  CHECK_EQ_INT(fu_arch_sm("sm_9"), 0);
  CHECK_EQ_INT(fu_arch_sm("sm_1000"), 0);
  CHECK_EQ_INT(fu_arch_sm("sm_90b"), 0);
  CHECK_EQ_INT(fu_arch_sm("sm_90af"), 0);
  CHECK_EQ_INT(fu_arch_sm("compute_90"), 0);
  CHECK_EQ_INT(fu_arch_sm(NULL), 0);
  CHECK(!fu_device_preset("h900", &d));
  fu_device def = fu_device_default();
  CHECK_STR(def.name, "h100");
  CHECK(fu_device_valid(&def, NULL));
}

static void test_device_file(void) {
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  const char *text = "# comment\n"
                     "base = h200\n"
                     "name = lab-gpu   # trailing comment\n"
                     "sms = 114\n"
                     "sm = sm_90\n"
                     "l2_mb = 25\n"
                     "mem_bandwidth_tbs = 2.0\n"
                     "mem_gib = 24\n";
  fu_source src = {"dev.txt", text, strlen(text), 1};
  fu_device d;
  CHECK_EQ_INT(fu_device_parse(&src, &d, &diag), FU_OK);
  CHECK_STR(d.name, "lab-gpu");
  CHECK_EQ_INT(d.n_sms, 114);
  CHECK_EQ_INT(d.sm, 90);
  CHECK_EQ_INT(d.l2_bytes, 25ull * 1024 * 1024);
  CHECK_NEAR(d.mem_bandwidth_gbs, 2000.0, 1e-9);
  CHECK_EQ_INT(d.mem_bytes, 24ull << 30);
  CHECK_EQ_INT(d.max_threads_per_sm, 2048); /* from the base */
  /* printing gives a file that parses to the same device */
  fu_strbuf sb;
  fu_strbuf_init(&sb, fu_default_allocator());
  fu_device_print(&sb, &d);
  fu_source src2 = {"dev2.txt", sb.data, sb.len, 1};
  fu_device d2;
  CHECK_EQ_INT(fu_device_parse(&src2, &d2, &diag), FU_OK);
  CHECK(memcmp(&d, &d2, sizeof d) == 0);
  fu_strbuf_free(&sb);
  /* errors are located, one per problem */
  const char *bad = "sms = 12x\n"
                    "sms = 3\n"
                    "speed = 9\n"
                    "base = h100\n"
                    "just words\n";
  fu_source src3 = {"bad.txt", bad, strlen(bad), 1};
  CHECK_EQ_INT(fu_device_parse(&src3, &d, &diag), FU_ERR_PARSE);
  CHECK(strstr(cap.text, "1:7: error: 'sms' must be a positive integer below 2^32") != NULL);
  CHECK(strstr(cap.text, "3:1: error: unknown device key 'speed'") != NULL);
  CHECK(strstr(cap.text, "4:1: error: 'base' must come before every other key") != NULL);
  CHECK(strstr(cap.text, "5:1: error: expected 'key = value'") != NULL);
  /* a spec that is neither a preset nor a file */
  CHECK_EQ_INT(fu_device_from_spec("no-such-gpu", fu_default_allocator(), &d, &diag), FU_ERR_INVALID_ARG);
  CHECK(strstr(cap.text, "unknown device 'no-such-gpu'") != NULL);
  CHECK_EQ_INT(fu_device_from_spec("sm_90", fu_default_allocator(), &d, &diag), FU_OK);
}

/* ---- schedules as text ----------------------------------------------------- */

static fu_module *parse(const char *text, fu_diag_engine *diag, fu_source *src) {
  src->name = "s.fir";
  src->text = text;
  src->len = strlen(text);
  src->first_line = 1;
  fu_module *m = NULL;
  if (fu_parse_module(src, fu_default_allocator(), diag, &m) != FU_OK) return NULL;
  return m;
}

static fu_op *segment_of(fu_module *m) {
  for (fu_op *op = m->first->body.first; op; op = op->next)
    if (op->kind == FU_OP_SEGMENT) return op;
  return NULL;
}

static const char *hand = "fusion @f {\n"
                          "  %T0 = input f32[N, 1024]\n"
                          "  segment @g0 pointwise (%T0) -> (%T2) {\n"
                          "    %T1 = exp %T0 : f32[N, 1024]\n"
                          "    %T2 = mul %T1, %T0 : f32[N, 1024]\n"
                          "    schedule {device=h200, arch=sm_90, index=i64} {\n"
                          "      reference %T2 [r, c]\n"
                          "      split c, 4 -> c1, v {tail=exact}\n"
                          "      split c1, 128 -> bx, tx {tail=exact}\n"
                          "      loop [r: blockIdx.y, bx: blockIdx.x, tx: threadIdx.x, v: vectorize]\n"
                          "      tensor %T1 {memory=local, inline=4}\n"
                          "    }\n"
                          "  }\n"
                          "  output %T2\n"
                          "}\n";

static void test_text_roundtrip(void) {
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  fu_source src;
  fu_module *m = parse(hand, &diag, &src);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s", cap.text);
    return;
  }
  fu_op *seg = segment_of(m);
  const fu_schedule *s = seg->u.segment.schedule;
  CHECK(s != NULL);
  if (!s) return;
  CHECK_STR(s->device, "h200");
  CHECK_STR(s->arch, "sm_90");
  CHECK_EQ_INT(s->index_dtype, FU_DT_I64);
  CHECK_EQ_INT(s->n_axes, 6);
  CHECK_EQ_INT(s->n_xforms, 2);
  CHECK_EQ_INT(s->n_loops, 4);
  CHECK_EQ_INT(s->loops[0].ptype, FU_PT_BLOCK_Y);
  CHECK_EQ_INT(s->loops[3].ptype, FU_PT_VECTORIZE);
  CHECK_EQ_INT(s->xforms[0].factor, 4);
  CHECK_EQ_INT(s->xforms[0].tail, FU_TAIL_EXACT);
  CHECK_EQ_INT(fu_schedule_axis(s, "tx"), 5);
  CHECK_EQ_INT(fu_schedule_loop_of(s, FU_PT_THREAD_X), 2);
  const fu_stensor *t = fu_schedule_tensor(s, seg->u.segment.body->first->results[0]);
  CHECK(t && t->memory == FU_MEM_LOCAL && t->inline_pos == 4);
  CHECK_EQ_INT(fu_schedule_verify(m->first, seg, s, &diag), FU_OK);
  /* printed inside the segment, after the ops; parses to the same text */
  fu_strbuf a, b;
  fu_strbuf_init(&a, fu_default_allocator());
  fu_strbuf_init(&b, fu_default_allocator());
  fu_print_module(&a, m, NULL);
  CHECK(strstr(a.data, "    %T2 = mul %T1, %T0 : f32[N, 1024]\n"
                       "    schedule {device=h200, arch=sm_90, index=i64} {\n"
                       "      reference %T2 [r, c]\n") != NULL);
  fu_source src2;
  fu_module *m2 = parse(a.data, &diag, &src2);
  CHECK(m2 != NULL);
  if (m2) {
    fu_print_module(&b, m2, NULL);
    CHECK_STR(b.data, a.data);
    fu_module_free(m2);
  }
  /* retargeting changes the device and the architecture only */
  fu_device d80;
  fu_device_preset("sm_80", &d80);
  CHECK_EQ_INT(fu_schedule_retarget(m, &d80), FU_OK);
  CHECK_STR(s->arch, "sm_80");
  CHECK_STR(s->device, "sm_80");
  fu_strbuf_free(&a);
  fu_strbuf_free(&b);
  fu_module_free(m);
}

static void test_parse_errors(void) {
  static const struct {
    const char *sched;
    const char *want;
  } cases[] = {
      {"schedule { reference %T1 [n] loop [n: warp] }", "unknown parallel type 'warp'"},
      {"schedule { reference %T1 [n] loop [q: serial] }", "unknown axis 'q'"},
      {"schedule { reference %T1 [n] split n, 0 -> a, b loop [a: serial, b: serial] }",
       "split factor must be positive, got 0"},
      {"schedule { reference %T9 [n] loop [n: serial] }", "use of undefined value '%T9'"},
      {"schedule { loop [] }", "'loop' before 'reference'"},
      {"schedule { reference %T1 [n] loop [n: serial] frob }",
       "expected 'reference', 'merge', 'split', 'loop', 'tensor' or '}', got identifier 'frob'"},
      {"schedule { reference %T1 [n] loop [n: serial] tensor %T1 {memory=texture} }", "unknown memory space 'texture'"},
      {"schedule { reference %T1 [n] loop [n: serial] tensor %T1 {access=wide} }", "unknown access mode 'wide'"},
      {"schedule {index=i16} { reference %T1 [n] loop [n: serial] }", "attribute 'index' must be i32 or i64"},
      {"schedule { reference %T1 [n] loop [n: serial] tensor %T0 {memory=global} tensor %T0 {memory=global} }",
       "tensor '%T0' is listed twice"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "fusion @f {\n  %%T0 = input f32[64]\n  segment @g0 pointwise (%%T0) -> (%%T1) {\n"
             "    %%T1 = neg %%T0 : f32[64]\n    %s\n  }\n  output %%T1\n}\n",
             cases[i].sched);
    capture cap;
    fu_diag_engine diag;
    diag_capture(&diag, &cap);
    fu_source src;
    fu_module *m = parse(text, &diag, &src);
    CHECK(m == NULL);
    if (m) fu_module_free(m);
    if (!strstr(cap.text, cases[i].want))
      fu_test_fail(__FILE__, __LINE__, "case %zu: want '%s' in:\n%s", i, cases[i].want, cap.text);
    fu_test_checks++;
    /* every error is located on line 5, the schedule's */
    CHECK(strncmp(cap.text, "5:", 2) == 0);
  }
}

/* ---- the pointwise scheduler --------------------------------------------------- */

static fu_module *scheduled_on(const char *text, const fu_device *d, fu_diag_engine *diag, fu_source *src) {
  fu_module *m = parse(text, diag, src);
  if (!m) return NULL;
  if (fu_verify_module(m, diag) != FU_OK || fu_strip_bookend_views(m, NULL) != FU_OK ||
      fu_segment_fusion(m->first, diag, NULL, NULL) != FU_OK || fu_schedule_module(m, d, diag, NULL) != FU_OK) {
    fu_module_free(m);
    return NULL;
  }
  return m;
}

static fu_module *scheduled(const char *text, const char *device, fu_diag_engine *diag, fu_source *src) {
  fu_device d;
  fu_device_preset(device, &d);
  return scheduled_on(text, &d, diag, src);
}

static const fu_sxform *split_of(const fu_schedule *s, const char *outer) {
  for (uint32_t i = 0; i < s->n_xforms; i++)
    if (s->xforms[i].kind == FU_SX_SPLIT && strcmp(s->axes[s->xforms[i].out[0]].name, outer) == 0) return &s->xforms[i];
  return NULL;
}

static int64_t vector_width(const fu_schedule *s) {
  int32_t l = fu_schedule_loop_of(s, FU_PT_VECTORIZE);
  if (l < 0) return 1;
  for (uint32_t i = 0; i < s->n_xforms; i++)
    if (s->xforms[i].kind == FU_SX_SPLIT && s->xforms[i].out[1] == s->loops[l].axis) return s->xforms[i].factor;
  return -1;
}

static void test_scheduler(void) {
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  fu_source src;
  /* the largest output is the reference; vectors of 16 bytes */
  fu_module *m = scheduled("fusion @f {\n"
                           "  %T0 = input f32[64, 2048]\n"
                           "  %T1 = exp %T0 : f32[64, 2048]\n"
                           "  %T2 = reshape %T1 : f32[131072]\n"
                           "  %T3 = mul %T1, %T1 : f32[64, 2048]\n"
                           "  output %T2, %T3\n"
                           "}\n",
                           "h100", &diag, &src);
  CHECK(m != NULL);
  if (m) {
    const fu_schedule *s = segment_of(m)->u.segment.schedule;
    CHECK(s != NULL);
    if (s) {
      CHECK_EQ_INT(vector_width(s), 4);
      CHECK_EQ_INT(fu_schedule_loop_of(s, FU_PT_BLOCK_Y), -1);
      CHECK_EQ_INT(s->index_dtype, FU_DT_I32);
      CHECK_STR(s->device, "h100");
    }
    fu_module_free(m);
  }
  /* f64 gives vectors of 2; sm_80 target recorded */
  m = scheduled("fusion @f {\n  %T0 = input f64[1000]\n  %T1 = sqrt %T0 : f64[1000]\n  output %T1\n}\n", "sm_80", &diag,
                &src);
  CHECK(m != NULL);
  if (m) {
    const fu_schedule *s = segment_of(m)->u.segment.schedule;
    CHECK_EQ_INT(vector_width(s), 2);
    CHECK_STR(s->arch, "sm_80");
    /* 1000 / 2 = 500 vectors: not a multiple of 128 threads: guarded */
    const fu_sxform *x = split_of(s, "bx");
    CHECK(x && x->tail == FU_TAIL_GUARD);
    fu_module_free(m);
  }
  /* a per-row scale makes a 2-D schedule */
  m = scheduled("fusion @f {\n"
                "  %T0 = input f32[512, 4096]\n"
                "  %T1 = input f32[512, 1]\n"
                "  %T2 = mul %T0, %T1 : f32[512, 4096]\n"
                "  output %T2\n"
                "}\n",
                "h100", &diag, &src);
  CHECK(m != NULL);
  if (m) {
    const fu_schedule *s = segment_of(m)->u.segment.schedule;
    CHECK(fu_schedule_loop_of(s, FU_PT_BLOCK_Y) >= 0);
    /* the scale is the same for every lane: still "vector" (legal) */
    CHECK_EQ_INT(vector_width(s), 4);
    fu_module_free(m);
  }
  /* running the pass again keeps the schedule (hand-written ones too) */
  m = parse(hand, &diag, &src);
  CHECK(m != NULL);
  if (m) {
    const fu_schedule *before = segment_of(m)->u.segment.schedule;
    fu_device d = fu_device_default();
    CHECK_EQ_INT(fu_schedule_module(m, &d, &diag, NULL), FU_OK);
    CHECK(segment_of(m)->u.segment.schedule == before);
    CHECK_STR(before->device, "h200");
    fu_module_free(m);
  }
  if (cap.len) fprintf(stderr, "%s", cap.text);
}

/* Whether the scheduled segment of `text` on device `d` strides along
 * block axis `p`: 1 yes, 0 no (direct), -1 no such axis or no schedule. */
static int strides(const char *text, const fu_device *d, fu_ptype p) {
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  fu_source src;
  fu_module *m = scheduled_on(text, d, &diag, &src);
  int r = -1;
  if (m) {
    const fu_schedule *s = segment_of(m)->u.segment.schedule;
    int32_t l = s ? fu_schedule_loop_of(s, p) : -1;
    if (l >= 0) r = s->loops[l].grid_stride ? 1 : 0;
    fu_module_free(m);
  } else {
    fprintf(stderr, "%s", cap.text);
  }
  return r;
}

/* Block axes stride only where a tensor that fits in the device's memory
 * could give more blocks than a launch may have. */
static void test_grid_binding(void) {
  static const char *flat = "fusion @f {\n"
                            "  %T0 = input f32[A, B, C]\n"
                            "  %T1 = tanh %T0 : f32[A, B, C]\n"
                            "  output %T1\n"
                            "}\n";
  static const char *rows = "fusion @f {\n"
                            "  %T0 = input f32[N, 4096]\n"
                            "  %T1 = input f32[N, 1]\n"
                            "  %T2 = mul %T0, %T1 : f32[N, 4096]\n"
                            "  output %T2\n"
                            "}\n";
  static const char *rows_const = "fusion @f {\n"
                                  "  %T0 = input f32[60000, 4096]\n"
                                  "  %T1 = input f32[60000, 1]\n"
                                  "  %T2 = mul %T0, %T1 : f32[60000, 4096]\n"
                                  "  output %T2\n"
                                  "}\n";
  fu_device h100 = fu_device_default();
  /* symbolic 1-D: 80 GiB of f32 in blocks of 512 elements is 2^25 blocks */
  CHECK_EQ_INT(strides(flat, &h100, FU_PT_BLOCK_X), 0);
  /* symbolic rows on blockIdx.y: N may exceed 65535 within 80 GiB */
  CHECK_EQ_INT(strides(rows, &h100, FU_PT_BLOCK_Y), 1);
  CHECK_EQ_INT(strides(rows, &h100, FU_PT_BLOCK_X), 0);
  /* constant rows under the limit: direct */
  CHECK_EQ_INT(strides(rows_const, &h100, FU_PT_BLOCK_Y), 0);
  /* a device with 200 KB of memory holds at most 50000 f32: N <= 50000 rows */
  fu_device small = h100;
  small.mem_bytes = 200000;
  CHECK_EQ_INT(strides(rows, &small, FU_PT_BLOCK_Y), 0);
  small.mem_bytes = 4 * 65536; /* 65536 f32: as many rows as one more than the limit */
  CHECK_EQ_INT(strides(rows, &small, FU_PT_BLOCK_Y), 1);
  /* a device whose grid is narrower than the 2^31 - 1 of the launch API */
  fu_device narrow = h100;
  narrow.max_grid_x = 1000;
  CHECK_EQ_INT(strides(flat, &narrow, FU_PT_BLOCK_X), 1);
  /* wider elements mean fewer of them in memory */
  fu_device mid = h100;
  mid.mem_bytes = 512ull * 2147483647ull * 2; /* half the limit's blocks of 512 f32 */
  CHECK_EQ_INT(strides(flat, &mid, FU_PT_BLOCK_X), 0);
  static const char *flat16 = "fusion @f {\n"
                              "  %T0 = input f16[A, B, C] {example=randn, example_shape=[4, 4, 4]}\n"
                              "  %T1 = neg %T0 : f16[A, B, C]\n"
                              "  output %T1\n"
                              "}\n";
  /* f16 at small example sizes: vectors of 8, 128-thread blocks of 1024
   * elements; 2^32 f16 elements fit */
  mid.mem_bytes = 1024ull * 2147483648ull * 2 * 2; /* 2^32 blocks of 1024 f16 */
  CHECK_EQ_INT(strides(flat16, &mid, FU_PT_BLOCK_X), 1);
  mid.mem_bytes = 1024ull * 2147483000ull * 2;
  CHECK_EQ_INT(strides(flat16, &mid, FU_PT_BLOCK_X), 0);
}

/* The threads per block of the scheduled segment of `text` (h100), or -1. */
static int64_t block_threads(const char *text) {
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  fu_source src;
  fu_module *m = scheduled(text, "h100", &diag, &src);
  int64_t r = -1;
  const fu_schedule *s = m ? segment_of(m)->u.segment.schedule : NULL;
  int32_t l = s ? fu_schedule_loop_of(s, FU_PT_THREAD_X) : -1;
  for (uint32_t i = 0; l >= 0 && i < s->n_xforms; i++)
    if (s->xforms[i].kind == FU_SX_SPLIT && s->xforms[i].out[1] == s->loops[l].axis) r = s->xforms[i].factor;
  if (!m) fprintf(stderr, "%s", cap.text);
  fu_module_free(m);
  return r;
}

/* 512-thread blocks for 1-D schedules whose grid of them fills the GPU at
 * full occupancy (132 SMs x 4 blocks of 512 x 4 f32 = 1081344 elements on
 * the H100), 128 otherwise and for 2-D schedules. */
static void test_block_size(void) {
  CHECK_EQ_INT(block_threads("fusion @f {\n  %T0 = input f32[8192, 3072]\n  %T1 = exp %T0 : f32[8192, 3072]\n"
                             "  output %T1\n}\n"),
               512);
  CHECK_EQ_INT(block_threads("fusion @f {\n  %T0 = input f32[1081344]\n  %T1 = exp %T0 : f32[1081344]\n"
                             "  output %T1\n}\n"),
               512);
  CHECK_EQ_INT(block_threads("fusion @f {\n  %T0 = input f32[1081340]\n  %T1 = exp %T0 : f32[1081340]\n"
                             "  output %T1\n}\n"),
               128);
  /* symbolic sizes follow the example sizes */
  CHECK_EQ_INT(block_threads("fusion @f {\n  %T0 = input f32[N] {example=randn, example_shape=[1000]}\n"
                             "  %T1 = exp %T0 : f32[N]\n  output %T1\n}\n"),
               128);
  CHECK_EQ_INT(block_threads("fusion @f {\n  %T0 = input f32[N] {example=randn, example_shape=[16777216]}\n"
                             "  %T1 = exp %T0 : f32[N]\n  output %T1\n}\n"),
               512);
  /* a bias along rows makes a 2-D schedule: 128 */
  CHECK_EQ_INT(block_threads("fusion @f {\n  %T0 = input f32[8192, 3072]\n  %T1 = input f32[3072]\n"
                             "  %T2 = broadcast_in_dim %T1 {broadcast_dims=[1]} : f32[8192, 3072]\n"
                             "  %T3 = add %T0, %T2 : f32[8192, 3072]\n  output %T3\n}\n"),
               128);
}

/* The verifier on a schedule built in memory (no locations): errors still
 * name the problem. */
static void test_verify_api(void) {
  capture cap;
  fu_diag_engine diag;
  diag_capture(&diag, &cap);
  fu_source src;
  fu_module *m = parse("fusion @f {\n  %T0 = input f32[64]\n  segment @g0 pointwise (%T0) -> (%T1) {\n"
                       "    %T1 = neg %T0 : f32[64]\n  }\n  output %T1\n}\n",
                       &diag, &src);
  CHECK(m != NULL);
  if (!m) return;
  fu_op *seg = segment_of(m);
  fu_saxis axes[3] = {{"n", 0, -1, fu_loc_none()}, {"o", -1, 0, fu_loc_none()}, {"i", -1, 0, fu_loc_none()}};
  fu_sxform x = {FU_SX_SPLIT, {0, 0}, {1, 2}, 48, FU_TAIL_EXACT, fu_loc_none()};
  fu_sloop loops[2] = {{.axis = 1, .ptype = FU_PT_THREAD_X, .loc = fu_loc_none()},
                      {.axis = 2, .ptype = FU_PT_THREAD_X, .loc = fu_loc_none()}};
  fu_schedule s;
  memset(&s, 0, sizeof s);
  s.reference = seg->u.segment.outputs[0];
  s.axes = axes;
  s.n_axes = 3;
  s.xforms = &x;
  s.n_xforms = 1;
  s.loops = loops;
  s.n_loops = 2;
  CHECK_EQ_INT(fu_schedule_verify(m->first, seg, &s, &diag), FU_ERR_VERIFY);
  CHECK(strstr(cap.text, "two loop axes are bound to threadIdx.x") != NULL);
  loops[1].ptype = FU_PT_SERIAL;
  memset(&cap, 0, sizeof cap);
  CHECK_EQ_INT(fu_schedule_verify(m->first, seg, &s, &diag), FU_ERR_VERIFY);
  CHECK(strstr(cap.text, "split of 'n' by 48 is marked tail=exact, but 48 does not provably divide its extent 64") !=
        NULL);
  x.tail = FU_TAIL_GUARD;
  memset(&cap, 0, sizeof cap);
  CHECK_EQ_INT(fu_schedule_verify(m->first, seg, &s, &diag), FU_OK);
  CHECK_EQ_INT(cap.len, 0);
  fu_module_free(m);
}

/* The kind table: names round-trip, and each kind dispatches to the entry
 * points of its row of kinds.def. */
static void test_kind_table(void) {
  for (int k = 0; k < FU_SK_COUNT; k++) {
    const char *n = fu_sched_kind_name((fu_sched_kind)k);
    fu_sched_kind back = FU_SK_COUNT;
    CHECK(fu_sched_kind_from_name(n, strlen(n), &back));
    CHECK_EQ_INT(back, k);
  }
  fu_sched_kind dummy;
  CHECK(!fu_sched_kind_from_name("point", 5, &dummy));
  CHECK(!fu_sched_kind_from_name("pointwisex", 10, &dummy));
  CHECK_STR(fu_sched_kind_name(FU_SK_COUNT), "?");
  CHECK(fu_schedule_entry(FU_SK_POINTWISE) == fu_schedule_pointwise);
  CHECK(fu_schedule_entry(FU_SK_TRANSPOSE) == fu_schedule_transpose);
  CHECK(fu_schedule_entry(FU_SK_REDUCTION) == fu_schedule_reduction_kind);
  CHECK(fu_schedule_entry(FU_SK_PERSISTENT) == fu_schedule_persistent);
  CHECK(fu_schedule_entry(FU_SK_RESIZE) == fu_schedule_resize);
  CHECK(fu_lower_entry(FU_SK_REDUCTION) == fu_lower_reduction);
  CHECK(fu_schedule_entry(FU_SK_NONE) == NULL);
  CHECK(fu_lower_entry(FU_SK_POINTWISE) == fu_lower_pointwise);
  CHECK(fu_lower_entry(FU_SK_TRANSPOSE) == fu_lower_transpose);
  CHECK(fu_lower_entry(FU_SK_PERSISTENT) == fu_lower_persistent);
  CHECK(fu_lower_entry(FU_SK_RESIZE) == fu_lower_pointwise);
  CHECK(fu_lower_entry(FU_SK_COUNT) == NULL);
}

FU_TEST_MAIN(FU_TEST(test_presets), FU_TEST(test_kind_table), FU_TEST(test_device_file), FU_TEST(test_text_roundtrip), FU_TEST(test_parse_errors),
             FU_TEST(test_scheduler), FU_TEST(test_grid_binding), FU_TEST(test_block_size),
             FU_TEST(test_verify_api))
