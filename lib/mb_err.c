/*
 * mb_err: the one-line error message of the last failure, and its kind, per
 * thread.
 */
#include "mb_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char errbuf[8192]; /* room for a build log */
static _Thread_local enum mb_err_kind errkind;

static void record(enum mb_err_kind kind, const char *fmt, va_list ap)
{
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	errkind = kind;
}

int mb_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(MB_KIND_OTHER, fmt, ap);
	va_end(ap);
	return -MB_EFAIL;
}

int mb_fail_kind(enum mb_err_kind kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(kind, fmt, ap);
	va_end(ap);
	return -MB_EFAIL;
}

int mb_bad_input(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(MB_KIND_OTHER, fmt, ap);
	va_end(ap);
	return -MB_EINPUT;
}

int mb_bad_input_kind(enum mb_err_kind kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(kind, fmt, ap);
	va_end(ap);
	return -MB_EINPUT;
}

const char *mb_errmsg(void)
{
	return errbuf;
}

enum mb_err_kind mb_err_kind(void)
{
	return errkind;
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
