/*
 * libnoise.cpp - the C face of libnoise's Perlin module for noise_bench.c
 * (see libnoise.h). Built only when the Makefile finds libnoise.
 */
#include <new>

#include <libnoise/noise.h>  /* not <noise.h>: -Icommon has one */

#include "libnoise.h"

struct libnoise {
	noise::module::Perlin perlin;
};

struct libnoise *libnoise_create(int best, double wavelength, int seed)
{
	struct libnoise *l = new (std::nothrow) libnoise;

	if (!l)
		return nullptr;
	l->perlin.SetOctaveCount(6);
	l->perlin.SetFrequency(1.0 / wavelength);
	l->perlin.SetPersistence(0.5);
	l->perlin.SetLacunarity(2.0);
	l->perlin.SetSeed(seed);
	if (best)
		l->perlin.SetNoiseQuality(noise::QUALITY_BEST);
	return l;
}

void libnoise_destroy(struct libnoise *l)
{
	delete l;
}

void libnoise_row(const struct libnoise *l, double *out, double x0, double z, int side)
{
	for (int i = 0; i < side; i++)
		out[i] = l->perlin.GetValue(x0 + i, 0.0, z);
}
