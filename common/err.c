/*
 * err.c - names for the ERR_* codes of err.h.
 */
#include "err.h"

const char *err_str(int code)
{
	switch (code) {
	case ERR_OK:
		return "ok";
#define XX(name, value, text) case ERR_##name: return text;
	ERR_MAP(XX)
#undef XX
	}
	return "unknown error";
}
