// Package gatenet is a drop-in replacement for the parts of package net and
// os that carry bytes over descriptors — TCP and Unix sockets, pipes, FIFOs,
// ttys — driven by gatenet's own epoll readiness poller (package pollfd)
// instead of the Go runtime's netpoller.
//
// The types satisfy the standard interfaces and behave as the standard
// library's do: the same errors (net.ErrClosed, os.ErrDeadlineExceeded,
// *net.OpError and *fs.PathError shapes, bare io.EOF), the same deadline
// semantics, the same close-unblocks-everything. Pipe, NewFile and
// OpenFile return a *gatenet.File: its own type, with *os.File's methods
// but the directory ones (Chdir, ReadDir, Readdir, Readdirnames), whose
// reads and writes honour deadlines and are unblocked by Close for any
// descriptor epoll accepts. It is not an *os.File and cannot go where one
// is required (exec.Cmd's ExtraFiles, FileConn): pass an io.Reader or
// io.Writer, or the descriptor (Fd).
//
// Listen, Dial and Accept return net.Listener and net.Conn, as net's do.
// The methods gatenet adds are reached by a type assertion:
// c.(gatenet.ContextIO) for ReadContext, WriteContext, WaitRead and
// WaitWrite, c.(gatenet.Pollable) for ReadyQueue.Add and InjectFaults,
// or the concrete type (c.(*gatenet.TCPConn)).
//
// The data path of every read (writes, accepts and connects are alike):
//
//	Read(p) → read lock (one reader at a time) → Prepare(read)
//	        → read(2) → data?  return it
//	                  → EAGAIN → Wait(read): park on the read gate
//	                        ↑ drain loop: epoll_wait → token → desc → ready, wake
//	                        ↑ deadline timer → expired, wake
//	                        ↑ Close → Unblock: closing, wake
//	                  → retry read(2)
//
// In a testing/synctest bubble, a read, write or accept between two
// descriptors gatenet made in the bubble parks durably, so the bubble's
// fake clock moves while it waits and deadlines and timeouts of seconds
// take microseconds (Example_synctest); what waits on the real clock
// instead is said on each type (TCPConn, UDPConn, File, ReadyQueue).
//
// gatenet is Linux-only in substance. On other systems the package compiles
// and delegates to the standard library (File wraps *os.File), so code
// using it builds everywhere.
package gatenet
