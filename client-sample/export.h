/*
 * export.h - terrain-client export: a rectangle of chunks at one LOD as
 * heightmaps that game engines and GIS import (docs/export.md).
 */
#ifndef EXPORT_H
#define EXPORT_H

/* The export command; argv[0] is "export". Returns the exit code. */
int export_main(int argc, char **argv);

#endif
