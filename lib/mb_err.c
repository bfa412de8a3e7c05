/*
 * mb_err: the one-line error message of the last failure, per thread.
 */
#include "mb_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char errbuf[8192]; /* room for a build log */

static void record(const char *fmt, va_list ap)
{
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
}

int mb_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(fmt, ap);
	va_end(ap);
	return -MB_EFAIL;
}

int mb_bad_input(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(fmt, ap);
	va_end(ap);
	return -MB_EINPUT;
}

const char *mb_errmsg(void)
{
	return errbuf;
}

void mb_err_prefix(const char *fmt, ...)
{
	char prefix[sizeof(errbuf) / 2];
	size_t len = strlen(errbuf), shift;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	shift = strlen(prefix) + 2;
	if (shift + len >= sizeof(errbuf))
		len = sizeof(errbuf) - 1 - shift;
	memmove(errbuf + shift, errbuf, len);
	errbuf[shift + len] = '\0';
	memcpy(errbuf, prefix, shift - 2);
	memcpy(errbuf + shift - 2, ": ", 2);
}
