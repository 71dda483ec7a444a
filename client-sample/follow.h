/*
 * follow.h - terrain-client follow: keep up with a world's edits and check
 * them (follow.c).
 */
#ifndef FOLLOW_H
#define FOLLOW_H

/* argv[0] is "follow". Returns 0 (duration reached, SIGINT or SIGTERM),
 * 1 (a mismatch, a corrupt tile, the server gone) or 2 (usage). */
int follow_main(int argc, char **argv);

#endif
