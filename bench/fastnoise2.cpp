/*
 * fastnoise2.cpp - the C face of FastNoise2 for noise_bench.c (see
 * fastnoise2.h). Built only when the Makefile has FASTNOISE2.
 */
#include <new>

#include <FastNoise/FastNoise.h>
#include <FastSIMD/Utility/FeatureEnums.h>

#include "fastnoise2.h"

struct fn2 {
	FastNoise::SmartNode<FastNoise::FractalFBm> fbm;
};

struct fn2 *fn2_create(int avx512, float wavelength)
{
	FastSIMD::FeatureSet want = avx512 ? FastSIMD::FeatureSet::AVX512 : FastSIMD::FeatureSet::AVX2;
	auto perlin = FastNoise::New<FastNoise::Perlin>(want);
	auto fbm = FastNoise::New<FastNoise::FractalFBm>(want);

	if (!perlin || !fbm || fbm->GetActiveFeatureSet() != want)
		return nullptr;
	perlin->SetScale(wavelength);
	fbm->SetSource(perlin);
	fbm->SetOctaveCount(6);
	fbm->SetGain(0.5f);
	fbm->SetLacunarity(2.0f);
	return new (std::nothrow) fn2{ fbm };
}

void fn2_destroy(struct fn2 *f)
{
	delete f;
}

const char *fn2_level(const struct fn2 *f)
{
	return FastSIMD::GetFeatureSetString(f->fbm->GetActiveFeatureSet());
}

void fn2_tile(const struct fn2 *f, float *out, float x0, float z0, int side, int seed)
{
	f->fbm->GenUniformGrid2D(out, x0, z0, side, side, 1.0f, 1.0f, seed);
}
