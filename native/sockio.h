/* sockio.h: a connection's send and recv, as system calls of their own.
 *
 * glibc's send() and recv() are cancellation points: in a multi-threaded
 * process each call switches the thread's cancel type on and off around the
 * system call (two atomic exchanges and two calls), 1.1% of benchtop's CPU
 * samples in a point select at 256 connections (perf, cpu-clock).  No engine
 * thread is ever cancelled, so the drivers make the system calls directly:
 * errors come back as from libc (-1 and errno), signals interrupt them the
 * same way.  syscall() is declared under _DEFAULT_SOURCE, which every build
 * of the engine defines.
 */
#ifndef BT_SOCKIO_H
#define BT_SOCKIO_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline ssize_t bt_send(int fd, const void *buf, size_t len, int flags)
{
    return (ssize_t)syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

static inline ssize_t bt_recv(int fd, void *buf, size_t len, int flags)
{
    return (ssize_t)syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

#endif
