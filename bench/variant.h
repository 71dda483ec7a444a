/*
 * variant.h - force-included (-include) when the Makefile compiles
 * common/noise.c, common/fbm.c, common/tilecode.c, tilecode_enc.c and
 * tilecode_dec.c once more for one instruction set (-DVARIANT=v3 with
 * -mavx2 -mfma, and so on, under -DTERRAIN_NO_CLONES): every external name
 * of noise.h, fbm.h, tilecode.h and tilecode_int.h gets the suffix
 * _VARIANT, so the copies link beside libcommon.a and noise_bench.c and
 * tests/unit/test_clones.c run each clone's code in one process.
 */
#ifndef VARIANT_H
#define VARIANT_H

#define VARIANT_CAT2(a, b) a##_##b
#define VARIANT_CAT(a, b) VARIANT_CAT2(a, b)
#define VARIANT_NAME(f) VARIANT_CAT(f, VARIANT)

#define fbm_init VARIANT_NAME(fbm_init)
#define fbm_mix64 VARIANT_NAME(fbm_mix64)
#define fbm_params_check VARIANT_NAME(fbm_params_check)
#define fbm_row VARIANT_NAME(fbm_row)
#define fbm_row_d VARIANT_NAME(fbm_row_d)
#define fbm_scratch_init VARIANT_NAME(fbm_scratch_init)
#define fbm_scratch_release VARIANT_NAME(fbm_scratch_release)
#define noise_kind_name VARIANT_NAME(noise_kind_name)
#define noise_kind_parse VARIANT_NAME(noise_kind_parse)
#define noise_perlin VARIANT_NAME(noise_perlin)
#define noise_perlin_axis VARIANT_NAME(noise_perlin_axis)
#define noise_perlin_axis_bind VARIANT_NAME(noise_perlin_axis_bind)
#define noise_perlin_d VARIANT_NAME(noise_perlin_d)
#define noise_perlin_row_axis VARIANT_NAME(noise_perlin_row_axis)
#define noise_perlin_add_axis VARIANT_NAME(noise_perlin_add_axis)
#define noise_perlin_row_d VARIANT_NAME(noise_perlin_row_d)
#define noise_row VARIANT_NAME(noise_row)
#define noise_simplex VARIANT_NAME(noise_simplex)
#define noise_value VARIANT_NAME(noise_value)
#define noise_worley VARIANT_NAME(noise_worley)
#define tilecode_bound VARIANT_NAME(tilecode_bound)
#define tilecode_decode VARIANT_NAME(tilecode_decode)
#define tilecode_encode VARIANT_NAME(tilecode_encode)
#define tilecode_scratch_size VARIANT_NAME(tilecode_scratch_size)
#define tilecode__causal_row VARIANT_NAME(tilecode__causal_row)
#define tilecode__choose VARIANT_NAME(tilecode__choose)
#define tilecode__hier_line VARIANT_NAME(tilecode__hier_line)
#define tilecode__hline_init VARIANT_NAME(tilecode__hline_init)
#define tilecode__normalize VARIANT_NAME(tilecode__normalize)

#endif
