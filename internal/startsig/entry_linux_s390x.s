#include "textflag.h"

// The kernel starts the process here with R15 (SP) at argc; nothing may move it or touch the
// stack. The syscall clobbers R2 only; the runtime's entry reads nothing but the stack.
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	MOVD	$1, R8			// signal number
	MOVD	$·acts+32(SB), R9	// &acts[1]
loop:
	MOVD	R8, R2			// signum
	MOVD	$0, R3			// act: NULL, so the call only reads
	MOVD	R9, R4			// oldact
	MOVD	$8, R5			// sigsetsize
	MOVW	$174, R1		// SYS_rt_sigaction
	SYSCALL
	ADD	$32, R9
	ADD	$1, R8
	CMP	R8, $65
	BNE	loop
	MOVD	$1, R2
	MOVW	R2, ·ran(SB)
	BR	_rt0_s390x_linux(SB)
