//go:build linux && race

#include "textflag.h"

// func casNoRace(p *uintptr, old, new uintptr) bool
TEXT ·casNoRace(SB), NOSPLIT, $0-25
	MOVQ	p+0(FP), BX
	MOVQ	old+8(FP), AX
	MOVQ	new+16(FP), CX
	LOCK
	CMPXCHGQ	CX, 0(BX)
	SETEQ	ret+24(FP)
	RET
