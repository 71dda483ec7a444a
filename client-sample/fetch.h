/*
 * fetch.h - terrain-client fetch: load the terrain around one position,
 * verify it, and draw it as one stitched, hillshaded PNG.
 */
#ifndef FETCH_H
#define FETCH_H

/* The fetch command; argv[0] is "fetch". Returns the exit code. */
int fetch_main(int argc, char **argv);

#endif
