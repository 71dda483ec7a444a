/*
 * preset_fixture.h - the built-in presets for a cmocka suite: loaded once
 * by its group setup, freed by its group teardown, found by name.
 *
 *	return cmocka_run_group_tests(tests, preset_fixture_setup,
 *				      preset_fixture_teardown);
 *	const struct preset *p = preset_fixture_find("alpine");
 */
#ifndef TESTS_PRESET_FIXTURE_H
#define TESTS_PRESET_FIXTURE_H

#include <stddef.h>

struct preset;

/* The built-in presets, once preset_fixture_setup has run. */
extern struct preset **presets;
extern size_t n_presets;

/* cmocka group setup and teardown: load the built-in presets; free them. */
int preset_fixture_setup(void **state);
int preset_fixture_teardown(void **state);

/* The preset called name; fails the test without one. */
const struct preset *preset_fixture_find(const char *name);

#endif
