/*
 * mb_file: opening the files muonbench reads.
 *
 * Every input a user names (a model config, a DeepSpeed config, a device
 * profile, a CLBlast tuning, a results file, a predict sweep) is opened here,
 * so that one rule holds for all of them: only a regular file is read. A FIFO,
 * a device, a socket or a directory is refused at once and by name: opening a
 * FIFO for reading would wait for a writer that may never come, and a device
 * may never end.
 */
#ifndef MB_FILE_H
#define MB_FILE_H

#include <stdio.h>

/*
 * Open PATH for reading into *out, a stream the caller closes with fclose.
 * WHAT names what PATH should hold ("model config"), for the message.
 * Never blocks in the open: PATH is opened without waiting, then refused
 * unless it is a regular file (the check is on what was opened, so nothing
 * can swap the file between the two). Returns 0, or -MB_EINPUT when PATH
 * cannot be opened ("cannot open 'PATH': REASON") or is not a regular file
 * ("'PATH' is a FIFO, not a regular file: not a WHAT"), with *out NULL.
 */
int mb_file_open_read(const char *path, const char *what, FILE **out);

#endif
