/*
 * walk.h - terrain-client walk: a player moving along a path, keeping the
 * terrain around it loaded and fresh, with per-step latency and bytes.
 */
#ifndef WALK_H
#define WALK_H

/* The walk command; argv[0] is "walk". Returns the exit code. */
int walk_main(int argc, char **argv);

#endif
