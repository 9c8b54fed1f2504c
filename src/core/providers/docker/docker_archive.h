/* What DockerSandbox's files read and write on the Engine API's archive
 * endpoints (docs/protocols/docker.md §9), apart from the requests
 * themselves (docker_fs.c): the X-Docker-Container-Path-Stat header of a
 * HEAD or GET, the tar of one entry a GET answers (read with libarchive,
 * bounded against a hostile daemon), and the tar of one new file a PUT
 * sends (written with libarchive). No I/O: the fuzzer
 * (spec/fuzz/fuzz_docker_archive.c) drives these directly. */
#ifndef SK_DOCKER_ARCHIVE_H
#define SK_DOCKER_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../../buf.h"

/* A GET body may exceed the file's bytes by this much (the tar's headers,
 * a long name's pax record, padding, the end blocks); past it the stream
 * is cut (a daemon sending more than it says is not held). */
#define DK_AR_TAR_SLACK ((size_t)1 << 20)

/* What the X-Docker-Container-Path-Stat header says (base64 of
 * {"name","size","mode","mtime","linkTarget"}; mode is Go's FileMode). */
typedef struct dk_path_stat {
    char type;        /* 'f', 'd', 'l' (symlink), 'o' (FIFO, socket, device ...) */
    int64_t size;
    int64_t mtime_ms; /* 0 when absent or unreadable */
} dk_path_stat;

/* 0, or -1 when the header is not base64 of such a JSON object. */
int sk_dk_path_stat_parse(const char *b64, size_t len, dk_path_stat *out);

enum { DK_TAR_OK = 0, DK_TAR_TOO_LARGE, DK_TAR_NOT_REGULAR, DK_TAR_BAD };

/* Reads the first entry of the tar in tar[0..len): a regular file of at
 * most max_bytes bytes (checked from its header, before its data), whose
 * bytes go to sink in pieces. DK_TAR_BAD with why (a short message in
 * why[0..why_size)) for a malformed or truncated archive; sink returning
 * non-zero stops it (DK_TAR_BAD, "stopped"). */
int sk_dk_tar_read_file(const void *tar, size_t len, size_t max_bytes,
                        int (*sink)(void *ud, const char *data, size_t len), void *ud, char *why,
                        size_t why_size);

/* Appends to out a tar of one regular file name (bytes as given) holding
 * data[0..len), with mode and mtime. 0, or -1 with why (static). */
int sk_dk_tar_write_file(sk_buf *out, const char *name, const char *data, size_t len, unsigned mode, time_t mtime,
                         const char **why);

#endif
