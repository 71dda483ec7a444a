/*
 * libnoise_bench.cpp - section 1 anchor: libnoise's Perlin module.
 *
 * noise::module::Perlin with 6 octaves, frequency 1/1024 per metre,
 * persistence 0.5, lacunarity 2, evaluated point by point over a LOD-0 tile
 * (257 x 257 samples at 1 m, y = 0) cycling over bench_chunk()'s chunks;
 * once at the default quality (cubic s-curve) and once at QUALITY_BEST
 * (quintic, like improved Perlin). libnoise's Perlin is 3D noise in double.
 *
 * Output: "name<TAB>ns per sample" rows without a header (bench.h); run.sh
 * appends them to section 1's table.
 */
#include <cstdio>
#include <vector>

#include <libnoise/noise.h>  /* not <noise.h>: -Icommon has one */

#include "bench.h"

namespace {

const int side = 257;

struct job {
	noise::module::Perlin perlin;
	std::vector<double> out;
	unsigned tile;
};

void tile_libnoise(void *arg)
{
	job *j = static_cast<job *>(arg);
	int32_t cx, cz;

	bench_chunk(j->tile++, &cx, &cz);
	double x0 = (double)cx * 256.0, z0 = (double)cz * 256.0;
	for (int r = 0; r < side; r++)
		for (int i = 0; i < side; i++)
			j->out[i] = j->perlin.GetValue(x0 + i, 0.0, z0 + r);
	bench_keep(j->out[side / 2]);
}

void report(const char *name, job *j)
{
	double t = bench_time(tile_libnoise, j);

	std::printf("%s\t%.2f\n", name, t * 1e9 / (side * side));
	std::fflush(stdout);
}

} // namespace

int main()
{
	job j;

	j.out.resize(side);
	j.tile = 0;
	j.perlin.SetOctaveCount(6);
	j.perlin.SetFrequency(1.0 / 1024.0);
	j.perlin.SetPersistence(0.5);
	j.perlin.SetLacunarity(2.0);
	j.perlin.SetSeed(42);
	report("anchor: libnoise Perlin (default quality)", &j);
	j.perlin.SetNoiseQuality(noise::QUALITY_BEST);
	report("anchor: libnoise Perlin (QUALITY_BEST)", &j);
	return 0;
}
