/* fuser: random numbers (uniform, normal), the interpreter's definition.
 *
 * Counter-based Philox4x32-10, as PyTorch's CUDA generator and nvFuser use
 * it: the 64-bit seed is the key, the counter is (offset, subsequence) with
 * the offset in its low 64 bits.  Element i of a random tensor (i its
 * linear logical index, row-major over the logical shape) takes
 *
 *   f32, f16, bf16:  r = philox(seed, i / 4, offset), word i % 4
 *   f64:             r = philox(seed, i / 2, offset), words 2(i % 2), +1
 *
 * and maps the words to a uniform in (0, 1] (1 is mapped to 0) or, for
 * normal, a Box-Muller pair (an even i takes the sine, an odd i the
 * cosine).  The value of an element depends on nothing but (seed, offset,
 * i, dtype, parameters), so no schedule changes it; the GPU backends
 * compute the same steps (docs/ir.md, "Random numbers"). */
#ifndef FUSER_RNG_H
#define FUSER_RNG_H

#include <stdint.h>

#include "fuser/ir.h"

/* Philox4x32-10's multipliers and key increments (the Weyl sequence). */
#define FU_RNG_PHILOX_M0 0xD2511F53u
#define FU_RNG_PHILOX_M1 0xCD9E8D57u
#define FU_RNG_PHILOX_W0 0x9E3779B9u
#define FU_RNG_PHILOX_W1 0xBB67AE85u

/* Philox4x32-10 of counter (ctr[0..3]) under key (key[0], key[1]). */
void fu_rng_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* The four words for (seed, subsequence, offset): counter = (offset lo,
 * offset hi, subsequence lo, subsequence hi), key = (seed lo, seed hi). */
void fu_rng_philox(uint64_t seed, uint64_t subsequence, uint64_t offset, uint32_t out[4]);

/* How many elements share one Philox call: 2 for f64, else 4. */
uint32_t fu_rng_per_call(fu_dtype dt);

/* Element `index` of `kind` (FU_OP_UNIFORM or FU_OP_NORMAL) of dtype `dt`
 * with parameters (a, b) = (minval, maxval) or (mean, std): the exact
 * value the element holds (for f32, f16 and bf16 a value of that dtype,
 * widened).  The parameters are rounded to f32 first unless `dt` is f64. */
double fu_rng_value(fu_op_kind kind, fu_dtype dt, double a, double b, uint64_t seed, uint64_t offset,
                    uint64_t index);

/* The uniform in (0, 1] of one 32-bit word, in f32 (x * 2^-32 + 2^-33),
 * and of two words in f64 ((x ^ (y << 21)) * 2^-53 + 2^-54): the "raw"
 * values before 1 is mapped to 0. */
float fu_rng_raw_uniform_f32(uint32_t x);
double fu_rng_raw_uniform_f64(uint32_t x, uint32_t y);

#endif
