/*
 * preset_fixture.c - the built-in presets of a suite (preset_fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "preset.h"
#include "preset_fixture.h"

struct preset **presets;
size_t n_presets;

int preset_fixture_setup(void **state)
{
	(void)state;
	return preset_load_builtin(&presets, &n_presets);
}

int preset_fixture_teardown(void **state)
{
	(void)state;
	preset_destroy_all(presets, n_presets);
	presets = NULL;
	n_presets = 0;
	return 0;
}

const struct preset *preset_fixture_find(const char *name)
{
	size_t i;

	for (i = 0; i < n_presets; i++)
		if (!strcmp(preset_name(presets[i]), name))
			return presets[i];
	fail_msg("no preset %s", name);
	return NULL;
}
