/*
 * editcmd.h - terrain-client edit: post one brush edit (editcmd.c).
 */
#ifndef EDITCMD_H
#define EDITCMD_H

/* argv[0] is "edit". Returns 0, 1 (refused, server down) or 2 (usage). */
int editcmd_main(int argc, char **argv);

#endif
