// Package poll is gatenet's descriptor layer, as internal/poll is net's
// and os's: FD, a descriptor number with its reference count and
// read/write locks (fd_mutex.go) and its pollfd registration, and the I/O
// loops on it — lock → Prepare → system call → EAGAIN → Wait → retry —
// for read and write (fd.go), datagrams and messages (fd_msg.go),
// writev (fd_vec.go), splice and sendfile (fd_splice.go,
// fd_sendfile.go), RawConn's hooks (fd_raw.go) and readiness waits
// (fd_wait.go), with pollfd's errors mapped to net's and os's sentinels
// (errors.go).
//
// The root package builds every conn, listener and File on an FD: a socket
// holds one in place at the start of its netFD (InitSocket), a File one of
// its own (NewFile). Errors are the bare sentinels and errnos; shaping
// them as *net.OpError or *fs.PathError is the root package's job.
//
// It is Linux-only, as pollfd is; off Linux gatenet delegates to net and
// os and this package is empty.
package poll
