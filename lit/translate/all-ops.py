# RUN: fuser-translate --from=nvfuser-py %s | FileCheck %s
# RUN: fuser-translate --from=nvfuser-py %s -o %t.fir
# RUN: fuser-translate --to=nvfuser-py %t.fir -o %t.py
# RUN: fuser-translate --from=nvfuser-py %t.py -o %t2.fir
# RUN: diff %t.fir %t2.fir
# Every op of include/fuser/ops.def through its fd.ops name, imported and
# exported again.
from nvfuser import FusionDefinition, DataType

def all_ops(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, 8], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, 8], contiguity=[True, True], dtype=DataType.Int32)
    S2 = fd.define_scalar(None, dtype=DataType.Int)
    U_abs = fd.ops.abs(T0)
    U_neg = fd.ops.neg(T0)
    U_exp = fd.ops.exp(T0)
    U_exp2 = fd.ops.exp2(T0)
    U_expm1 = fd.ops.expm1(T0)
    U_log = fd.ops.log(T0)
    U_log2 = fd.ops.log2(T0)
    U_log10 = fd.ops.log10(T0)
    U_log1p = fd.ops.log1p(T0)
    U_sqrt = fd.ops.sqrt(T0)
    U_rsqrt = fd.ops.rsqrt(T0)
    U_reciprocal = fd.ops.reciprocal(T0)
    U_sin = fd.ops.sin(T0)
    U_cos = fd.ops.cos(T0)
    U_tan = fd.ops.tan(T0)
    U_tanh = fd.ops.tanh(T0)
    U_sinh = fd.ops.sinh(T0)
    U_cosh = fd.ops.cosh(T0)
    U_asin = fd.ops.asin(T0)
    U_acos = fd.ops.acos(T0)
    U_atan = fd.ops.atan(T0)
    U_erf = fd.ops.erf(T0)
    U_erfc = fd.ops.erfc(T0)
    U_sigmoid = fd.ops.sigmoid(T0)
    U_silu = fd.ops.silu(T0)
    U_relu = fd.ops.relu(T0)
    U_floor = fd.ops.floor(T0)
    U_ceil = fd.ops.ceil(T0)
    U_round = fd.ops.round(T0)
    U_trunc = fd.ops.trunc(T0)
    U_sign = fd.ops.sign(T0)
    U_logical_not = fd.ops.logical_not(T0)
    U_isnan = fd.ops.isnan(T0)
    U_isinf = fd.ops.isinf(T0)
    U_isfinite = fd.ops.isfinite(T0)
    U_set = fd.ops.set(T0)
    U_bitwise_not = fd.ops.bitwise_not(T1)
    B_add = fd.ops.add(T0, 2.0)
    B_sub = fd.ops.sub(T0, 2.0)
    B_mul = fd.ops.mul(T0, 2.0)
    B_div = fd.ops.div(T0, 2.0)
    B_pow = fd.ops.pow(T0, 2.0)
    B_fmod = fd.ops.fmod(T0, 2.0)
    B_remainder = fd.ops.remainder(T0, 2.0)
    B_maximum = fd.ops.maximum(T0, 2.0)
    B_minimum = fd.ops.minimum(T0, 2.0)
    B_atan2 = fd.ops.atan2(T0, 2.0)
    B_eq = fd.ops.eq(T0, 2.0)
    B_ne = fd.ops.ne(T0, 2.0)
    B_lt = fd.ops.lt(T0, 2.0)
    B_le = fd.ops.le(T0, 2.0)
    B_gt = fd.ops.gt(T0, 2.0)
    B_ge = fd.ops.ge(T0, 2.0)
    B_logical_and = fd.ops.logical_and(T0, 2.0)
    B_logical_or = fd.ops.logical_or(T0, 2.0)
    B_bitwise_and = fd.ops.bitwise_and(T1, S2)
    B_bitwise_or = fd.ops.bitwise_or(T1, S2)
    B_bitwise_xor = fd.ops.bitwise_xor(T1, S2)
    U_acosh = fd.ops.acosh(T0)
    U_asinh = fd.ops.asinh(T0)
    U_atanh = fd.ops.atanh(T0)
    U_lgamma = fd.ops.lgamma(T0)
    U_erfinv = fd.ops.erfinv(T0)
    U_erfcinv = fd.ops.erfcinv(T0)
    U_frac = fd.ops.frac(T0)
    U_signbit = fd.ops.signbit(T0)
    U_isneginf = fd.ops.isneginf(T0)
    U_isposinf = fd.ops.isposinf(T0)
    U_isreal = fd.ops.isreal(T0)
    B_lshift = fd.ops.bitwise_left_shift(T1, S2)
    B_rshift = fd.ops.bitwise_right_shift(T1, S2)
    B_lrshift = fd.ops.logical_right_shift(T1, S2)
    B_nextafter = fd.ops.nextafter(T0, 2.0)
    B_gcd = fd.ops.gcd(T1, S2)
    B_mod = fd.ops.mod(T0, 2.0)
    B_truediv = fd.ops.truediv(T1, T1)
    X_addcmul = fd.ops.addcmul(T0, T0, U_exp, 0.5)
    X_threshold = fd.ops.threshold(T0, 0.0, -1.0)
    X_segment_set = fd.ops.segment_set(T0)
    X_real = fd.ops.real(T0)
    C0 = fd.ops.cast(T1, dtype=DataType.Half)
    W0 = fd.ops.where(B_gt, T0, 0.0)
    W1 = fd.ops.clamp(T0, -1.0, 1.0)
    W2 = fd.ops.lerp(T0, U_exp, 0.5)
    R_sum = fd.ops.sum(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    R_prod = fd.ops.prod(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    R_max = fd.ops.max(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    R_min = fd.ops.min(T0, dims=[1], keepdim=False, dtype=DataType.Null)
    V0 = fd.ops.var(T0, dims=[0, 1], correction=1, keepdim=True)
    V1, V2 = fd.ops.var_mean(T0, dims=[1], correction=0)
    M0 = fd.ops.broadcast_in_dim(R_sum, shape=[-1, 1], broadcast_dims=[0])
    M1 = fd.ops.broadcast(R_sum, is_broadcast_dim=[False, True])
    M2 = fd.ops.expand(M1, shape=[-1, 8])
    M3 = fd.ops.reshape(T0, new_shape=[-1, 2, 4])
    M4 = fd.ops.permute(M3, dims=[2, 0, 1])
    M5 = fd.ops.squeeze(M1, dims=[1])
    M6 = fd.ops.slice(T0, start_indices=[0, 2], end_indices=[1, 6], strides=[1, 1])
    M7 = fd.ops.cat([T0, U_abs], dim=1)
    M8 = fd.ops.pad(T0, pad_widths=[1, 1], value=0.0)
    F0 = fd.ops.full(shape=[2, 3], fill_value=S2, dtype=DataType.Int)
    F1 = fd.ops.iota(5, 0, 1, dtype=DataType.Int)
    R0 = fd.ops.uniform(S2, 1.0, shape=[2, 3], rng_seed=S2, rng_offset=S2, dtype=DataType.BFloat16)
    R1 = fd.ops.normal(0.0, 2.0, shape=[4], rng_seed=S2, rng_offset=S2, dtype=DataType.Double)
    fd.add_output(W2)

# CHECK-LABEL: fusion @all_ops {
# CHECK: %U_abs = abs %T0 : f32[i0, 8]
# CHECK: %U_neg = neg %T0 : f32[i0, 8]
# CHECK: %U_exp = exp %T0 : f32[i0, 8]
# CHECK: %U_exp2 = exp2 %T0 : f32[i0, 8]
# CHECK: %U_expm1 = expm1 %T0 : f32[i0, 8]
# CHECK: %U_log = log %T0 : f32[i0, 8]
# CHECK: %U_log2 = log2 %T0 : f32[i0, 8]
# CHECK: %U_log10 = log10 %T0 : f32[i0, 8]
# CHECK: %U_log1p = log1p %T0 : f32[i0, 8]
# CHECK: %U_sqrt = sqrt %T0 : f32[i0, 8]
# CHECK: %U_rsqrt = rsqrt %T0 : f32[i0, 8]
# CHECK: %U_reciprocal = reciprocal %T0 : f32[i0, 8]
# CHECK: %U_sin = sin %T0 : f32[i0, 8]
# CHECK: %U_cos = cos %T0 : f32[i0, 8]
# CHECK: %U_tan = tan %T0 : f32[i0, 8]
# CHECK: %U_tanh = tanh %T0 : f32[i0, 8]
# CHECK: %U_sinh = sinh %T0 : f32[i0, 8]
# CHECK: %U_cosh = cosh %T0 : f32[i0, 8]
# CHECK: %U_asin = asin %T0 : f32[i0, 8]
# CHECK: %U_acos = acos %T0 : f32[i0, 8]
# CHECK: %U_atan = atan %T0 : f32[i0, 8]
# CHECK: %U_erf = erf %T0 : f32[i0, 8]
# CHECK: %U_erfc = erfc %T0 : f32[i0, 8]
# CHECK: %U_sigmoid = sigmoid %T0 : f32[i0, 8]
# CHECK: %U_silu = silu %T0 : f32[i0, 8]
# CHECK: %U_relu = relu %T0 : f32[i0, 8]
# CHECK: %U_floor = floor %T0 : f32[i0, 8]
# CHECK: %U_ceil = ceil %T0 : f32[i0, 8]
# CHECK: %U_round = round %T0 : f32[i0, 8]
# CHECK: %U_trunc = trunc %T0 : f32[i0, 8]
# CHECK: %U_sign = sign %T0 : f32[i0, 8]
# CHECK: %U_logical_not = logical_not %T0 : bool[i0, 8]
# CHECK: %U_isnan = isnan %T0 : bool[i0, 8]
# CHECK: %U_isinf = isinf %T0 : bool[i0, 8]
# CHECK: %U_isfinite = isfinite %T0 : bool[i0, 8]
# CHECK: %U_set = set %T0 : f32[i0, 8]
# CHECK: %U_bitwise_not = bitwise_not %T1 : i32[i1, 8]
# CHECK: %B_add = add %T0, 2.0 : f32[i0, 8]
# CHECK: %B_sub = sub %T0, 2.0 : f32[i0, 8]
# CHECK: %B_mul = mul %T0, 2.0 : f32[i0, 8]
# CHECK: %B_div = div %T0, 2.0 : f32[i0, 8]
# CHECK: %B_pow = pow %T0, 2.0 : f32[i0, 8]
# CHECK: %B_fmod = fmod %T0, 2.0 : f32[i0, 8]
# CHECK: %B_remainder = remainder %T0, 2.0 : f32[i0, 8]
# CHECK: %B_maximum = maximum %T0, 2.0 : f32[i0, 8]
# CHECK: %B_minimum = minimum %T0, 2.0 : f32[i0, 8]
# CHECK: %B_atan2 = atan2 %T0, 2.0 : f32[i0, 8]
# CHECK: %B_eq = eq %T0, 2.0 : bool[i0, 8]
# CHECK: %B_ne = ne %T0, 2.0 : bool[i0, 8]
# CHECK: %B_lt = lt %T0, 2.0 : bool[i0, 8]
# CHECK: %B_le = le %T0, 2.0 : bool[i0, 8]
# CHECK: %B_gt = gt %T0, 2.0 : bool[i0, 8]
# CHECK: %B_ge = ge %T0, 2.0 : bool[i0, 8]
# CHECK: %B_logical_and = logical_and %T0, 2.0 : bool[i0, 8]
# CHECK: %B_logical_or = logical_or %T0, 2.0 : bool[i0, 8]
# CHECK: %B_bitwise_and = bitwise_and %T1, %S2 : i32[i1, 8]
# CHECK: %B_bitwise_or = bitwise_or %T1, %S2 : i32[i1, 8]
# CHECK: %B_bitwise_xor = bitwise_xor %T1, %S2 : i32[i1, 8]
# CHECK: %U_acosh = acosh %T0 : f32[i0, 8]
# CHECK: %U_asinh = asinh %T0 : f32[i0, 8]
# CHECK: %U_atanh = atanh %T0 : f32[i0, 8]
# CHECK: %U_lgamma = lgamma %T0 : f32[i0, 8]
# CHECK: %U_erfinv = erfinv %T0 : f32[i0, 8]
# CHECK: %U_erfcinv = erfcinv %T0 : f32[i0, 8]
# CHECK: %U_frac = frac %T0 : f32[i0, 8]
# CHECK: %U_signbit = signbit %T0 : bool[i0, 8]
# CHECK: %U_isneginf = isneginf %T0 : bool[i0, 8]
# CHECK: %U_isposinf = isposinf %T0 : bool[i0, 8]
# CHECK: %U_isreal = isreal %T0 : bool[i0, 8]
# CHECK: %B_lshift = bitwise_left_shift %T1, %S2 : i32[i1, 8]
# CHECK: %B_rshift = bitwise_right_shift %T1, %S2 : i32[i1, 8]
# CHECK: %B_lrshift = logical_right_shift %T1, %S2 : i32[i1, 8]
# CHECK: %B_nextafter = nextafter %T0, 2.0 : f32[i0, 8]
# CHECK: %B_gcd = gcd %T1, %S2 : i32[i1, 8]
# CHECK: %B_mod = fmod %T0, 2.0 : f32[i0, 8]
# CHECK: %[[A:.*]] = cast %T1 : f32[i1, 8]
# CHECK: %[[B:.*]] = cast %T1 : f32[i1, 8]
# CHECK: %B_truediv = div %[[A]], %[[B]] : f32[i1, 8]
# CHECK: %[[M1:.*]] = mul %T0, %U_exp : f32[i0, 8]
# CHECK: %[[M2:.*]] = mul 0.5, %[[M1]] : f32[i0, 8]
# CHECK: %X_addcmul = add %T0, %[[M2]] : f32[i0, 8]
# CHECK: %[[LE:.*]] = le %T0, 0.0 : bool[i0, 8]
# CHECK: %X_threshold = where %[[LE]], -1.0, %T0 : f32[i0, 8]
# CHECK: %X_segment_set = set %T0 : f32[i0, 8]
# CHECK: %X_real = set %T0 : f32[i0, 8]
# CHECK: %C0 = cast %T1 : f16[i1, 8]
# CHECK: %W0 = where %B_gt, %T0, 0.0 : f32[i0, 8]
# CHECK: %W1 = clamp %T0, -1.0, 1.0 : f32[i0, 8]
# CHECK: %W2 = lerp %T0, %U_exp, 0.5 : f32[i0, 8]
# CHECK: %R_sum = sum %T0 {axes=[1]} : f32[i0]
# CHECK: %R_prod = prod %T0 {axes=[1]} : f32[i0]
# CHECK: %R_max = max %T0 {axes=[1]} : f32[i0]
# CHECK: %R_min = min %T0 {axes=[1]} : f32[i0]
# CHECK: %V0 = var %T0 {axes=[0, 1], correction=1, keepdim=true} : f32[1, 1]
# CHECK: %V1, %V2 = var_mean %T0 {axes=[1], correction=0} : f32[i0], f32[i0]
# CHECK: %M0 = broadcast_in_dim %R_sum {broadcast_dims=[0]} : f32[i0, 1]
# CHECK: %M1 = broadcast %R_sum {is_broadcast_dim=[false, true]} : f32[i0, 1]
# CHECK: %M2 = expand %M1 : f32[i0, 8]
# CHECK: %M3 = reshape %T0 : f32[i0, 2, 4]
# CHECK: %M4 = permute %M3 {dims=[2, 0, 1]} : f32[4, i0, 2]
# CHECK: %M5 = squeeze %M1 {dims=[1]} : f32[i0]
# CHECK: %M6 = slice %T0 {starts=[0, 2], ends=[1, 6], steps=[1, 1]} : f32[1, 4]
# CHECK: %M7 = cat %T0, %U_abs {dim=1} : f32[i0, 16]
# CHECK: %M8 = pad %T0, 0.0 {widths=[1, 1]} : f32[i0, 10]
# CHECK: %F0 = full %S2 : i64[2, 3]
# CHECK: %F1 = iota 0, 1 : i64[5]
# CHECK: %R0 = uniform %S2, 1.0, %S2, %S2 : bf16[2, 3]
# CHECK: %R1 = normal 0.0, 2.0, %S2, %S2 : f64[4]
# CHECK: output %W2
