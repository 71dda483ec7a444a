/*
 * swarm.h - terrain-client swarm: many simulated players at once, the
 * realistic load test of a terrain server.
 */
#ifndef SWARM_H
#define SWARM_H

/* The swarm command; argv[0] is "swarm". Returns the exit code. */
int swarm_main(int argc, char **argv);

#endif
