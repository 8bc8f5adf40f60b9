#include "textflag.h"

// The kernel starts the process here with R13 (SP) at argc; nothing may move it or touch the
// stack. SWI clobbers R0 only; the runtime's entry reads nothing but the stack. (SWI $0 is the
// EABI call, as the runtime's own; on an OABI kernel it raises SIGILL, where the runtime would.)
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	MOVW	$1, R8			// signal number
	MOVW	$·acts+32(SB), R9	// &acts[1]
loop:
	MOVW	R8, R0			// signum
	MOVW	$0, R1			// act: NULL, so the call only reads
	MOVW	R9, R2			// oldact
	MOVW	$8, R3			// sigsetsize
	MOVW	$174, R7		// SYS_rt_sigaction
	SWI	$0
	ADD	$32, R9
	ADD	$1, R8
	CMP	$65, R8
	BNE	loop
	MOVW	$1, R0
	MOVW	R0, ·ran(SB)
	B	_rt0_arm_linux(SB)
