/*
 * mb_file: opening the files muonbench reads, regular files only.
 */
#include "mb_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mb_err.h"

/* What a file of MODE is, for a message: "a FIFO", "a directory", ... */
static const char *kind_name(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "something else";
}

int mb_file_open_read(const char *path, const char *what, FILE **out)
{
	struct stat st;
	int fd, flags, err;

	*out = NULL;
	/* O_NONBLOCK: a FIFO opens at once, with or without a writer */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return mb_bad_input("cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		err = mb_bad_input("cannot read '%s': %s", path, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		err = mb_bad_input("'%s' is %s, not a regular file: not a %s", path,
				   kind_name(st.st_mode), what);
		goto out_close;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ||
	    !(*out = fdopen(fd, "rb"))) {
		err = mb_fail("cannot read '%s': %s", path, strerror(errno));
		goto out_close;
	}
	return 0;

out_close:
	close(fd);
	return err;
}
