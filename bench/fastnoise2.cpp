/*
 * fastnoise2.cpp - the C face of FastNoise2 for noise_bench.c (see
 * fastnoise2.h). Built only when the Makefile has FASTNOISE2.
 */
#include <cstdint>
#include <new>

#include <FastNoise/FastNoise.h>
#include <FastSIMD/Utility/FeatureEnums.h>

#include "fastnoise2.h"

struct fn2 {
	FastNoise::SmartNode<FastNoise::FractalFBm> fbm;
};

/* Whether a CPU whose best level is cpu runs level want (each level's
 * flags include those of the levels below it). */
static bool runs(FastSIMD::FeatureSet cpu, FastSIMD::FeatureSet want)
{
	auto c = static_cast<std::uint32_t>(cpu), w = static_cast<std::uint32_t>(want);

	return (c & w) == w;
}

struct fn2 *fn2_create(int capped, float wavelength)
{
	const FastSIMD::FeatureSet best = FastSIMD::DetectCpuMaxFeatureSet();
	FastSIMD::FeatureSet want = best;

	if (capped) {
		if (best == FastSIMD::FeatureSet::AVX2 || !runs(best, FastSIMD::FeatureSet::AVX2))
			return nullptr;
		want = FastSIMD::FeatureSet::AVX2;
	}
	auto perlin = FastNoise::New<FastNoise::Perlin>(want);
	auto fbm = FastNoise::New<FastNoise::FractalFBm>(want);

	if (!perlin || !fbm)
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
