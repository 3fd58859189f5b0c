// Package mptcpgodebug holds only a test: that gatenet reads a GODEBUG
// setting compiled into the binary (a //go:debug directive, which applies
// to the whole test binary, hence a package of its own).
package mptcpgodebug
