#include "textflag.h"

// The kernel starts the process here with RSP at argc; nothing may move RSP or touch the stack.
// SVC clobbers R0 only; the runtime's entry reads nothing but the stack.
TEXT ·entry(SB),NOSPLIT|NOFRAME,$0
	MOVD	$1, R19			// signal number
	MOVD	$·acts+32(SB), R20	// &acts[1]
loop:
	MOVD	R19, R0			// signum
	MOVD	$0, R1			// act: NULL, so the call only reads
	MOVD	R20, R2			// oldact
	MOVD	$8, R3			// sigsetsize
	MOVD	$134, R8		// SYS_rt_sigaction
	SVC
	ADD	$32, R20
	ADD	$1, R19
	CMP	$65, R19
	BNE	loop
	MOVD	$1, R0
	MOVW	R0, ·ran(SB)
	JMP	_rt0_arm64_linux(SB)
